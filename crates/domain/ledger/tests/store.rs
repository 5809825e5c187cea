//! The `LedgerStore` port: a JSON-lines fake that keeps the contract, used through both the
//! generic trait and the object-safe twin; ports are `Send + Sync` and dyn-usable.

mod common;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use common::run_id;
use rein_ledger::{
    DynLedgerStore, Entry, EntryKind, Ledger, LedgerStore, LedgerStoreError, LoadedLedger, Problem,
    TornTail,
};
use rein_run::{RunId, State, Timestamp};

/// A ledger store holding one JSON-lines "file" per run in memory.
#[derive(Debug, Default)]
struct LinesStore {
    files: Mutex<BTreeMap<RunId, Vec<u8>>>,
    syncs: Mutex<u32>,
}

impl LinesStore {
    fn file(&self, run_id: &RunId) -> Vec<u8> {
        self.files
            .lock()
            .unwrap()
            .get(run_id)
            .cloned()
            .unwrap_or_default()
    }

    fn set_file(&self, run_id: &RunId, bytes: Vec<u8>) {
        self.files.lock().unwrap().insert(run_id.clone(), bytes);
    }
}

impl LedgerStore for LinesStore {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        let mut files = self.files.lock().unwrap();
        entry.write_json_line(files.entry(entry.run_id().clone()).or_default());
        Ok(())
    }

    async fn sync(&self, _run_id: &RunId) -> Result<(), LedgerStoreError> {
        *self.syncs.lock().unwrap() += 1;
        Ok(())
    }

    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        let mut files = self.files.lock().unwrap();
        let file = files
            .get_mut(run_id)
            .ok_or_else(|| LedgerStoreError::NotFound {
                run_id: run_id.clone(),
            })?;
        let mut entries = Vec::new();
        let mut torn_tail = None;
        let mut start = 0;
        let mut line = 0u64;
        while start < file.len() {
            line += 1;
            let end = file[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|i| start + i);
            let text = &file[start..end.unwrap_or(file.len())];
            match (serde_json::from_slice::<Entry>(text), end) {
                (Ok(entry), Some(end)) => {
                    entries.push(entry);
                    start = end + 1;
                }
                // No newline: the last write was torn. Cut it and say so.
                (_, None) => {
                    torn_tail = Some(TornTail {
                        line,
                        bytes: (file.len() - start) as u64,
                    });
                    file.truncate(start);
                    break;
                }
                (Err(e), Some(_)) => {
                    return Err(LedgerStoreError::Corrupt {
                        location: format!("memory:{run_id}"),
                        line,
                        reason: e.to_string(),
                    });
                }
            }
        }
        let ledger = Ledger::from_entries(run_id.clone(), entries).map_err(|source| {
            LedgerStoreError::Broken {
                run_id: run_id.clone(),
                source,
            }
        })?;
        Ok(LoadedLedger { ledger, torn_tail })
    }

    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        Ok(self.files.lock().unwrap().keys().cloned().collect())
    }
}

/// Runs a future that never waits (the fake store's) to completion.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

fn record(store: &dyn DynLedgerStore, ledger: &mut Ledger, notes: &[&str]) {
    for note in notes {
        let entry = ledger.append(
            Timestamp::EPOCH,
            State::Explore,
            EntryKind::Steering {
                note: (*note).into(),
            },
        );
        block_on(store.append_boxed(entry)).unwrap();
    }
    block_on(store.sync_boxed(ledger.run_id())).unwrap();
}

#[test]
fn ports_are_send_sync_and_dyn_usable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Ledger>();
    assert_send_sync::<Entry>();
    assert_send_sync::<LedgerStoreError>();
    assert_send_sync::<Arc<dyn DynLedgerStore>>();
    let _: Arc<dyn DynLedgerStore> = Arc::new(LinesStore::default());
}

#[test]
fn appended_entries_load_back_verified() {
    let store = LinesStore::default();
    let mut ledger = Ledger::new(run_id());
    record(&store, &mut ledger, &["a", "b", "c"]);
    assert_eq!(*store.syncs.lock().unwrap(), 1);
    let loaded = block_on(store.load(&run_id())).unwrap();
    assert_eq!(
        loaded,
        LoadedLedger {
            ledger,
            torn_tail: None
        }
    );
    assert_eq!(block_on(store.list_boxed()).unwrap(), vec![run_id()]);
}

#[test]
fn a_torn_final_line_is_cut_and_reported() {
    let store = LinesStore::default();
    let mut ledger = Ledger::new(run_id());
    record(&store, &mut ledger, &["a", "b"]);
    let mut file = store.file(&run_id());
    let whole = file.len();
    file.extend_from_slice(br#"{"seq":3,"at":0,"run_"#);
    store.set_file(&run_id(), file);

    let loaded = block_on(store.load_boxed(&run_id())).unwrap();
    assert_eq!(loaded.torn_tail, Some(TornTail { line: 3, bytes: 21 }));
    assert_eq!(loaded.ledger, ledger);
    assert_eq!(
        store.file(&run_id()).len(),
        whole,
        "only the torn line is cut"
    );
    assert_eq!(block_on(store.load(&run_id())).unwrap().torn_tail, None);
}

#[test]
fn errors_name_the_run_the_line_and_the_broken_entry() {
    let store = LinesStore::default();
    let missing: RunId = "missing".parse().unwrap();
    let err = block_on(store.load(&missing)).unwrap_err();
    assert!(matches!(&err, LedgerStoreError::NotFound { run_id } if *run_id == missing));
    assert_eq!(
        err.to_string(),
        "no ledger for run missing; list the ledgers to see which exist"
    );

    let mut ledger = Ledger::new(run_id());
    record(&store, &mut ledger, &["a", "b", "c"]);
    let file = String::from_utf8(store.file(&run_id())).unwrap();

    store.set_file(
        &run_id(),
        file.replacen("\"note\":\"b\"", "\"note\":\"B\"", 1)
            .into_bytes(),
    );
    let err = block_on(store.load(&run_id())).unwrap_err();
    let LedgerStoreError::Broken { run_id: id, source } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (id, source.seq, &source.problem),
        (&run_id(), 2, &Problem::Edited)
    );
    assert_eq!(
        err.to_string(),
        "the ledger of run run-under-test fails verification and was not loaded: entry 2 was edited after it \
         was written: its hash does not match its content"
    );
    assert!(std::error::Error::source(&err).is_some());

    store.set_file(
        &run_id(),
        file.replacen("\"seq\":2", "\"seq\":\"two\"", 1)
            .into_bytes(),
    );
    let err = block_on(store.load(&run_id())).unwrap_err();
    assert!(
        matches!(&err, LedgerStoreError::Corrupt { line: 2, location, .. } if location == "memory:run-under-test"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("the ledger at memory:run-under-test is unreadable at line 2: "),
        "{err}"
    );
}

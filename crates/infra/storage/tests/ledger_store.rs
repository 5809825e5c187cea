//! The ledger stores: append, sync, load and verify; torn tails, corruption, concurrency.

mod contract;
mod support;

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::sync::Arc;

use rein_ledger::{
    DynLedgerStore, Entry, Ledger, LedgerStore, LedgerStoreError, Problem, TornTail, VerifyError,
};
use rein_storage::{FsConfig, FsStores, FsyncPolicy, MemoryLedgerStore};
use support::{POLICIES, fs_stores, id, ledger, push};

/// Both stores are shareable and usable behind the object-safe twin.
#[test]
fn stores_are_send_sync_and_dyn_usable() {
    fn shared(_: Arc<dyn DynLedgerStore>) {}
    let root = tempfile::tempdir().unwrap();
    shared(Arc::new(MemoryLedgerStore::new()));
    shared(Arc::new(
        fs_stores(root.path(), FsyncPolicy::EveryStep)
            .ledgers()
            .clone(),
    ));
}

/// Appends every entry of `ledger` with a step boundary after each, as the engine does.
async fn store<S: LedgerStore>(store: &S, ledger: &Ledger) {
    for entry in ledger.entries() {
        store.append(entry).await.unwrap();
        store.sync(ledger.run_id()).await.unwrap();
    }
}

#[tokio::test]
async fn memory_store_behaves() {
    contract::ledger_store(&MemoryLedgerStore::new()).await;
}

#[tokio::test]
async fn fs_store_behaves_under_every_policy() {
    for policy in POLICIES {
        let root = tempfile::tempdir().unwrap();
        contract::ledger_store(fs_stores(root.path(), policy).ledgers()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_runs_append_concurrently() {
    contract::ledger_store_concurrent(Arc::new(MemoryLedgerStore::new())).await;
    for policy in POLICIES {
        let root = tempfile::tempdir().unwrap();
        contract::ledger_store_concurrent(Arc::new(
            fs_stores(root.path(), policy).ledgers().clone(),
        ))
        .await;
    }
}

/// A reopened store (a new process over the same folder) continues the chain; a memory
/// store has nothing to reopen.
#[tokio::test]
async fn a_reopened_store_continues_the_chain_under_the_contract() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().to_owned();
    // Bound first: a temporary `FsStores` would hold the file open until the end of the
    // statement, and the reopened store would find it locked by a live writer.
    let first = fs_stores(root.path(), FsyncPolicy::EveryEntry)
        .ledgers()
        .clone();
    contract::ledger_store_reopened(first, move || {
        fs_stores(&path, FsyncPolicy::EveryEntry).ledgers().clone()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_runs_than_open_handles_still_verify() {
    let root = tempfile::tempdir().unwrap();
    let config = FsConfig::default().with_max_open_ledgers(4);
    let stores = FsStores::open_with(root.path(), config).unwrap();
    // Interleave 20 runs so handles are closed and reopened again and again.
    let mut ledgers: Vec<Ledger> = (0..20).map(|i| Ledger::new(id(&format!("r{i}")))).collect();
    for round in 1..=10 {
        for ledger in &mut ledgers {
            push(ledger, round);
            let entry = ledger.entries().last().unwrap();
            stores.ledgers().append(entry).await.unwrap();
            stores.ledgers().sync(ledger.run_id()).await.unwrap();
        }
    }
    for ledger in &ledgers {
        assert_eq!(
            stores.ledgers().load(ledger.run_id()).await.unwrap().ledger,
            *ledger
        );
    }
}

#[tokio::test]
async fn a_reopened_store_continues_the_chain() {
    let root = tempfile::tempdir().unwrap();
    let mut ledger = ledger("resumed", 5);
    store(
        fs_stores(root.path(), FsyncPolicy::EveryEntry).ledgers(),
        &ledger,
    )
    .await;

    // A new process: the first call is an append, which must find the stored tip.
    let reopened = fs_stores(root.path(), FsyncPolicy::EveryEntry);
    push(&mut ledger, 6);
    reopened
        .ledgers()
        .append(&ledger.entries()[5])
        .await
        .unwrap();
    let stale = &ledger.entries()[4];
    assert!(
        reopened.ledgers().append(stale).await.is_err(),
        "a stale writer is refused"
    );
    assert_eq!(
        reopened
            .ledgers()
            .load(ledger.run_id())
            .await
            .unwrap()
            .ledger,
        ledger
    );
}

/// A reader in another process (here: another store over the same folder) sees what the
/// writer appended since the reader's last load — never a stale prefix, which a reader
/// checking the ledger against a newer run snapshot would take for a cut ledger — and never
/// the line the writer is in the middle of.
#[tokio::test]
async fn a_reader_sees_what_another_process_appended_since_its_last_load() {
    let root = tempfile::tempdir().unwrap();
    let mut ledger = ledger("shared", 3);
    let writer = fs_stores(root.path(), FsyncPolicy::EveryEntry);
    store(writer.ledgers(), &ledger).await;
    let reader = fs_stores(root.path(), FsyncPolicy::EveryEntry);
    let first = reader.ledgers().load(ledger.run_id()).await.unwrap();
    assert_eq!(first.ledger, ledger);

    for i in 4..=6 {
        push(&mut ledger, i);
        writer
            .ledgers()
            .append(&ledger.entries()[(i - 1) as usize])
            .await
            .unwrap();
    }
    let second = reader.ledgers().load(ledger.run_id()).await.unwrap();
    assert_eq!(second.ledger, ledger, "the reader sees entries 4 to 6");

    // Half a line being written by the live writer: the reader leaves it alone.
    let path = writer.ledgers().dir().join("shared.jsonl");
    let before = fs::read(&path).unwrap();
    OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(br#"{"seq":7,"#)
        .unwrap();
    let third = reader.ledgers().load(ledger.run_id()).await.unwrap();
    assert_eq!(third.ledger, ledger);
    assert_eq!(third.torn_tail, None);
    assert_eq!(fs::read(&path).unwrap().len(), before.len() + 9, "not cut");
}

#[tokio::test]
async fn the_file_is_one_json_line_per_entry() {
    let root = tempfile::tempdir().unwrap();
    let stores = fs_stores(root.path(), FsyncPolicy::Relaxed);
    let ledger = ledger("lines", 3);
    store(stores.ledgers(), &ledger).await;
    let text = fs::read_to_string(stores.ledgers().ledger_path(ledger.run_id())).unwrap();
    let expected: String = ledger.entries().iter().map(Entry::to_json_line).collect();
    assert_eq!(text, expected);
    assert_eq!(support::file_names(stores.ledgers().dir()), ["lines.jsonl"]);
}

/// Writes `ledger` to a fresh root, lets `damage` edit the file's text, reopens the root
/// and loads: the outcome, and the file's text afterwards.
async fn check_damaged(
    ledger: &Ledger,
    damage: impl FnOnce(&mut String),
) -> (
    Result<rein_ledger::LoadedLedger, LedgerStoreError>,
    String,
    String,
) {
    let root = tempfile::tempdir().unwrap();
    let path = {
        let stores = fs_stores(root.path(), FsyncPolicy::EveryStep);
        store(stores.ledgers(), ledger).await;
        stores.ledgers().ledger_path(ledger.run_id())
    };
    let mut text = fs::read_to_string(&path).unwrap();
    damage(&mut text);
    fs::write(&path, &text).unwrap();
    let loaded = fs_stores(root.path(), FsyncPolicy::EveryStep)
        .ledgers()
        .load(ledger.run_id())
        .await;
    let after = fs::read_to_string(&path).unwrap();
    (loaded, after, path.display().to_string())
}

#[tokio::test]
async fn a_corrupted_byte_fails_the_load_naming_the_entry() {
    let ledger = ledger("tampered", 5);
    // One byte of entry 3's content changed; the line still parses.
    let (loaded, after, _) = check_damaged(&ledger, |text| {
        *text = text.replacen("note number 3", "note number 8", 1);
    })
    .await;
    match loaded {
        Err(LedgerStoreError::Broken { run_id, source }) => {
            assert_eq!(run_id, id("tampered"));
            assert_eq!(
                source,
                VerifyError {
                    seq: 3,
                    problem: Problem::Edited
                }
            );
        }
        other => panic!("expected a broken chain at entry 3, got {other:?}"),
    }
    assert!(
        after.contains("note number 8"),
        "the store never rewrites a ledger"
    );
}

#[tokio::test]
async fn an_unparsable_line_fails_the_load_naming_file_and_line() {
    let ledger = ledger("garbled", 4);
    for line in [2, 4] {
        // Line 4 is the last complete line: it is not torn (it has its newline), so it is
        // reported, not cut.
        let (loaded, after, path) = check_damaged(&ledger, |text| {
            let mut lines: Vec<&str> = text.lines().collect();
            lines[line - 1] = "{\"seq\": oops";
            *text = lines.join("\n") + "\n";
        })
        .await;
        match loaded {
            Err(LedgerStoreError::Corrupt {
                location,
                line: at,
                reason,
            }) => {
                assert_eq!((location, at), (path, line as u64));
                assert!(reason.contains("not a valid ledger entry"), "{reason}");
            }
            other => panic!("expected line {line} to be corrupt, got {other:?}"),
        }
        assert!(
            after.contains("oops"),
            "a bad line is never dropped or rewritten"
        );
    }
}

#[tokio::test]
async fn a_torn_last_line_is_reported_and_the_next_entry_written_over_it() {
    let full = ledger("torn", 4);
    let complete = ledger("torn", 3);
    let line4 = full.entries()[3].to_json_line();
    let complete_text: String = complete.entries().iter().map(Entry::to_json_line).collect();
    // Torn lines shorter and longer than the entry that replaces them.
    let shorter = line4[..line4.len() / 2].to_owned();
    let longer = format!("{{\"seq\":4,\"note\":\"{}", "x".repeat(line4.len() * 2));
    for torn in [shorter, longer] {
        let root = tempfile::tempdir().unwrap();
        let path = {
            let stores = fs_stores(root.path(), FsyncPolicy::EveryStep);
            store(stores.ledgers(), &complete).await;
            stores.ledgers().ledger_path(complete.run_id())
        };
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(torn.as_bytes()).unwrap();
        drop(file);

        let stores = fs_stores(root.path(), FsyncPolicy::EveryStep);
        let loaded = stores.ledgers().load(complete.run_id()).await.unwrap();
        assert_eq!(loaded.ledger, complete, "every complete entry is kept");
        let expected = TornTail {
            line: 4,
            bytes: torn.len() as u64,
        };
        assert_eq!(loaded.torn_tail, Some(expected));
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{complete_text}{torn}"),
            "loading writes nothing: the torn line stays until an entry can report its cut"
        );
        // The next entry takes the torn line's place; what was left of it is gone.
        stores.ledgers().append(&full.entries()[3]).await.unwrap();
        stores.ledgers().sync(full.run_id()).await.unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{complete_text}{line4}")
        );
        // Later entries are appended after it, and a fresh store loads the whole chain.
        let mut longer_ledger = full.clone();
        push(&mut longer_ledger, 5);
        stores
            .ledgers()
            .append(&longer_ledger.entries()[4])
            .await
            .unwrap();
        let fresh = fs_stores(root.path(), FsyncPolicy::EveryStep);
        let reloaded = fresh.ledgers().load(full.run_id()).await.unwrap();
        assert_eq!(reloaded.ledger, longer_ledger);
        assert_eq!(reloaded.torn_tail, None);
    }

    // A line that is complete JSON but lost its newline is torn too: the write never
    // finished, so `append` never returned for it.
    let (loaded, _, _) = check_damaged(&complete, |text| text.push_str(line4.trim_end())).await;
    assert_eq!(loaded.unwrap().torn_tail.map(|t| t.line), Some(4));
}

#[tokio::test]
async fn appending_after_a_crash_cuts_the_torn_line_first() {
    let root = tempfile::tempdir().unwrap();
    let mut ledger = ledger("crashed", 2);
    let path = {
        let stores = fs_stores(root.path(), FsyncPolicy::EveryEntry);
        store(stores.ledgers(), &ledger).await;
        stores.ledgers().ledger_path(ledger.run_id())
    };
    const TORN: &[u8] = b"{\"seq\":3,\"at\":17000";
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(TORN).unwrap();
    drop(file);

    let stores = fs_stores(root.path(), FsyncPolicy::EveryEntry);
    push(&mut ledger, 3);
    stores.ledgers().append(&ledger.entries()[2]).await.unwrap();
    let loaded = stores.ledgers().load(ledger.run_id()).await.unwrap();
    assert_eq!(loaded.ledger, ledger);
    let cut = TornTail {
        line: 3,
        bytes: TORN.len() as u64,
    };
    assert_eq!(
        loaded.torn_tail,
        Some(cut),
        "the cut made by the append is reported"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_in_place_of_a_ledger_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    let stores = fs_stores(root.path(), FsyncPolicy::EveryStep);
    let ledger = ledger("linked", 1);
    let path = stores.ledgers().ledger_path(ledger.run_id());
    std::os::unix::fs::symlink(outside.path(), &path).unwrap();

    let err = stores
        .ledgers()
        .append(&ledger.entries()[0])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert!(stores.ledgers().load(ledger.run_id()).await.is_err());
    assert_eq!(
        fs::read(outside.path()).unwrap(),
        b"",
        "nothing written through the link"
    );
}

#[test]
fn run_ids_cannot_spell_a_path() {
    for bad in ["../x", "a/b", "..", "x.jsonl", ""] {
        assert!(bad.parse::<rein_run::RunId>().is_err(), "{bad:?}");
    }
}

/// Appends every entry of `ledger` through `try_append_now` where the store takes it, else
/// through `append`; returns how many went through `try_append_now`.
async fn store_now<S: LedgerStore>(store: &S, ledger: &Ledger) -> usize {
    let mut now = 0;
    for entry in ledger.entries() {
        match store.try_append_now(entry) {
            Some(done) => {
                done.unwrap();
                now += 1;
            }
            None => store.append(entry).await.unwrap(),
        }
        store.sync(ledger.run_id()).await.unwrap();
    }
    now
}

/// `try_append_now` is `append` without the wait: the same chain checks, the same stored
/// lines; the memory store always takes it, the file store once the file is open and only
/// when no fsync is due for the entry.
#[tokio::test]
async fn appending_now_is_appending() {
    let memory = MemoryLedgerStore::new();
    let full = ledger("now", 20);
    assert_eq!(store_now(&memory, &full).await, 20);
    assert_eq!(memory.load(full.run_id()).await.unwrap().ledger, full);
    // A refused entry is refused the same way, and stores nothing.
    let refused = memory.try_append_now(&full.entries()[3]).unwrap();
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("does not follow the last stored entry, 20")
    );
    assert_eq!(memory.load(full.run_id()).await.unwrap().ledger, full);
    // The same through the object-safe twin the engine holds.
    let dynamic: Arc<dyn DynLedgerStore> = Arc::new(MemoryLedgerStore::new());
    assert!(matches!(
        dynamic.try_append_now_dyn(&full.entries()[0]),
        Some(Ok(()))
    ));

    for (policy, expected) in [
        // The first append opens the file: that one waits.
        (FsyncPolicy::EveryStep, 19),
        (FsyncPolicy::Relaxed, 19),
        // An fsync per entry is always due.
        (FsyncPolicy::EveryEntry, 0),
    ] {
        let root = tempfile::tempdir().unwrap();
        let stores = fs_stores(root.path(), policy);
        let now = store_now(stores.ledgers(), &full).await;
        assert_eq!(now, expected, "{policy:?}");
        let loaded = stores.ledgers().load(full.run_id()).await.unwrap();
        assert_eq!(loaded.ledger, full, "{policy:?}");
        let text = fs::read_to_string(stores.ledgers().ledger_path(full.run_id())).unwrap();
        let lines: String = full.entries().iter().map(Entry::to_json_line).collect();
        assert_eq!(text, lines, "{policy:?}");
    }
}

/// Two memory stores with a run of the same id, appended to in turn on one thread, keep
/// their own chains; a store made after another is dropped starts empty.
#[tokio::test]
async fn memory_stores_never_share_a_run() {
    let (a, b) = (MemoryLedgerStore::new(), MemoryLedgerStore::new());
    let (long, short) = (ledger("same", 4), ledger("same", 2));
    let e = |l: &Ledger, i: usize| l.entries()[i].clone();
    for (store, entry) in [
        (&a, e(&long, 0)),
        (&b, e(&short, 0)),
        (&a, e(&long, 1)),
        (&b, e(&short, 1)),
        (&a, e(&long, 2)),
        (&a, e(&long, 3)),
    ] {
        store.append(&entry).await.unwrap();
    }
    assert_eq!(a.load(long.run_id()).await.unwrap().ledger, long);
    assert_eq!(b.load(short.run_id()).await.unwrap().ledger, short);

    drop(a);
    let c = MemoryLedgerStore::new();
    c.append(&e(&long, 0)).await.unwrap();
    assert_eq!(c.load(long.run_id()).await.unwrap().ledger.len(), 1);
}

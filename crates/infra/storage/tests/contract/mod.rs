//! The contract suite of the storage ports: what every run, ledger, artifact and stop
//! request store keeps, written once against the ports and run unchanged against each implementation
//! (the memory and filesystem stores here, the `PostgreSQL` stores in rein-postgres, which
//! includes this file). Each check takes a fresh, empty store.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part of it

use std::sync::Arc;

use rein_artifact::StoreOptions;
use rein_artifact::{ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, DynArtifactStore};
use rein_ledger::{DynLedgerStore, EntryKind, Ledger, LedgerStore, LedgerStoreError};
use rein_run::{
    DynRunStore, DynStopRequestStore, Run, RunId, RunStore, RunStoreError, State, StopKind,
    StopRequest, StopRequestStore, Timestamp,
};

/// A fixed instant: the suite never reads the clock.
pub fn at(millis: u64) -> Timestamp {
    Timestamp::from_unix_millis(1_700_000_000_000 + millis)
}

/// Parses a run id the suite knows to be valid.
pub fn id(text: &str) -> RunId {
    text.parse().expect("the suite's run ids are valid")
}

/// A fresh run `id` in intake.
pub fn run(id_text: &str) -> Run {
    Run::new(
        id(id_text),
        format!("goal of {id_text}"),
        serde_json::Map::new(),
        serde_json::json!({"budgets": {"tool_calls": 10}}),
        at(0),
    )
}

/// A ledger of run `id` with `n` entries whose notes say which entry they are.
pub fn ledger(id_text: &str, n: u64) -> Ledger {
    let mut ledger = Ledger::new(id(id_text));
    for i in 1..=n {
        push(&mut ledger, i);
    }
    ledger
}

/// Appends entry `i` (a steering note) to `ledger`.
pub fn push(ledger: &mut Ledger, i: u64) {
    ledger.append(
        at(i),
        State::Explore,
        EntryKind::Steering {
            note: format!("note number {i}"),
        },
    );
}

/// `len` bytes of a repeating pattern.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

const MIB: usize = 1024 * 1024;

// ---------------------------------------------------------------------------------------
// Run stores.

/// Round trip, whole replacement, `NotFound` naming the id, listing each run once, oldest
/// first.
pub async fn run_store<S: RunStore>(store: &S) {
    let mut first = run("a-1");
    store.save(&first).await.unwrap();
    assert_eq!(store.load(first.id()).await.unwrap(), first);
    first.enter(State::Explore, at(5)).unwrap();
    first
        .complete("done", serde_json::json!({"ok": true}), at(6))
        .unwrap();
    store.save(&first).await.unwrap();
    assert_eq!(store.load(first.id()).await.unwrap(), first);

    match store.load(&id("missing")).await {
        Err(RunStoreError::NotFound { id: missing }) => assert_eq!(missing, id("missing")),
        other => panic!("expected NotFound, got {other:?}"),
    }

    // Listing: each run once, oldest first (for these ids, saved in order, every store
    // agrees).
    store.save(&run("b-2")).await.unwrap();
    store.save(&run("c-3")).await.unwrap();
    store.save(&first).await.unwrap();
    assert_eq!(
        store.list().await.unwrap(),
        [id("a-1"), id("b-2"), id("c-3")]
    );
}

/// 32 runs saved five times each, at once: each loads as last saved.
pub async fn run_store_concurrent(store: Arc<dyn DynRunStore>) {
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut run = run(&format!("run-{i:02}"));
                for step in 0..5 {
                    run.count_step(at(step)).unwrap();
                    store.save_boxed(&run).await.unwrap();
                }
                run
            })
        })
        .collect();
    for task in tasks {
        let run = task.await.unwrap();
        assert_eq!(store.load_boxed(run.id()).await.unwrap(), run);
    }
    assert_eq!(store.list_boxed().await.unwrap().len(), 32);
}

// ---------------------------------------------------------------------------------------
// Ledger stores.

/// Appends every entry of `ledger` with a step boundary after each, as the engine does.
pub async fn append_all<S: LedgerStore + ?Sized>(store: &S, ledger: &Ledger) {
    for entry in ledger.entries() {
        store.append(entry).await.unwrap();
        store.sync(ledger.run_id()).await.unwrap();
    }
}

async fn check_round_trip<S: LedgerStore>(store: &S, ledger: &Ledger) {
    append_all(store, ledger).await;
    let loaded = store.load(ledger.run_id()).await.unwrap();
    assert_eq!(loaded.ledger, *ledger);
    assert_eq!(loaded.torn_tail, None);
}

/// Round trips, `NotFound`, sync of an empty run, a refused entry that does not follow the
/// stored chain (wrong number, wrong `prev`) changing nothing, listing.
pub async fn ledger_store<S: LedgerStore>(store: &S) {
    check_round_trip(store, &ledger("one", 1)).await;
    check_round_trip(store, &ledger("many", 200)).await;

    match store.load(&id("nobody")).await {
        Err(LedgerStoreError::NotFound { run_id }) => assert_eq!(run_id, id("nobody")),
        other => panic!("expected NotFound, got {other:?}"),
    }
    store.sync(&id("nobody")).await.unwrap();

    let full = ledger("gap", 3);
    store.append(&full.entries()[0]).await.unwrap();
    for wrong in [&full.entries()[2], &full.entries()[0]] {
        let err = store.append(wrong).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("does not follow the last stored entry, 1"),
            "{err}"
        );
    }
    // Entry 2 of another chain of the same run: the right number, the wrong `prev`.
    let mut fork = Ledger::new(id("gap"));
    push(&mut fork, 7);
    push(&mut fork, 2);
    let err = store.append(&fork.entries()[1]).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("does not link to the hash of entry 1"),
        "{err}"
    );
    assert_eq!(store.load(&id("gap")).await.unwrap().ledger.len(), 1);

    let mut listed = store.list().await.unwrap();
    listed.sort();
    assert_eq!(listed, [id("gap"), id("many"), id("one")]);
}

/// 32 runs appending at once, each with a step boundary per entry: every ledger verifies.
pub async fn ledger_store_concurrent(store: Arc<dyn DynLedgerStore>) {
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let ledger = ledger(&format!("run-{task}"), 64);
                for entry in ledger.entries() {
                    store.append_boxed(entry).await.unwrap();
                    store.sync_boxed(ledger.run_id()).await.unwrap();
                }
                ledger
            })
        })
        .collect();
    for task in tasks {
        let ledger = task.await.unwrap();
        let loaded = store.load_boxed(ledger.run_id()).await.unwrap();
        loaded.ledger.verify().unwrap();
        assert_eq!(loaded.ledger, ledger);
    }
    assert_eq!(store.list_boxed().await.unwrap().len(), 32);
}

/// A store reopened over the same data (a new process): it continues the chain the first wrote, refuses a stale entry,
/// and loads the whole ledger.
pub async fn ledger_store_reopened<S: LedgerStore>(first: S, reopen: impl FnOnce() -> S) {
    let mut ledger = ledger("reopened", 5);
    append_all(&first, &ledger).await;
    drop(first);
    let second = reopen();
    push(&mut ledger, 6);
    second.append(&ledger.entries()[5]).await.unwrap();
    assert!(
        second.append(&ledger.entries()[4]).await.is_err(),
        "a stale writer is refused"
    );
    assert_eq!(second.load(ledger.run_id()).await.unwrap().ledger, ledger);
}

// ---------------------------------------------------------------------------------------
// Artifact stores.

async fn check_artifact_round_trip<S: ArtifactStore>(store: &S, bytes: Vec<u8>) -> ArtifactRef {
    let options = StoreOptions::new()
        .with_name("out.bin")
        .with_metadata("size", bytes.len().to_string());
    let expected = ArtifactRef::for_content(&bytes, options.clone());
    let reference = store.put(bytes.clone(), options).await.unwrap();
    assert_eq!(reference, expected);
    let (again, read) = store.get(reference.id()).await.unwrap();
    assert_eq!(again, reference);
    assert!(
        read == bytes,
        "{} bytes came back as {}",
        bytes.len(),
        read.len()
    );
    assert_eq!(store.stat(reference.id()).await.unwrap(), reference);
    reference
}

/// Round trips (empty, one byte, 10 MiB), write-once keeping the first reference,
/// `NotFound` from both reads.
pub async fn artifact_store<S: ArtifactStore>(store: &S) {
    for bytes in [Vec::new(), vec![0x2a], pattern(10 * MIB)] {
        check_artifact_round_trip(store, bytes).await;
    }

    let first = store
        .put(b"same".to_vec(), StoreOptions::new().with_name("first"))
        .await
        .unwrap();
    let second = store
        .put(b"same".to_vec(), StoreOptions::new().with_name("second"))
        .await
        .unwrap();
    assert_eq!((first.id(), second.name()), (second.id(), Some("second")));
    assert_eq!(store.stat(first.id()).await.unwrap(), first);
    assert_eq!(store.get(first.id()).await.unwrap().0, first);

    let unknown = ArtifactId::of(b"never stored");
    for result in [
        store.stat(&unknown).await,
        store.get(&unknown).await.map(|(reference, _)| reference),
    ] {
        assert!(
            matches!(result, Err(ArtifactError::NotFound { ref id }) if *id == unknown),
            "{result:?}"
        );
    }
}

/// A store whose limit is 4 bytes: 5 are refused before anything is stored, 4 are kept.
pub async fn artifact_store_limit(store: &dyn DynArtifactStore) {
    let refused = store.put_boxed(vec![1; 5], StoreOptions::new()).await;
    assert!(
        matches!(refused, Err(ArtifactError::TooLarge { size: 5, limit: 4 })),
        "{refused:?}"
    );
    let id = ArtifactId::of(&[1; 5]);
    assert!(matches!(
        store.stat_boxed(&id).await,
        Err(ArtifactError::NotFound { .. })
    ));
    assert!(
        store
            .put_boxed(vec![1; 4], StoreOptions::new())
            .await
            .is_ok()
    );
}

/// 16 writers of the same content at once, then 16 of distinct content, spread over
/// `stores` (views of one backing store): every put succeeds and every read verifies.
pub async fn artifact_store_concurrent(stores: &[Arc<dyn DynArtifactStore>]) {
    let shared = pattern(MIB);
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let store = Arc::clone(&stores[i % stores.len()]);
            let bytes = if i < 16 {
                shared.clone()
            } else {
                pattern(1000 + i)
            };
            tokio::spawn(async move {
                let name = format!("writer {i}");
                let reference = store
                    .put_boxed(bytes.clone(), StoreOptions::new().with_name(name))
                    .await
                    .unwrap();
                let (_, read) = store.get_boxed(reference.id()).await.unwrap();
                assert!(read == bytes);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// Stop request stores.

/// A stop request of `kind` by `by`, asked at `millis`.
pub fn stop(kind: StopKind, by: &str, millis: u64) -> StopRequest {
    StopRequest::new(kind, by, format!("asked by {by}"), at(millis))
}

/// Nothing waits at first (an unknown run included); a request is read back whole; a
/// newer request replaces the waiting one unless it would soften an abort into an
/// interrupt; runs are apart; `clear` forgets only the request it is given (a newer one stays), and succeeds when nothing waits.
pub async fn stop_request_store<S: StopRequestStore>(store: &S) {
    let (a, b) = (id("stop-a"), id("stop-b"));
    let nothing = stop(StopKind::Interrupt, "nobody", 0);
    assert_eq!(store.pending(&a).await.unwrap(), None);
    store.clear(&a, &nothing).await.unwrap();

    let first = stop(StopKind::Interrupt, "alice", 1);
    store.request(&a, &first).await.unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), Some(first));
    assert_eq!(store.pending(&b).await.unwrap(), None, "runs are apart");

    // A newer interrupt replaces an interrupt; an abort replaces an interrupt.
    let second = stop(StopKind::Interrupt, "bob", 2);
    store.request(&a, &second).await.unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), Some(second));
    let abort = stop(StopKind::Abort, "carol", 3);
    store.request(&a, &abort).await.unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), Some(abort.clone()));

    // An abort is never softened into an interrupt; a newer abort replaces it.
    store
        .request(&a, &stop(StopKind::Interrupt, "dave", 4))
        .await
        .unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), Some(abort.clone()));
    let again = stop(StopKind::Abort, "erin", 5);
    store.request(&a, &again).await.unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), Some(again.clone()));

    // A clear of a request that was replaced since leaves the newer one waiting.
    store.clear(&a, &abort).await.unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), Some(again.clone()));
    store.clear(&a, &again).await.unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), None);
    store.clear(&a, &again).await.unwrap();
    // After a clear, an interrupt stands again.
    let later = stop(StopKind::Interrupt, "frank", 6);
    store.request(&a, &later).await.unwrap();
    assert_eq!(store.pending(&a).await.unwrap(), Some(later));
}

/// Many interrupts and one abort asked at once, for one run: the abort stands, whatever
/// order they land in.
pub async fn stop_request_store_concurrent(store: Arc<dyn DynStopRequestStore>) {
    let run = id("stop-race");
    let mut tasks = Vec::new();
    for i in 0..16_u64 {
        let store = Arc::clone(&store);
        let run = run.clone();
        tasks.push(tokio::spawn(async move {
            let kind = if i == 7 {
                StopKind::Abort
            } else {
                StopKind::Interrupt
            };
            store
                .request_boxed(&run, &stop(kind, &format!("op-{i}"), i))
                .await
                .unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(
        store.pending_boxed(&run).await.unwrap(),
        Some(stop(StopKind::Abort, "op-7", 7))
    );
}

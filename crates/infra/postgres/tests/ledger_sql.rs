//! The ledger in SQL: one row per entry holding its line exactly as written, so it
//! verifies over the same bytes a file holds; export to and import from JSONL, byte for
//! byte; rows edited behind the store's back fail the load.

mod support;

use rein_ledger::{EntryKind, Ledger, LedgerStore, LedgerStoreError, Problem};
use rein_run::{State, Timestamp};
use rein_storage::{FsConfig, FsStores};
use support::{Fresh, sample};

/// Appends every entry of `ledger` and syncs once: one step's commit of them all (or one
/// commit an entry, as the stores' policy says).
async fn append_all<S: LedgerStore>(store: &S, ledger: &Ledger) {
    for entry in ledger.entries() {
        store.append(entry).await.unwrap();
    }
    store.sync(ledger.run_id()).await.unwrap();
}

#[tokio::test]
async fn each_row_holds_its_entry_line_and_hash_as_written() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    let ledger = sample("rows", 4);
    append_all(stores.ledgers(), &ledger).await;
    let rows = db
        .sql()
        .await
        .query(
            "SELECT seq, hash, line FROM rein_ledger WHERE run_id = 'rows' ORDER BY seq",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 4);
    for (row, entry) in rows.iter().zip(ledger.entries()) {
        assert_eq!(row.get::<_, i64>(0) as u64, entry.seq());
        assert_eq!(row.get::<_, &str>(1), entry.hash().to_string());
        assert_eq!(row.get::<_, &[u8]>(2), entry.json_line());
    }
    db.drop_db().await;
}

#[tokio::test]
async fn a_jsonl_file_imports_and_exports_back_byte_for_byte() {
    let root = tempfile::tempdir().unwrap();
    let fs = FsStores::open_with(root.path(), FsConfig::default()).unwrap();
    let ledger = sample("moved", 12);
    append_all(fs.ledgers(), &ledger).await;
    let file = std::fs::read(fs.ledgers().ledger_path(ledger.run_id())).unwrap();

    let db = Fresh::new().await;
    let stores = db.stores().await;
    let (run_id, count) = stores.ledgers().import_jsonl(&file).await.unwrap();
    assert_eq!((&run_id, count), (ledger.run_id(), 12));
    assert_eq!(stores.ledgers().export_jsonl(&run_id).await.unwrap(), file);
    assert_eq!(stores.ledgers().load(&run_id).await.unwrap().ledger, ledger);

    // A second import of the same run is refused; the stored ledger is unchanged.
    let err = stores.ledgers().import_jsonl(&file).await.unwrap_err();
    assert!(err.to_string().contains("already has a ledger"), "{err}");
    assert_eq!(stores.ledgers().export_jsonl(&run_id).await.unwrap(), file);

    // And a ledger written through the store exports as the file the fs store writes.
    let written = sample("written", 5);
    append_all(stores.ledgers(), &written).await;
    append_all(fs.ledgers(), &written).await;
    assert_eq!(
        stores
            .ledgers()
            .export_jsonl(written.run_id())
            .await
            .unwrap(),
        std::fs::read(fs.ledgers().ledger_path(written.run_id())).unwrap()
    );
    db.drop_db().await;
}

#[tokio::test]
async fn a_torn_or_tampered_file_is_not_imported() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    let ledger = sample("bad", 3);
    let file: Vec<u8> = ledger
        .entries()
        .iter()
        .flat_map(|e| e.json_line().to_vec())
        .collect();

    let torn = &file[..file.len() - 5];
    match stores.ledgers().import_jsonl(torn).await {
        Err(LedgerStoreError::Corrupt {
            line: 3, reason, ..
        }) => {
            assert!(reason.contains("cut mid-write"), "{reason}");
        }
        other => panic!("expected Corrupt at line 3, got {other:?}"),
    }
    let tampered = String::from_utf8(file.clone())
        .unwrap()
        .replace("note 2:", "note X:");
    match stores.ledgers().import_jsonl(tampered.as_bytes()).await {
        Err(LedgerStoreError::Broken { source, .. }) => {
            assert_eq!((source.seq, source.problem), (2, Problem::Edited));
        }
        other => panic!("expected Broken at 2, got {other:?}"),
    }
    assert!(matches!(
        stores.ledgers().load(ledger.run_id()).await,
        Err(LedgerStoreError::NotFound { .. })
    ));
    db.drop_db().await;
}

#[tokio::test]
async fn rows_edited_behind_the_stores_back_fail_the_load() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    let sql = db.sql().await;
    for (run, damage, expected) in [
        (
            "edited",
            "UPDATE rein_ledger SET line = convert_to(replace(convert_from(line, 'UTF8'), \
             'note 2:', 'note X:'), 'UTF8') WHERE run_id = 'edited' AND seq = 2",
            Some(Problem::Edited),
        ),
        (
            "dropped",
            "DELETE FROM rein_ledger WHERE run_id = 'dropped' AND seq = 2",
            Some(Problem::Dropped { missing: 2 }),
        ),
        (
            "renumbered",
            "UPDATE rein_ledger SET seq = 9 WHERE run_id = 'renumbered' AND seq = 2",
            None,
        ),
    ] {
        let ledger = sample(run, 4);
        append_all(stores.ledgers(), &ledger).await;
        sql.batch_execute(damage).await.unwrap();
        match (stores.ledgers().load(ledger.run_id()).await, expected) {
            (Err(LedgerStoreError::Broken { source, .. }), Some(problem)) => {
                assert_eq!((source.seq, source.problem), (2, problem), "{run}");
            }
            (Err(LedgerStoreError::Corrupt { line, reason, .. }), None) => {
                assert_eq!(line, 9, "{run}");
                assert!(reason.contains("the row says entry 9"), "{reason}");
            }
            (other, _) => panic!("{run}: unexpected {other:?}"),
        }
    }
    db.drop_db().await;
}

/// Two writers appending the same number at once (two forks of one ledger, from two
/// processes): one entry lands, the other is refused as not following it — whether it
/// lost on the chain check or on the row's key — and the ledger verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_appends_of_one_number_at_once_land_one_and_refuse_the_other() {
    let db = Fresh::new().await;
    let (a, b) = (db.stores().await, db.stores().await);
    for round in 0..20 {
        let (ours, theirs) = forked(&format!("fork-{round}"), 3);
        written(&a, &ours.entries()[..2]).await;
        let (x, y) = (ours.entries()[2].clone(), theirs.entries()[2].clone());
        let (a2, b2) = (a.clone(), b.clone());
        // Each appends and syncs, as the engine ends a step.
        let (first, second) = tokio::join!(
            tokio::spawn(async move {
                a2.ledgers().append(&x).await?;
                a2.ledgers().sync(x.run_id()).await
            }),
            tokio::spawn(async move {
                b2.ledgers().append(&y).await?;
                b2.ledgers().sync(y.run_id()).await
            }),
        );
        let outcomes = [first.unwrap(), second.unwrap()];
        let refused: Vec<String> = outcomes
            .iter()
            .filter_map(|o| o.as_ref().err().map(ToString::to_string))
            .collect();
        assert_eq!(refused.len(), 1, "round {round}: {outcomes:?}");
        assert!(
            refused[0].contains("entry 3 does not follow the last stored entry, 3"),
            "round {round}: {}",
            refused[0]
        );
        let stored = a.ledgers().load(ours.run_id()).await.unwrap().ledger;
        stored.verify().unwrap();
        assert_eq!(stored.len(), 3);
    }
    db.drop_db().await;
}

#[tokio::test]
async fn ledgers_loaded_together_are_each_verified_as_one_loaded_alone() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    let sql = db.sql().await;
    for (run, n) in [("whole", 3), ("edited", 4), ("other", 2)] {
        append_all(stores.ledgers(), &sample(run, n)).await;
    }
    sql.batch_execute(
        "UPDATE rein_ledger SET line = convert_to(replace(convert_from(line, 'UTF8'), \
         'note 2:', 'note X:'), 'UTF8') WHERE run_id = 'edited' AND seq = 2",
    )
    .await
    .unwrap();
    let ids: Vec<rein_run::RunId> = ["other", "edited", "absent", "whole"]
        .iter()
        .map(|id| id.parse().unwrap())
        .collect();
    let loaded = stores.ledgers().load_each(&ids).await.unwrap();
    let order: Vec<&str> = loaded.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(order, ["other", "edited", "absent", "whole"]);
    for ((id, together), alone_id) in loaded.iter().zip(&ids) {
        let alone = stores.ledgers().load(alone_id).await;
        match (together, alone) {
            (Ok(a), Ok(b)) => assert_eq!(a.ledger.entries(), b.ledger.entries(), "{id}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{id}"),
            (a, b) => panic!("{id}: together {a:?}, alone {b:?}"),
        }
    }
    assert_eq!(loaded[3].1.as_ref().map(|l| l.ledger.len()).ok(), Some(3));
    assert!(matches!(
        loaded[1].1,
        Err(LedgerStoreError::Broken { ref source, .. }) if source.seq == 2
    ));
    assert!(matches!(
        loaded[2].1,
        Err(LedgerStoreError::NotFound { .. })
    ));
    db.drop_db().await;
}

/// A writer's next batch follows the entry it wrote last (the stored tip is not looked up
/// again), yet an entry another process stored after that one still refuses it, and a
/// refused batch is never taken for written.
#[tokio::test]
async fn a_batch_after_the_writers_own_last_entry_is_still_refused_behind_another_writer() {
    let db = Fresh::new().await;
    let (a, b) = (db.stores().await, db.stores().await);
    let (ours, theirs) = forked("after-own", 4);
    written(&a, &ours.entries()[..2]).await;
    // The other process, which never wrote this run, stores entry 3 first.
    written(&b, &theirs.entries()[2..]).await;

    // Entry 3 follows a's own last entry; entry 4 follows its entry 3, never written.
    for (entry, why) in [
        (2, "entry 3 does not follow the last stored entry, 3"),
        (3, "entry 4 does not link to the hash of entry 3"),
    ] {
        a.ledgers().append(&ours.entries()[entry]).await.unwrap();
        let refused = a.ledgers().sync(ours.run_id()).await.unwrap_err();
        assert!(refused.to_string().contains(why), "{refused}");
    }
    let stored = b.ledgers().load(ours.run_id()).await.unwrap().ledger;
    stored.verify().unwrap();
    assert_eq!(stored.entries(), theirs.entries());
    db.drop_db().await;
}

/// Two forks of run `run`: ours, `n` entries, and theirs, our first two and one of its own.
fn forked(run: &str, n: u64) -> (Ledger, Ledger) {
    let ours = sample(run, n);
    let mut theirs =
        Ledger::from_entries(ours.run_id().clone(), ours.entries()[..2].to_vec()).unwrap();
    theirs.append(
        Timestamp::from_unix_millis(1_800_000_000_000),
        State::Act,
        EntryKind::Steering {
            note: "the other fork".into(),
        },
    );
    (ours, theirs)
}

/// Appends `entries` through `stores` and syncs their run, as a step ends.
async fn written(stores: &rein_postgres::PgStores, entries: &[rein_ledger::Entry]) {
    for entry in entries {
        stores.ledgers().append(entry).await.unwrap();
    }
    stores.ledgers().sync(entries[0].run_id()).await.unwrap();
}

/// What a writer knows it committed is forgotten with the connection: a database reached
/// anew (here the same one, its last entry deleted as a failover to a replica behind its
/// primary would lose it) is asked for its tip again, and the writer's next entry is refused
/// rather than stored after a gap.
#[tokio::test]
async fn a_new_connection_forgets_what_the_writer_knew_it_had_written() {
    let db = Fresh::new().await;
    let sql = db.sql().await;
    let stores = db.stores_with(rein_postgres::CommitPolicy::EveryStep).await;
    let ours = sample("lost-tip", 4);
    written(&stores, &ours.entries()[..3]).await;
    sql.execute(
        "DELETE FROM rein_ledger WHERE run_id = 'lost-tip' AND seq = 3",
        &[],
    )
    .await
    .unwrap();
    let n = sql
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(n, 1, "the stores' connection is ended");
    // The pool finds its connection closed and makes another; until it notices, the write
    // fails on the closed one (and is never taken for written): append it again.
    let mut refused = None;
    for _ in 0..50 {
        stores.ledgers().append(&ours.entries()[3]).await.unwrap();
        match stores.ledgers().sync(ours.run_id()).await {
            Err(e) if e.to_string().contains("does not follow") => {
                refused = Some(e.to_string());
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            Ok(()) => panic!("entry 4 was stored after a gap"),
        }
    }
    let refused = refused.expect("refused once the pool reconnected");
    assert!(
        refused.contains("entry 4 does not follow the last stored entry, 2"),
        "{refused}"
    );
    assert_eq!(
        stores
            .ledgers()
            .load(ours.run_id())
            .await
            .unwrap()
            .ledger
            .len(),
        2
    );
    db.drop_db().await;
}

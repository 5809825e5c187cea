//! The database restarted under open stores: the pool's connections die with it; a write
//! caught by the restart fails with a typed error, the next one gets a
//! new connection, and nothing acknowledged is lost. A test binary of its own (cargo runs
//! test binaries one at a time), on the throwaway cluster `make pg-start` started.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rein_ledger::{EntryKind, Ledger, LedgerStore, LedgerStoreError};
use rein_run::{RunId, State, Timestamp};
use support::Fresh;

fn restart_the_server() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../scripts/pg-test-cluster.sh");
    let status = Command::new("bash")
        .arg(script)
        .arg("restart")
        .status()
        .expect("bash runs");
    assert!(
        status.success(),
        "restarting needs the throwaway cluster: run `make pg-start` (`make test` does)"
    );
}

/// The tests here take turns: each restarts the one server.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_restart_fails_the_write_it_catches_and_loses_nothing_acknowledged() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = Fresh::new().await;
    let stores = db.stores().await;
    let mut ledger = Ledger::new("restarted".parse().unwrap());
    for i in 1..=6 {
        ledger.append(
            Timestamp::from_unix_millis(i),
            State::Act,
            EntryKind::Steering {
                note: format!("entry {i}"),
            },
        );
    }
    for entry in &ledger.entries()[..3] {
        stores.ledgers().append(entry).await.unwrap();
    }
    stores.ledgers().sync(ledger.run_id()).await.unwrap();

    restart_the_server();

    let mut failures = 0;
    for entry in &ledger.entries()[3..] {
        // A write on a connection the restart killed fails, typed; the pool then opens a
        // new one. Two tries each at most.
        // Each entry a step of its own: appended, then synced, as the engine ends a step.
        let write = || async {
            stores.ledgers().append(entry).await?;
            stores.ledgers().sync(entry.run_id()).await
        };
        if let Err(e) = write().await {
            assert!(matches!(e, LedgerStoreError::Backend { .. }), "{e:?}");
            eprintln!("the write the restart caught: {e}");
            failures += 1;
            write().await.unwrap();
        }
    }
    eprintln!("writes failed by the restart: {failures}");
    assert!(
        failures <= 1,
        "at most the first write after the restart fails"
    );
    let loaded = stores.ledgers().load(ledger.run_id()).await.unwrap();
    assert_eq!(loaded.ledger, ledger, "nothing acknowledged was lost");
    db.drop_db().await;
}

/// Waits for `wakeups` to wake, within a generous bound that fails naming `what`.
async fn woken(wakeups: &rein_postgres::QueueWakeups, what: &str) {
    if tokio::time::timeout(Duration::from_secs(120), wakeups.next())
        .await
        .is_err()
    {
        panic!("the queue listener never woke for {what}");
    }
}

#[tokio::test]
async fn a_queue_listener_listens_again_after_a_restart() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = Fresh::new().await;
    let stores = db.stores().await;
    let wakeups = stores.listen_queue().await.unwrap();

    restart_the_server();

    // Its connection died with the server: it listens again on a new one, and wakes once
    // then (runs queued meanwhile were announced to nobody)...
    woken(&wakeups, "its return after the restart").await;
    // ...and a run queued afterwards is announced to it.
    let id: RunId = "queued-after-the-restart".parse().unwrap();
    if let Err(e) = stores.enqueue(&id).await {
        eprintln!("the enqueue the restart caught: {e}");
        stores.enqueue(&id).await.unwrap();
    }
    woken(&wakeups, "a run queued after the restart").await;
    db.drop_db().await;
}

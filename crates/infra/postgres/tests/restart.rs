//! The database restarted under open stores: the pool's connections die with it; a write
//! caught by the restart fails with a typed error, the next one gets a
//! new connection, and nothing acknowledged is lost. A test binary of its own (cargo runs
//! test binaries one at a time), on the throwaway cluster `make pg-start` started.

mod support;

use std::path::Path;
use std::process::Command;

use rein_ledger::{EntryKind, Ledger, LedgerStore, LedgerStoreError};
use rein_run::{State, Timestamp};
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

#[tokio::test]
async fn a_restart_fails_the_write_it_catches_and_loses_nothing_acknowledged() {
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

    restart_the_server();

    let mut failures = 0;
    for entry in &ledger.entries()[3..] {
        // A write on a connection the restart killed fails, typed; the pool then opens a
        // new one. Two tries each at most.
        if let Err(e) = stores.ledgers().append(entry).await {
            assert!(matches!(e, LedgerStoreError::Backend { .. }), "{e:?}");
            eprintln!("the write the restart caught: {e}");
            failures += 1;
            stores.ledgers().append(entry).await.unwrap();
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

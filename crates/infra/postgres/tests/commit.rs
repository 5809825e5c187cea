//! When appended entries reach the database ([`CommitPolicy`]): a step's entries together
//! at its sync by default, each on its own with `EveryEntry`; never a snapshot ahead of
//! its ledger; a long step in bounded batches; a released lease leaves nothing behind.

mod support;

use std::time::Duration;

use rein_ledger::LedgerStore;
use rein_postgres::{CommitPolicy, PgStores};
use rein_run::{Run, RunId, RunStore, Timestamp};
use support::{Fresh, sample};

async fn rows(sql: &tokio_postgres::Client, run: &RunId) -> i64 {
    sql.query_one(
        "SELECT count(*) FROM rein_ledger WHERE run_id = $1",
        &[&run.as_str()],
    )
    .await
    .unwrap()
    .get(0)
}

fn snapshot(run: &RunId) -> Run {
    Run::new(
        run.clone(),
        "commit",
        serde_json::Map::new(),
        serde_json::json!({}),
        Timestamp::from_unix_millis(0),
    )
}

#[tokio::test]
async fn a_steps_entries_are_committed_together_at_its_sync() {
    let db = Fresh::new().await;
    let sql = db.sql().await;
    let stores = db.stores().await;
    assert_eq!(stores.config().commit(), CommitPolicy::EveryStep);
    let ledger = sample("step", 5);
    // Kept in this process without waiting on anything: no round trip, no future.
    for entry in ledger.entries() {
        assert!(matches!(
            stores.ledgers().try_append_now(entry),
            Some(Ok(()))
        ));
    }
    assert_eq!(rows(&sql, ledger.run_id()).await, 0);
    stores.ledgers().sync(ledger.run_id()).await.unwrap();
    assert_eq!(rows(&sql, ledger.run_id()).await, 5);
    // One statement, one transaction: every row has the same inserting transaction.
    let transactions: i64 = sql
        .query_one(
            "SELECT count(DISTINCT xmin::text) FROM rein_ledger WHERE run_id = 'step'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(transactions, 1);
    assert_eq!(
        stores.ledgers().load(ledger.run_id()).await.unwrap().ledger,
        ledger
    );
    // Nothing waits: a sync is no write at all.
    stores.ledgers().sync(ledger.run_id()).await.unwrap();
    db.drop_db().await;
}

#[tokio::test]
async fn every_entry_commits_each_before_append_returns() {
    let db = Fresh::new().await;
    let sql = db.sql().await;
    let stores = db.stores_with(CommitPolicy::EveryEntry).await;
    let ledger = sample("each", 3);
    for (n, entry) in ledger.entries().iter().enumerate() {
        // Nothing is kept for later: the append is the commit.
        assert!(stores.ledgers().try_append_now(entry).is_none());
        stores.ledgers().append(entry).await.unwrap();
        assert_eq!(rows(&sql, ledger.run_id()).await, n as i64 + 1);
    }
    db.drop_db().await;
}

#[tokio::test]
async fn a_snapshot_is_never_saved_ahead_of_its_ledger() {
    let db = Fresh::new().await;
    let sql = db.sql().await;
    let stores = db.stores().await;
    let ledger = sample("ahead", 2);
    for entry in ledger.entries() {
        stores.ledgers().append(entry).await.unwrap();
    }
    assert_eq!(rows(&sql, ledger.run_id()).await, 0);
    stores
        .runs()
        .save(&snapshot(ledger.run_id()))
        .await
        .unwrap();
    assert_eq!(rows(&sql, ledger.run_id()).await, 2);
    db.drop_db().await;
}

#[tokio::test]
async fn a_long_step_is_written_in_bounded_batches() {
    let db = Fresh::new().await;
    let sql = db.sql().await;
    let stores = db.stores().await;
    let ledger = sample("long", 600);
    for entry in ledger.entries() {
        stores.ledgers().append(entry).await.unwrap();
    }
    // Two full batches written on the way, the rest waiting for the sync.
    assert_eq!(rows(&sql, ledger.run_id()).await, 512);
    stores.ledgers().sync(ledger.run_id()).await.unwrap();
    assert_eq!(
        stores.ledgers().load(ledger.run_id()).await.unwrap().ledger,
        ledger
    );
    db.drop_db().await;
}

#[tokio::test]
async fn a_released_lease_leaves_no_entry_behind_and_a_load_reads_its_own_appends() {
    let db = Fresh::new().await;
    let sql = db.sql().await;
    let (stores, other): (PgStores, PgStores) = (db.stores().await, db.stores().await);
    let ledger = sample("released", 3);
    let lease = stores
        .acquire_lease(ledger.run_id(), "worker", Duration::from_secs(600))
        .await
        .unwrap();
    stores.ledgers().append(&ledger.entries()[0]).await.unwrap();
    // This process reads what it appended.
    assert_eq!(
        stores
            .ledgers()
            .load(ledger.run_id())
            .await
            .unwrap()
            .ledger
            .len(),
        1
    );
    for entry in &ledger.entries()[1..] {
        stores.ledgers().append(entry).await.unwrap();
    }
    assert_eq!(rows(&sql, ledger.run_id()).await, 1);
    stores.release_lease(&lease).await.unwrap();
    // Written under the lease before it was given up: the next holder sees all of it.
    assert_eq!(rows(&sql, ledger.run_id()).await, 3);
    let tokens: Vec<Option<i64>> = sql
        .query(
            "SELECT fencing_token FROM rein_ledger WHERE run_id = 'released' ORDER BY seq",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(tokens, [Some(1); 3]);
    assert_eq!(
        other.ledgers().load(ledger.run_id()).await.unwrap().ledger,
        ledger
    );
    db.drop_db().await;
}

//! The storage ports' contract suite (crates/infra/storage/tests/contract), unchanged,
//! against the `PostgreSQL` stores: each check on a fresh database.

#[path = "../../storage/tests/contract/mod.rs"]
mod contract;
mod support;

use std::sync::Arc;

use rein_artifact::DynArtifactStore;
use rein_postgres::CommitPolicy;
use support::Fresh;

#[tokio::test]
async fn run_store() {
    let db = Fresh::new().await;
    contract::run_store(db.stores().await.runs()).await;
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_store_concurrent() {
    let db = Fresh::new().await;
    contract::run_store_concurrent(Arc::new(db.stores().await.runs().clone())).await;
    db.drop_db().await;
}

#[tokio::test]
async fn ledger_store() {
    let db = Fresh::new().await;
    contract::ledger_store(db.stores().await.ledgers()).await;
    db.drop_db().await;
}

/// The same suite with every entry committed on its own (the default commits a step's).
#[tokio::test]
async fn ledger_store_every_entry() {
    for concurrent in [false, true] {
        let db = Fresh::new().await;
        let stores = db.stores_with(CommitPolicy::EveryEntry).await;
        if concurrent {
            contract::ledger_store_concurrent(Arc::new(stores.ledgers().clone())).await;
        } else {
            contract::ledger_store(stores.ledgers()).await;
        }
        db.drop_db().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ledger_store_concurrent() {
    let db = Fresh::new().await;
    contract::ledger_store_concurrent(Arc::new(db.stores().await.ledgers().clone())).await;
    db.drop_db().await;
}

/// A second process (a second pool) over the same database.
#[tokio::test]
async fn ledger_store_reopened() {
    let db = Fresh::new().await;
    let (first, second) = (db.stores().await, db.stores().await);
    contract::ledger_store_reopened(first.ledgers().clone(), move || second.ledgers().clone())
        .await;
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifact_store() {
    let db = Fresh::new().await;
    contract::artifact_store(db.stores().await.artifacts()).await;
    db.drop_db().await;
}

#[tokio::test]
async fn artifact_store_limit() {
    let db = Fresh::new().await;
    let config = db.config.clone().with_max_artifact_size(4);
    let stores = rein_postgres::PgStores::connect(config).await.unwrap();
    contract::artifact_store_limit(stores.artifacts()).await;
    db.drop_db().await;
}

/// Writers in two processes (two pools) and one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn artifact_store_concurrent() {
    let db = Fresh::new().await;
    let a = Arc::new(db.stores().await.artifacts().clone());
    let b = Arc::new(db.stores().await.artifacts().clone());
    let stores: [Arc<dyn DynArtifactStore>; 3] = [a.clone(), b, a];
    contract::artifact_store_concurrent(&stores).await;
    db.drop_db().await;
}

#[tokio::test]
async fn stop_request_store() {
    let db = Fresh::new().await;
    contract::stop_request_store(db.stores().await.stop_requests()).await;
    db.drop_db().await;
}

/// Sixteen requests at once from two processes (two pools): the abort among them stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stop_request_store_concurrent() {
    let db = Fresh::new().await;
    contract::stop_request_store_concurrent(Arc::new(db.stores().await.stop_requests().clone()))
        .await;
    let (first, second) = (db.stores().await, db.stores().await);
    let run = contract::id("seen-elsewhere");
    let asked = contract::stop(rein_run::StopKind::Interrupt, "alice", 9);
    rein_run::StopRequestStore::request(first.stop_requests(), &run, &asked)
        .await
        .unwrap();
    assert_eq!(
        rein_run::StopRequestStore::pending(second.stop_requests(), &run)
            .await
            .unwrap(),
        Some(asked)
    );
    db.drop_db().await;
}

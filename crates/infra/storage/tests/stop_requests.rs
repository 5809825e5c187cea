//! The stop request stores: the contract suite against memory and the filesystem, and a
//! request written by one process read by another.

mod contract;
mod support;

use std::sync::Arc;

use rein_run::{DynStopRequestStore, StopKind, StopRequestStore};
use rein_storage::{FsyncPolicy, MemoryStopRequests};
use support::{fs_stores, id};

#[tokio::test]
async fn memory_store_behaves() {
    contract::stop_request_store(&MemoryStopRequests::new()).await;
}

#[tokio::test]
async fn fs_store_behaves() {
    let root = tempfile::tempdir().unwrap();
    contract::stop_request_store(&fs_stores(root.path(), FsyncPolicy::EveryStep).stop_requests())
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_never_soften_an_abort_in_memory() {
    contract::stop_request_store_concurrent(Arc::new(MemoryStopRequests::new())).await;
}

#[tokio::test]
async fn a_request_is_read_by_another_opening_of_the_data_directory() {
    let root = tempfile::tempdir().unwrap();
    let asked = contract::stop(StopKind::Abort, "alice", 1);
    fs_stores(root.path(), FsyncPolicy::EveryStep)
        .stop_requests()
        .request(&id("elsewhere"), &asked)
        .await
        .unwrap();
    let reader: Arc<dyn DynStopRequestStore> =
        Arc::new(fs_stores(root.path(), FsyncPolicy::EveryStep).stop_requests());
    assert_eq!(
        reader.pending_boxed(&id("elsewhere")).await.unwrap(),
        Some(asked)
    );
}

/// Each request opens the folder's lock afresh, so requests on threads of their own race
/// as two processes would (before the lock, an interrupt could land over an abort).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_never_soften_an_abort_on_disk() {
    for _ in 0..20 {
        let root = tempfile::tempdir().unwrap();
        let stores = fs_stores(root.path(), FsyncPolicy::Relaxed);
        contract::stop_request_store_concurrent(Arc::new(stores.stop_requests())).await;
    }
}

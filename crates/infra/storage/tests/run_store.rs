//! The run stores: snapshot round trips, atomic replacement, unknown and corrupt runs.

mod contract;
mod support;

use std::fs;
use std::io::Read as _;
use std::sync::Arc;

use rein_run::{DynRunStore, RunStore, RunStoreError, State};
use rein_storage::{FsyncPolicy, MemoryRunStore};
use support::{POLICIES, at, file_names, fs_stores, id, run};

#[test]
fn stores_are_send_sync_and_dyn_usable() {
    fn shared(_: Arc<dyn DynRunStore>) {}
    let root = tempfile::tempdir().unwrap();
    shared(Arc::new(MemoryRunStore::new()));
    shared(Arc::new(
        fs_stores(root.path(), FsyncPolicy::EveryStep)
            .runs()
            .clone(),
    ));
}

#[tokio::test]
async fn memory_store_behaves() {
    contract::run_store(&MemoryRunStore::new()).await;
}

#[tokio::test]
async fn fs_store_behaves_under_every_policy() {
    for policy in POLICIES {
        let root = tempfile::tempdir().unwrap();
        let stores = fs_stores(root.path(), policy);
        contract::run_store(stores.runs()).await;
        // Nothing but the snapshots is left behind.
        assert_eq!(
            file_names(stores.runs().dir()),
            ["a-1.json", "b-2.json", "c-3.json"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_saves_of_different_runs() {
    let root = tempfile::tempdir().unwrap();
    let fs = Arc::new(
        fs_stores(root.path(), FsyncPolicy::EveryStep)
            .runs()
            .clone(),
    );
    let memory = Arc::new(MemoryRunStore::new());
    let stores: [Arc<dyn DynRunStore>; 2] = [memory, fs];
    for store in stores {
        contract::run_store_concurrent(store).await;
    }
}

#[tokio::test]
async fn a_save_replaces_the_file_atomically() {
    let root = tempfile::tempdir().unwrap();
    let stores = fs_stores(root.path(), FsyncPolicy::EveryStep);
    let mut run = run("atomic");
    stores.runs().save(&run).await.unwrap();
    let path = stores.runs().snapshot_path(run.id());
    let before = fs::read(&path).unwrap();

    // A reader holding the old file keeps reading the old snapshot, whole: the new one was
    // renamed over it, not written into it.
    let mut reader = fs::File::open(&path).unwrap();
    run.enter(State::Explore, at(1)).unwrap();
    stores.runs().save(&run).await.unwrap();
    let mut seen = Vec::new();
    reader.read_to_end(&mut seen).unwrap();
    assert_eq!(seen, before);
    assert_eq!(stores.runs().load(run.id()).await.unwrap(), run);

    // A temporary file left by a crash mid-save changes nothing.
    fs::write(
        stores.runs().dir().join(".atomic.json.4242.0.tmp"),
        b"{\"half\":",
    )
    .unwrap();
    assert_eq!(stores.runs().load(run.id()).await.unwrap(), run);
    assert_eq!(stores.runs().list().await.unwrap(), [id("atomic")]);

    // And a new process finds the snapshot.
    let reopened = fs_stores(root.path(), FsyncPolicy::EveryStep);
    assert_eq!(reopened.runs().load(run.id()).await.unwrap(), run);
}

/// Writes `text` as the snapshot of run `name` and expects `load` to say it is corrupt,
/// naming the file and giving a reason that contains `needle`.
async fn check_corrupt(name: &str, text: &str, needle: &str) {
    let root = tempfile::tempdir().unwrap();
    let stores = fs_stores(root.path(), FsyncPolicy::Relaxed);
    let path = stores.runs().snapshot_path(&id(name));
    fs::write(&path, text).unwrap();
    match stores.runs().load(&id(name)).await {
        Err(RunStoreError::Corrupt {
            id: run_id,
            location,
            reason,
        }) => {
            assert_eq!(run_id, id(name));
            assert_eq!(location, path.display().to_string());
            assert!(reason.contains(needle), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        text,
        "a bad snapshot is left as found"
    );
}

#[tokio::test]
async fn a_corrupt_snapshot_is_reported_naming_the_file() {
    let good = serde_json::to_string_pretty(&run("x")).unwrap();
    check_corrupt("x", &good[..good.len() / 2], "EOF while parsing").await;
    check_corrupt("x", "", "EOF while parsing").await;
    check_corrupt("x", "\u{0}\u{0}\u{0}", "expected value at line 1 column 1").await;
    check_corrupt("x", &good.replace("\"intake\"", "\"limbo\""), "limbo").await;
    // A snapshot of another run filed under this id.
    check_corrupt("y", &good, "it holds the snapshot of run x").await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_in_place_of_a_snapshot_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    fs::write(outside.path(), serde_json::to_vec(&run("link")).unwrap()).unwrap();
    let stores = fs_stores(root.path(), FsyncPolicy::EveryStep);
    let path = stores.runs().snapshot_path(&id("link"));
    std::os::unix::fs::symlink(outside.path(), &path).unwrap();

    let err = stores.runs().load(&id("link")).await.unwrap_err();
    assert!(matches!(err, RunStoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");

    // Saving replaces the link itself; the file it pointed at is untouched.
    let before = fs::read(outside.path()).unwrap();
    stores.runs().save(&run("link")).await.unwrap();
    assert_eq!(fs::read(outside.path()).unwrap(), before);
    assert!(fs::symlink_metadata(&path).unwrap().file_type().is_file());
}

#[test]
fn run_ids_cannot_spell_a_path() {
    for bad in ["../x", "/etc/passwd", "a\\b", "..", "x.json"] {
        assert!(bad.parse::<rein_run::RunId>().is_err(), "{bad:?}");
    }
}

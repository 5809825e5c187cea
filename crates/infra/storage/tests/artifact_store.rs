//! The artifact stores: round trips, write-once, verification on read, tampering, paths
//! that cannot escape the root, concurrent writers.

mod contract;
mod support;

use std::fs;
use std::path::Path;
use std::sync::Arc;

use rein_artifact::{
    ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, Checksum, DynArtifactStore,
    SharedArtifactStore, StoreOptions,
};
use rein_storage::{FsArtifactStore, FsConfig, FsStores, FsyncPolicy, MemoryArtifactStore};
use support::{POLICIES, fs_stores};

#[test]
fn stores_are_send_sync_and_dyn_usable() {
    fn shared(_: SharedArtifactStore) {}
    let root = tempfile::tempdir().unwrap();
    shared(Arc::new(MemoryArtifactStore::new()));
    shared(Arc::new(
        fs_stores(root.path(), FsyncPolicy::EveryStep)
            .artifacts()
            .clone(),
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_behaves() {
    contract::artifact_store(&MemoryArtifactStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_store_behaves_under_every_policy() {
    for policy in POLICIES {
        let root = tempfile::tempdir().unwrap();
        let stores = fs_stores(root.path(), policy);
        contract::artifact_store(stores.artifacts()).await;
        assert_no_temp_files(stores.artifacts().dir());
    }
}

#[tokio::test]
async fn content_above_the_limit_is_refused_before_anything_is_stored() {
    let root = tempfile::tempdir().unwrap();
    let config = FsConfig::default().with_max_artifact_size(4);
    let stores = FsStores::open_with(root.path(), config).unwrap();
    let memory = MemoryArtifactStore::new().with_max_size(4);
    for store in [
        &stores.artifacts().clone() as &dyn DynArtifactStore,
        &memory,
    ] {
        contract::artifact_store_limit(store).await;
    }
    assert_eq!(support::file_names(stores.artifacts().dir()).len(), 1);
}

/// 16 writers of the same content at once, then 16 of distinct content: every put succeeds
/// and every read verifies. Two store instances on one root stand in for two processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_are_safe() {
    let root = tempfile::tempdir().unwrap();
    let a = Arc::new(
        fs_stores(root.path(), FsyncPolicy::EveryStep)
            .artifacts()
            .clone(),
    );
    let b = Arc::new(
        fs_stores(root.path(), FsyncPolicy::Relaxed)
            .artifacts()
            .clone(),
    );
    let memory = Arc::new(MemoryArtifactStore::new());
    let stores: [Arc<dyn DynArtifactStore>; 4] = [a.clone(), b, a, memory];
    contract::artifact_store_concurrent(&stores).await;
    assert_no_temp_files(&root.path().join("artifacts"));
}

/// A filesystem store with `bytes` stored, and their reference.
async fn stored(root: &Path, bytes: &[u8]) -> (FsArtifactStore, ArtifactRef) {
    let store = fs_stores(root, FsyncPolicy::EveryStep).artifacts().clone();
    let reference = store
        .put(bytes.to_vec(), StoreOptions::new())
        .await
        .unwrap();
    (store, reference)
}

#[tokio::test]
async fn tampered_content_fails_verification_and_a_new_put_repairs_it() {
    let root = tempfile::tempdir().unwrap();
    let (store, reference) = stored(root.path(), b"the original content").await;
    let path = store.content_path(reference.id());
    for tampered in [
        b"the 0riginal content".to_vec(),  // a byte changed
        b"the original conten".to_vec(),   // truncated
        b"the original content!".to_vec(), // grown
        Vec::new(),
    ] {
        fs::write(&path, &tampered).unwrap();
        match store.get(reference.id()).await {
            Err(ArtifactError::ChecksumMismatch {
                id,
                expected,
                actual,
            }) => {
                assert_eq!(id, *reference.id());
                assert_eq!(expected, *reference.checksum());
                assert_eq!(actual, Checksum::of(&tampered));
            }
            other => panic!("expected a checksum mismatch, got {other:?}"),
        }
    }
    // `stat` does not read the content.
    assert_eq!(store.stat(reference.id()).await.unwrap(), reference);
    // Putting the good content again rewrites the damaged file.
    store
        .put(b"the original content".to_vec(), StoreOptions::new())
        .await
        .unwrap();
    assert_eq!(
        store.get(reference.id()).await.unwrap().1,
        b"the original content"
    );
}

/// Lets `damage` change the store's files for some stored content, then expects `get` to
/// report the artifact corrupt with a reason containing `needle`.
async fn check_corrupt(damage: impl FnOnce(&FsArtifactStore, &ArtifactRef), needle: &str) {
    let root = tempfile::tempdir().unwrap();
    let (store, reference) = stored(root.path(), b"content").await;
    damage(&store, &reference);
    match store.get(reference.id()).await {
        Err(ArtifactError::Corrupt { id, reason }) => {
            assert_eq!(id, *reference.id());
            assert!(reason.contains(needle), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn damaged_files_are_corrupt_naming_the_file() {
    check_corrupt(
        |store, r| fs::write(store.reference_path(r.id()), "{not json").unwrap(),
        "is unreadable",
    )
    .await;
    check_corrupt(
        |store, r| {
            let other = ArtifactRef::for_content(b"other", StoreOptions::new());
            fs::write(
                store.reference_path(r.id()),
                serde_json::to_vec(&other).unwrap(),
            )
            .unwrap();
        },
        &format!("describes artifact {}", ArtifactId::of(b"other")),
    )
    .await;
    check_corrupt(
        |store, r| fs::remove_file(store.content_path(r.id())).unwrap(),
        "content file",
    )
    .await;
    // Every message names the file it is about.
    check_corrupt(
        |store, r| fs::write(store.reference_path(r.id()), "[]").unwrap(),
        ".json",
    )
    .await;
}

#[test]
fn ids_cannot_spell_a_path_and_paths_stay_under_the_root() {
    for bad in ["../x", "/etc/passwd", "..", "ab/../../x", &"A".repeat(64)] {
        assert!(bad.parse::<ArtifactId>().is_err(), "{bad:?}");
    }
    let root = tempfile::tempdir().unwrap();
    let stores = fs_stores(root.path(), FsyncPolicy::Relaxed);
    for content in [&b""[..], b"..", b"/"] {
        let id = ArtifactId::of(content);
        for path in [
            stores.artifacts().content_path(&id),
            stores.artifacts().reference_path(&id),
        ] {
            assert!(
                path.starts_with(stores.artifacts().dir()),
                "{}",
                path.display()
            );
            assert_eq!(
                path.components().count(),
                stores.artifacts().dir().components().count() + 2
            );
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_symlink_planted_at_a_shard_path_is_reported_not_followed() {
    use std::os::unix::fs::symlink;

    let content = b"secret-looking content".to_vec();
    let id = ArtifactId::of(&content);
    let outside = tempfile::tempdir().unwrap();
    // The outside files even hold the right bytes and reference: still not followed.
    let planted_bin = outside.path().join("planted.bin");
    let planted_json = outside.path().join("planted.json");
    fs::write(&planted_bin, &content).unwrap();
    let reference = ArtifactRef::for_content(&content, StoreOptions::new());
    fs::write(&planted_json, serde_json::to_vec(&reference).unwrap()).unwrap();

    // Links at the file paths.
    let root = tempfile::tempdir().unwrap();
    let store = fs_stores(root.path(), FsyncPolicy::EveryStep)
        .artifacts()
        .clone();
    let json_path = store.reference_path(&id);
    fs::create_dir_all(json_path.parent().unwrap()).unwrap();
    symlink(&planted_json, &json_path).unwrap();
    symlink(&planted_bin, store.content_path(&id)).unwrap();
    for result in [
        store.get(&id).await.map(|(r, _)| r),
        store.stat(&id).await,
        store.put(content.clone(), StoreOptions::new()).await,
    ] {
        match result {
            Err(ArtifactError::Corrupt { reason, .. }) => {
                assert!(reason.contains("symbolic link"), "{reason}");
                assert!(
                    reason.contains(&id.as_str()[2..]),
                    "names the file: {reason}"
                );
            }
            other => panic!("expected the link to be reported, got {other:?}"),
        }
    }

    // A link in place of the shard folder.
    let root = tempfile::tempdir().unwrap();
    let store = fs_stores(root.path(), FsyncPolicy::EveryStep)
        .artifacts()
        .clone();
    let (folder, _) = id.shard();
    symlink(outside.path(), store.dir().join(folder)).unwrap();
    for result in [
        store.get(&id).await.map(|(r, _)| r),
        store.put(content.clone(), StoreOptions::new()).await,
    ] {
        assert!(
            matches!(&result, Err(ArtifactError::Corrupt { reason, .. }) if reason.contains("symbolic link")),
            "{result:?}"
        );
    }
    assert_eq!(
        support::file_names(outside.path()),
        ["planted.bin", "planted.json"],
        "nothing was written outside the root"
    );
}

/// Fails if a temporary file is left anywhere under `dir`.
fn assert_no_temp_files(dir: &Path) {
    for shard in fs::read_dir(dir).unwrap() {
        let shard = shard.unwrap().path();
        for name in support::file_names(&shard) {
            assert!(
                std::path::Path::new(&name)
                    .extension()
                    .is_none_or(|e| e != "tmp"),
                "left behind: {}",
                shard.join(name).display()
            );
        }
    }
}

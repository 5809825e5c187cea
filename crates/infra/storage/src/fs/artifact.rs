//! `FsArtifactStore`: content-addressed artifacts in sharded folders, verified on every read.

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_artifact::{ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, StoreOptions};

use super::FsyncPolicy;
use super::file::{self, Opened};
use crate::blocking;

/// An [`ArtifactStore`] on disk: `artifacts/<2 hex>/<62 hex>.bin` holds the bytes and
/// `….json` beside it the [`ArtifactRef`] of the first `put`.
///
/// Made by [`FsStores::open`](crate::FsStores::open); cheap to clone (clones share the
/// directory).
///
/// - **Addressing.** Every path is built from the [`ArtifactId`] alone with
///   [`ArtifactId::shard`]; an id is 64 hex digits, so no path leaves the root. A symbolic
///   link (or anything but a regular file or directory) found where the store expects its
///   own file or shard folder is reported as [`ArtifactError::Corrupt`], never followed.
/// - **Writes.** The bytes are written before the reference, each to a temporary file in
///   the same folder, synced, then moved into place: the bytes by a rename (every writer of
///   an id writes the same bytes), the reference by a hard link that fails if one is
///   already there, so the first `put`'s reference is kept. Concurrent writers of the same
///   content (threads or processes) are safe, and a reader never sees partial bytes or a
///   reference without its bytes. A `put` of stored content compares the
///   stored bytes with its own and repairs them if they were damaged.
/// - **Reads.** `get` reads at most the recorded size plus one byte and verifies the
///   checksum every time.
/// - **Durability.** Unless the [`FsyncPolicy`] is `Relaxed`, the files and the folder are
///   synced, so a returned reference survives a power cut. Under `Relaxed` a power cut may
///   damage recent content; reads then report it and the next `put` of it repairs it.
///
/// Content is hashed and written on tokio's blocking pool, never on the caller's task.
#[derive(Debug, Clone)]
pub struct FsArtifactStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    fsync: FsyncPolicy,
    max_size: Option<u64>,
}

/// The largest reference file read back: far above any real name and metadata, small
/// enough that a planted giant file cannot exhaust memory.
const MAX_REFERENCE_BYTES: u64 = 16 * 1024 * 1024;

impl FsArtifactStore {
    /// A store over `dir` (which exists).
    pub(crate) fn new(dir: PathBuf, fsync: FsyncPolicy, max_size: Option<u64>) -> Self {
        Self {
            inner: Arc::new(Inner {
                dir,
                fsync,
                max_size,
            }),
        }
    }

    /// The directory the artifacts live in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where the content of `id` is stored: `<dir>/<2 hex>/<62 hex>.bin`.
    ///
    /// ```
    /// use rein_artifact::ArtifactId;
    /// use rein_storage::FsStores;
    ///
    /// let root = tempfile::tempdir()?;
    /// let stores = FsStores::open(root.path())?;
    /// let id = ArtifactId::of(b"abc");
    /// let path = stores.artifacts().content_path(&id);
    /// assert!(path.starts_with(root.path()));
    /// assert!(path.ends_with("ba/7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.bin"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn content_path(&self, id: &ArtifactId) -> PathBuf {
        self.inner.paths(id).bin
    }

    /// Where the reference of `id` is stored: `<dir>/<2 hex>/<62 hex>.json`.
    #[must_use]
    pub fn reference_path(&self, id: &ArtifactId) -> PathBuf {
        self.inner.paths(id).json
    }
}

/// The paths of one artifact, all built from its id.
struct Paths {
    shard: PathBuf,
    bin: PathBuf,
    json: PathBuf,
}

impl Inner {
    fn paths(&self, id: &ArtifactId) -> Paths {
        let (folder, file) = id.shard();
        let shard = self.dir.join(folder);
        Paths {
            bin: shard.join(format!("{file}.bin")),
            json: shard.join(format!("{file}.json")),
            shard,
        }
    }

    /// The whole `put`, on a blocking thread.
    fn put(&self, bytes: &[u8], options: StoreOptions) -> Result<ArtifactRef, ArtifactError> {
        let reference = ArtifactRef::for_content(bytes, options);
        let id = reference.id();
        let paths = self.paths(id);
        let io = |what: &str, path: &Path| {
            let context = format!("{what} {}", path.display());
            move |source| ArtifactError::io(context, source)
        };

        // Under `Relaxed` a crash may leave a damaged file; reads verify it, and the next put
        // of the content repairs it.
        let sync = match self.fsync {
            FsyncPolicy::Relaxed => file::Sync::Relaxed,
            FsyncPolicy::EveryEntry | FsyncPolicy::EveryStep => file::Sync::Data,
        };
        let created_shard = file::ensure_dir(&paths.shard)
            .map_err(io("creating the folder", &paths.shard))?
            .map_err(|found| foreign(id, &paths.shard, found))?;

        // The bytes first: a reference must never be visible without them.
        let mut wrote = created_shard;
        match file::open_regular(&paths.bin, OpenOptions::new().read(true))
            .map_err(io("opening", &paths.bin))?
        {
            Opened::Missing => {
                // A rename, not `create_once`: racing writers of one id write the same
                // bytes, so whichever lands last changes nothing, and it saves two calls.
                file::replace(&paths.bin, bytes, sync).map_err(io("writing", &paths.bin))?;
                wrote = true;
            }
            Opened::File(stored, _) => {
                let limit = reference.size().saturating_add(1);
                let stored = file::read_up_to(stored, limit).map_err(io("reading", &paths.bin))?;
                if stored != bytes {
                    tracing::warn!(artifact = %id, path = %paths.bin.display(),
                        "stored artifact content was damaged; rewriting it from this put");
                    file::replace(&paths.bin, bytes, sync).map_err(io("rewriting", &paths.bin))?;
                    wrote = true;
                }
            }
            Opened::Foreign(found) => return Err(foreign(id, &paths.bin, found)),
        }

        match file::open_regular(&paths.json, OpenOptions::new().read(true))
            .map_err(io("opening", &paths.json))?
        {
            Opened::Missing => {
                encode(&reference)
                    .and_then(|json| file::create_once(&paths.json, &json, sync))
                    .map_err(io("writing", &paths.json))?;
                wrote = true;
            }
            Opened::File(stored, _) => {
                let stored = file::read_up_to(stored, MAX_REFERENCE_BYTES)
                    .map_err(io("reading", &paths.json))?;
                if decode(id, &paths.json, &stored).is_err() {
                    tracing::warn!(artifact = %id, path = %paths.json.display(),
                        "stored artifact reference was unreadable; rewriting it from this put");
                    encode(&reference)
                        .and_then(|json| file::replace(&paths.json, &json, sync))
                        .map_err(io("rewriting", &paths.json))?;
                    wrote = true;
                }
            }
            Opened::Foreign(found) => return Err(foreign(id, &paths.json, found)),
        }

        // Content found already stored was synced by the put that wrote it. (A put racing
        // that one may return before it syncs: the one narrow case where a returned
        // reference can be lost to a power cut under a durable policy.)
        if wrote && self.fsync != FsyncPolicy::Relaxed {
            file::sync_dir(&paths.shard).map_err(io("syncing the folder", &paths.shard))?;
            if created_shard {
                file::sync_dir(&self.dir).map_err(io("syncing the folder", &self.dir))?;
            }
        }
        Ok(reference)
    }

    /// The stored reference of `id` (checked to be for `id`), on a blocking thread.
    fn stat(&self, id: &ArtifactId, paths: &Paths) -> Result<ArtifactRef, ArtifactError> {
        match file::check_dir(&paths.shard) {
            Ok(None) => {}
            Ok(Some(found)) => return Err(foreign(id, &paths.shard, found)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ArtifactError::NotFound { id: id.clone() });
            }
            Err(e) => {
                let context = format!("inspecting {}", paths.shard.display());
                return Err(ArtifactError::io(context, e));
            }
        }
        let opened = file::open_regular(&paths.json, OpenOptions::new().read(true))
            .map_err(|e| ArtifactError::io(format!("opening {}", paths.json.display()), e))?;
        let stored = match opened {
            Opened::File(stored, _) => stored,
            Opened::Missing => return Err(ArtifactError::NotFound { id: id.clone() }),
            Opened::Foreign(found) => return Err(foreign(id, &paths.json, found)),
        };
        let bytes = file::read_up_to(stored, MAX_REFERENCE_BYTES)
            .map_err(|e| ArtifactError::io(format!("reading {}", paths.json.display()), e))?;
        decode(id, &paths.json, &bytes)
    }

    /// The verified reference and bytes of `id`, on a blocking thread.
    fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
        let paths = self.paths(id);
        let reference = self.stat(id, &paths)?;
        let opened = file::open_regular(&paths.bin, OpenOptions::new().read(true))
            .map_err(|e| ArtifactError::io(format!("opening {}", paths.bin.display()), e))?;
        let stored = match opened {
            Opened::File(stored, _) => stored,
            Opened::Missing => {
                return Err(ArtifactError::Corrupt {
                    id: id.clone(),
                    reason: format!(
                        "its reference is stored but its content file {} is missing",
                        paths.bin.display()
                    ),
                });
            }
            Opened::Foreign(found) => return Err(foreign(id, &paths.bin, found)),
        };
        // One byte more than recorded is enough to notice the file grew; a planted giant
        // file is never read whole.
        let bytes = file::read_up_to(stored, reference.size().saturating_add(1))
            .map_err(|e| ArtifactError::io(format!("reading {}", paths.bin.display()), e))?;
        reference.verify(&bytes).inspect_err(|err| {
            tracing::warn!(artifact = %id, path = %paths.bin.display(), %err,
                "artifact failed verification");
        })?;
        Ok((reference, bytes))
    }
}

impl ArtifactStore for FsArtifactStore {
    async fn put(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> Result<ArtifactRef, ArtifactError> {
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if let Some(limit) = self.inner.max_size.filter(|&limit| size > limit) {
            return Err(ArtifactError::TooLarge { size, limit });
        }
        let inner = Arc::clone(&self.inner);
        blocking::run(move || Ok(inner.put(&bytes, options)))
            .await
            .map_err(|e| ArtifactError::io("storing an artifact", e))?
    }

    async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
        let inner = Arc::clone(&self.inner);
        let owned = id.clone();
        blocking::run(move || Ok(inner.get(&owned)))
            .await
            .map_err(|e| ArtifactError::io(format!("reading artifact {id}"), e))?
    }

    async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
        let inner = Arc::clone(&self.inner);
        let owned = id.clone();
        blocking::run(move || Ok(inner.stat(&owned, &inner.paths(&owned))))
            .await
            .map_err(|e| ArtifactError::io(format!("reading artifact {id}"), e))?
    }
}

/// The reference as stored: compact JSON and a newline.
fn encode(reference: &ArtifactRef) -> io::Result<Vec<u8>> {
    let mut json = serde_json::to_vec(reference)?;
    json.push(b'\n');
    Ok(json)
}

/// Parses a stored reference and checks it is the reference of `id`.
fn decode(id: &ArtifactId, path: &Path, bytes: &[u8]) -> Result<ArtifactRef, ArtifactError> {
    let reference: ArtifactRef =
        serde_json::from_slice(bytes).map_err(|e| ArtifactError::Corrupt {
            id: id.clone(),
            reason: format!("its reference {} is unreadable: {e}", path.display()),
        })?;
    if reference.id() != id {
        return Err(ArtifactError::Corrupt {
            id: id.clone(),
            reason: format!(
                "its reference {} describes artifact {}",
                path.display(),
                reference.id()
            ),
        });
    }
    Ok(reference)
}

/// The error for a path where the store expected its own file or folder and found `found`.
fn foreign(id: &ArtifactId, path: &Path, found: &str) -> ArtifactError {
    ArtifactError::Corrupt {
        id: id.clone(),
        reason: format!(
            "{} is {found}, not a file the store wrote; it is not followed, remove it",
            path.display()
        ),
    }
}

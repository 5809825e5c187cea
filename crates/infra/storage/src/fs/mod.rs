//! The filesystem stores: `FsStores` opens one root directory holding `runs/`, `ledgers/`
//! and `artifacts/`, with an `FsConfig` saying how hard to push bytes to disk.

mod artifact;
mod file;
mod index;
mod layout;
mod ledger;
mod run;
mod stop;

use std::path::{Path, PathBuf};

pub use artifact::FsArtifactStore;
pub use index::{FileStamp, FsRunIndex, IndexedRun, Refreshed, RunIndexError, Stamp};
pub use layout::FsLayout;
pub use ledger::FsLedgerStore;
pub use run::FsRunStore;
pub use stop::FsStopRequests;

use crate::StorageError;

/// When the filesystem stores force written bytes to disk with `fsync`.
///
/// The policy trades durability against latency. It never trades away atomicity: a run
/// snapshot is replaced whole or not at all (by a process crash), a ledger's torn last line is cut by the write
/// of the next entry, and an artifact is verified on every read, under every policy.
///
/// | policy | a ledger entry is on disk when | snapshots | artifacts, new files |
/// |---|---|---|---|
/// | `EveryEntry` | `append` returns | replaced atomically, not synced | file and folder synced |
/// | `EveryStep` (default) | `sync(run_id)` returns (the engine calls it per step) | replaced atomically, not synced | file and folder synced |
/// | `Relaxed` | the OS writes it back (seconds) | replaced atomically, not synced | not synced |
///
/// Snapshots are never synced: the ledger is the durability point, and a snapshot a power
/// cut took, left behind its ledger or damaged is rebuilt from the ledger when the run is
/// opened. A new ledger file's folder is synced (unless `Relaxed`), so the ledger itself
/// is never lost with it.
///
/// With `Relaxed` a process crash loses nothing (every write has reached the OS); a power
/// cut or kernel crash may lose the last seconds, and may leave a damaged artifact, which
/// reads report and the next `put` of the same content repairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FsyncPolicy {
    /// Every ledger entry is on disk before `append` returns: one `fsync` per entry.
    EveryEntry,
    /// Ledger entries are on disk once `sync(run_id)` returns, at each step boundary: about
    /// one `fsync` per step however many entries it wrote.
    #[default]
    EveryStep,
    /// Nothing waits for the disk; the OS writes back when it will.
    Relaxed,
}

/// How the filesystem stores behave: durability, limits.
///
/// ```
/// use rein_storage::{FsConfig, FsyncPolicy};
///
/// let config = FsConfig::default()
///     .with_fsync(FsyncPolicy::EveryEntry)
///     .with_max_artifact_size(64 * 1024 * 1024);
/// assert_eq!(config.fsync(), FsyncPolicy::EveryEntry);
/// assert_eq!(config.max_artifact_size(), Some(64 * 1024 * 1024));
/// assert_eq!(FsConfig::default().fsync(), FsyncPolicy::EveryStep);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct FsConfig {
    fsync: FsyncPolicy,
    max_artifact_size: Option<u64>,
    max_open_ledgers: usize,
    reading: bool,
}

impl Default for FsConfig {
    fn default() -> Self {
        Self {
            fsync: FsyncPolicy::default(),
            max_artifact_size: None,
            max_open_ledgers: Self::DEFAULT_MAX_OPEN_LEDGERS,
            reading: false,
        }
    }
}

impl FsConfig {
    /// How many ledger files are kept open for appending by default.
    pub const DEFAULT_MAX_OPEN_LEDGERS: usize = 256;

    /// Sets when bytes are forced to disk.
    pub const fn with_fsync(mut self, fsync: FsyncPolicy) -> Self {
        self.fsync = fsync;
        self
    }

    /// Refuses artifacts larger than `bytes` with
    /// [`ArtifactError::TooLarge`](rein_artifact::ArtifactError::TooLarge).
    pub const fn with_max_artifact_size(mut self, bytes: u64) -> Self {
        self.max_artifact_size = Some(bytes);
        self
    }

    /// Keeps at most about `count` ledger files open for appending (at least 1). Past it,
    /// the least recently used idle handles are closed and reopened on their next use.
    pub fn with_max_open_ledgers(mut self, count: usize) -> Self {
        self.max_open_ledgers = count.max(1);
        self
    }

    /// Opens the stores to read what other processes write (a console, a report): a
    /// ledger whose last line is torn is loaded without it and left as it is — not locked,
    /// not taken over — so a reader never stands in the way of the process writing it or
    /// of the one that resumes its run. Stores opened so must not be written to.
    pub const fn reading(mut self) -> Self {
        self.reading = true;
        self
    }

    /// Whether the stores are opened only to read (see [`FsConfig::reading`]).
    #[must_use]
    pub const fn is_reading(&self) -> bool {
        self.reading
    }

    /// When bytes are forced to disk.
    #[must_use]
    pub const fn fsync(&self) -> FsyncPolicy {
        self.fsync
    }

    /// The largest artifact accepted, if limited.
    #[must_use]
    pub const fn max_artifact_size(&self) -> Option<u64> {
        self.max_artifact_size
    }

    /// How many ledger files are kept open for appending, at most (about).
    #[must_use]
    pub const fn max_open_ledgers(&self) -> usize {
        self.max_open_ledgers
    }
}

/// The three filesystem stores under one root directory.
///
/// ```text
/// <root>/runs/<run id>.json              run snapshots, replaced atomically
/// <root>/ledgers/<run id>.jsonl          one append-only JSON line per ledger entry
/// <root>/artifacts/<ab>/<cdef…>.bin      content, by SHA-256
/// <root>/artifacts/<ab>/<cdef…>.json     its reference
/// ```
///
/// Every path is built from a validated [`RunId`](rein_run::RunId) or
/// [`ArtifactId`](rein_artifact::ArtifactId), neither of which can hold a `/`, `\` or `.`,
/// so nothing is ever read or written outside the root.
///
/// One process should own a root at a time: ledgers are appended through handles this
/// process keeps open. (Artifacts alone are safe to share between processes.)
///
/// ```
/// use rein_storage::{FsConfig, FsStores, FsyncPolicy};
///
/// let root = tempfile::tempdir()?;
/// let stores = FsStores::open_with(root.path(), FsConfig::default().with_fsync(FsyncPolicy::Relaxed))?;
/// assert!(root.path().join("ledgers").is_dir());
/// let (runs, ledgers, artifacts) = stores.into_parts(); // each `Clone`, `Send + Sync`
/// # let _ = (runs, ledgers, artifacts);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FsStores {
    root: PathBuf,
    runs: FsRunStore,
    ledgers: FsLedgerStore,
    artifacts: FsArtifactStore,
}

impl FsStores {
    /// Opens (creating if needed) the stores under `root` with the default [`FsConfig`].
    ///
    /// It makes a few blocking system calls; call it while setting up, not on a hot path.
    ///
    /// # Errors
    /// [`StorageError`] naming the directory that cannot be created, or that is a file or a
    /// symbolic link instead of a directory.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, StorageError> {
        Self::open_with(root, FsConfig::default())
    }

    /// Opens (creating if needed) the stores under `root` with `config`.
    ///
    /// # Errors
    /// As [`FsStores::open`].
    pub fn open_with(root: impl AsRef<Path>, config: FsConfig) -> Result<Self, StorageError> {
        let root = root.as_ref().to_path_buf();
        std::fs::create_dir_all(&root).map_err(|source| StorageError::Io {
            path: root.clone(),
            source,
        })?;
        let dir = |name: &str| -> Result<PathBuf, StorageError> {
            let path = root.join(name);
            match file::ensure_dir(&path) {
                Ok(Ok(_)) => Ok(path),
                Ok(Err(found)) => Err(StorageError::NotADirectory { path, found }),
                Err(source) => Err(StorageError::Io { path, source }),
            }
        };
        let runs = FsRunStore::new(dir(FsLayout::RUNS)?);
        let mut ledgers = FsLedgerStore::new(
            dir(FsLayout::LEDGERS)?,
            config.fsync,
            config.max_open_ledgers,
        );
        if config.reading {
            ledgers = ledgers.reading();
        }
        let artifacts = FsArtifactStore::new(
            dir(FsLayout::ARTIFACTS)?,
            config.fsync,
            config.max_artifact_size,
        );
        if config.fsync != FsyncPolicy::Relaxed {
            file::sync_dir(&root).map_err(|source| StorageError::Io {
                path: root.clone(),
                source,
            })?;
        }
        Ok(Self {
            root,
            runs,
            ledgers,
            artifacts,
        })
    }

    /// The root directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The run snapshot store (`<root>/runs`).
    #[must_use]
    pub const fn runs(&self) -> &FsRunStore {
        &self.runs
    }

    /// The ledger store (`<root>/ledgers`).
    #[must_use]
    pub const fn ledgers(&self) -> &FsLedgerStore {
        &self.ledgers
    }

    /// The artifact store (`<root>/artifacts`).
    #[must_use]
    pub const fn artifacts(&self) -> &FsArtifactStore {
        &self.artifacts
    }

    /// The stop request store (`<root>/stops`): operators' aborts and interrupts of runs,
    /// for the engine that drives them.
    #[must_use]
    pub fn stop_requests(&self) -> FsStopRequests {
        FsStopRequests::new(self.root.join(FsLayout::STOPS))
    }

    /// The three stores, to hand to an engine.
    #[must_use]
    pub fn into_parts(self) -> (FsRunStore, FsLedgerStore, FsArtifactStore) {
        (self.runs, self.ledgers, self.artifacts)
    }
}

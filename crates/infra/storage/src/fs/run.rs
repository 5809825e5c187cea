//! `FsRunStore`: run snapshots as JSON files, replaced atomically.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_run::{Run, RunId, RunStore, RunStoreError};

use super::file::{self, Opened};
use crate::blocking;

/// A [`RunStore`] on disk: one pretty-printed JSON snapshot per run, `runs/<run id>.json`.
///
/// Made by [`FsStores::open`](crate::FsStores::open); cheap to clone.
///
/// - **Atomic.** `save` writes a temporary file in the same folder and renames it over the
///   snapshot: after a process crash `load` finds the old snapshot or the new one, never a
///   mix, whatever the [`FsyncPolicy`](crate::FsyncPolicy).
/// - **A cache, not synced.** The ledger is the durability point (DESIGN.md §7): a snapshot
///   is never forced to disk, so a step costs one `fsync` (the ledger's), not three. After a
///   power cut a snapshot may be missing, older than its ledger, or (its rename on disk, its
///   data not) unreadable; the engine rebuilds the run from its ledger when it opens it, and
///   says so in the `run_resumed` entry of a resume.
/// - **Strict.** A snapshot that does not parse, or holds another run, is
///   [`RunStoreError::Corrupt`] naming the file; a symbolic link in its place is refused.
/// - **Listing.** [`RunStore::list`] sorts ids as strings: chronological for the engine's
///   uuid v7 ids.
#[derive(Debug, Clone)]
pub struct FsRunStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
}

impl FsRunStore {
    /// A store over `dir` (which exists).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            inner: Arc::new(Inner { dir }),
        }
    }

    /// The directory the snapshots live in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where the snapshot of `id` is stored: `<dir>/<run id>.json`.
    #[must_use]
    pub fn snapshot_path(&self, id: &RunId) -> PathBuf {
        self.inner.path(id)
    }
}

impl Inner {
    fn path(&self, id: &RunId) -> PathBuf {
        super::FsLayout::snapshot_in(&self.dir, id)
    }

    fn save(&self, id: &RunId, json: &[u8]) -> Result<(), RunStoreError> {
        let path = self.path(id);
        // Replaced whole (temp file, rename) but not synced under any policy: the snapshot
        // is a cache of the ledger, which is synced, and a snapshot a power cut took or
        // damaged is rebuilt from it.
        file::replace(&path, json, file::Sync::Relaxed)
            .map_err(|source| io(format!("writing {}", path.display()), source))
    }

    fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        let path = self.path(id);
        let corrupt = |reason: String| RunStoreError::Corrupt {
            id: id.clone(),
            location: path.display().to_string(),
            reason,
        };
        let opened = file::open_regular(&path, OpenOptions::new().read(true))
            .map_err(|source| io(format!("opening {}", path.display()), source))?;
        let (stored, meta) = match opened {
            Opened::File(stored, meta) => (stored, meta),
            Opened::Missing => return Err(RunStoreError::NotFound { id: id.clone() }),
            Opened::Foreign(found) => {
                return Err(corrupt(format!(
                    "it is {found}, not a snapshot the store wrote; it is not followed"
                )));
            }
        };
        let bytes = file::read_up_to(stored, meta.len())
            .map_err(|source| io(format!("reading {}", path.display()), source))?;
        let run: Run = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(format!("it is not a valid run snapshot: {e}")))?;
        if run.id() != id {
            return Err(corrupt(format!(
                "it holds the snapshot of run {}",
                run.id()
            )));
        }
        Ok(run)
    }

    fn list(&self) -> Result<Vec<RunId>, RunStoreError> {
        let context = || format!("listing {}", self.dir.display());
        let mut ids = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(|source| io(context(), source))? {
            let entry = entry.map_err(|source| io(context(), source))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if file::is_temp(name) {
                continue;
            }
            match super::FsLayout::snapshot_run(name) {
                Some(id) => ids.push(id),
                None => tracing::debug!(file = name, dir = %self.dir.display(),
                    "skipping a file that is not a run snapshot"),
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }
}

impl RunStore for FsRunStore {
    async fn save(&self, run: &Run) -> Result<(), RunStoreError> {
        let id = run.id().clone();
        let json = serde_json::to_vec_pretty(run).map_err(|e| {
            io(
                format!("encoding the snapshot of run {id}"),
                io::Error::other(e),
            )
        })?;
        let inner = Arc::clone(&self.inner);
        blocking::run(move || Ok(inner.save(&id, &json)))
            .await
            .map_err(|source| io(format!("saving run {}", run.id()), source))?
    }

    async fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        let inner = Arc::clone(&self.inner);
        let owned = id.clone();
        blocking::run(move || Ok(inner.load(&owned)))
            .await
            .map_err(|source| io(format!("loading run {id}"), source))?
    }

    async fn list(&self) -> Result<Vec<RunId>, RunStoreError> {
        let inner = Arc::clone(&self.inner);
        blocking::run(move || Ok(inner.list()))
            .await
            .map_err(|source| io("listing runs".to_owned(), source))?
    }
}

/// A [`RunStoreError::Io`] saying what the store was doing.
fn io(context: String, source: io::Error) -> RunStoreError {
    RunStoreError::Io { context, source }
}

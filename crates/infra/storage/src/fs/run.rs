//! `FsRunStore`: run snapshots as JSON files, replaced atomically.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_run::{Run, RunId, RunStore, RunStoreError};

use super::FsyncPolicy;
use super::file::{self, Opened};
use crate::blocking;

/// A [`RunStore`] on disk: one pretty-printed JSON snapshot per run, `runs/<run id>.json`.
///
/// Made by [`FsStores::open`](crate::FsStores::open); cheap to clone.
///
/// - **Atomic.** `save` writes a temporary file in the same folder, syncs it, and renames
///   it over the snapshot: after a crash `load` finds the old snapshot or the new one,
///   never a mix, whatever the [`FsyncPolicy`].
/// - **Durable.** Unless the policy is `Relaxed`, the folder is synced after the rename, so
///   a returned `save` survives a power cut. One snapshot is the exception: a run's first,
///   anchored at its ledger's first entry ([`Run::ledger_head`] at `seq` 1), is replaced
///   atomically but its folder is synced by the run's next save. It holds nothing its ledger
///   does not (the engine saves it before that entry is even synced), so a power cut that
///   takes it leaves a run loaded from its ledger alone, as one with no snapshot is; the
///   next save (a pause, the end, a resume) makes both renames durable with one folder sync.
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
    fsync: FsyncPolicy,
}

impl FsRunStore {
    /// A store over `dir` (which exists).
    pub(crate) fn new(dir: PathBuf, fsync: FsyncPolicy) -> Self {
        Self {
            inner: Arc::new(Inner { dir, fsync }),
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

    fn save(&self, id: &RunId, json: &[u8], folder: FolderSync) -> Result<(), RunStoreError> {
        let path = self.path(id);
        // The data is synced under every policy: a snapshot is replaced whole or not at all.
        file::replace(&path, json, file::Sync::Data)
            .map_err(|source| io(format!("writing {}", path.display()), source))?;
        if folder == FolderSync::Now {
            file::sync_dir(&self.dir).map_err(|source| {
                io(format!("syncing the folder {}", self.dir.display()), source)
            })?;
        }
        Ok(())
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
        let folder = FolderSync::of(self.inner.fsync, run);
        let inner = Arc::clone(&self.inner);
        blocking::run(move || Ok(inner.save(&id, &json, folder)))
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

/// Whether a save syncs the snapshots' folder after its rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FolderSync {
    /// Before `save` returns: the snapshot survives a power cut.
    Now,
    /// With the run's next save (or never, under [`FsyncPolicy::Relaxed`]).
    Later,
}

impl FolderSync {
    /// When the folder is synced for a snapshot of `run` under `fsync`: never under
    /// `Relaxed`; later for the first snapshot of a run (anchored at its first entry, which
    /// proves nothing its ledger does not); now for every other.
    fn of(fsync: FsyncPolicy, run: &Run) -> Self {
        let first = run.ledger_head().is_some_and(|head| head.seq == 1);
        if fsync == FsyncPolicy::Relaxed || first {
            Self::Later
        } else {
            Self::Now
        }
    }
}

/// A [`RunStoreError::Io`] saying what the store was doing.
fn io(context: String, source: io::Error) -> RunStoreError {
    RunStoreError::Io { context, source }
}

#[cfg(test)]
mod tests {
    use rein_run::{Digest, LedgerHead};

    use super::*;

    fn anchored(seq: Option<u64>) -> Run {
        let mut run = Run::new(
            "r".parse().unwrap(),
            "g",
            serde_json::Map::new(),
            serde_json::Value::Null,
            rein_run::Timestamp::from_unix_millis(1),
        );
        if let Some(seq) = seq {
            run.anchor(LedgerHead::new(seq, Digest::of_bytes(b"e")))
                .unwrap();
        }
        run
    }

    #[test]
    fn only_a_runs_first_snapshot_waits_for_the_next_folder_sync() {
        use FolderSync::{Later, Now};
        let policies = [
            FsyncPolicy::EveryEntry,
            FsyncPolicy::EveryStep,
            FsyncPolicy::Relaxed,
        ];
        for (head, want) in [
            (None, [Now, Now, Later]),
            (Some(1), [Later, Later, Later]),
            (Some(2), [Now, Now, Later]),
            (Some(40), [Now, Now, Later]),
        ] {
            let run = anchored(head);
            let got = policies.map(|fsync| FolderSync::of(fsync, &run));
            assert_eq!(got, want, "head {head:?}");
        }
    }
}

//! `FsStopRequests`: stop requests as small JSON files, `stops/<run id>.json`, one per run.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rein_run::{RunId, RunStoreError, StopRequest, StopRequestStore};

use super::file::{self, Opened};
use crate::blocking;

/// The longest stop request file read back (a request is a few hundred bytes).
const MAX_REQUEST_BYTES: u64 = 64 * 1024;

/// The file in the stops folder whose lock writers take (never a request: run ids cannot
/// start with a dot).
const LOCK_FILE: &str = ".lock";

/// A [`StopRequestStore`] on disk: `<root>/stops/<run id>.json`, written by any process
/// (an operator's console) and read by the one driving the run.
///
/// Made by [`FsStores::stop_requests`](crate::FsStores::stop_requests); cheap to clone.
///
/// - **Durable.** A request is written to a temporary file, synced, renamed into place, and
///   the folder synced, before `request` returns: it survives a crash of either process.
/// - **An abort stands.** A later interrupt never replaces a waiting abort
///   ([`StopRequest::then`]), also when two processes ask at once: a request is read,
///   decided and written under the folder's lock (`stops/.lock`).
/// - **Lazy.** The `stops` folder is made by the first request; a data directory that never
///   had one is not touched.
///
/// ```
/// use rein_run::{StopKind, StopRequest, StopRequestStore, Timestamp};
/// use rein_storage::FsStores;
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let root = tempfile::tempdir()?;
/// let stops = FsStores::open(root.path())?.stop_requests();
/// let id = "run-1".parse()?;
/// assert_eq!(stops.pending(&id).await?, None);
/// let request = StopRequest::new(StopKind::Abort, "alice", "runaway", Timestamp::from_unix_millis(1));
/// stops.request(&id, &request).await?;
/// assert_eq!(stops.pending(&id).await?, Some(request.clone()));
/// stops.clear(&id, &request).await?;
/// assert_eq!(stops.pending(&id).await?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FsStopRequests {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
}

impl FsStopRequests {
    /// The store over folder `dir` (made when the first request is written).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            inner: Arc::new(Inner { dir }),
        }
    }
}

impl Inner {
    fn path(&self, id: &RunId) -> PathBuf {
        super::FsLayout::snapshot_in(&self.dir, id)
    }

    fn pending(&self, id: &RunId) -> Result<Option<StopRequest>, RunStoreError> {
        let path = self.path(id);
        let corrupt = |reason: String| RunStoreError::Corrupt {
            id: id.clone(),
            location: path.display().to_string(),
            reason,
        };
        let opened = file::open_regular(&path, OpenOptions::new().read(true))
            .map_err(|source| io(format!("opening {}", path.display()), source))?;
        let stored = match opened {
            Opened::File(stored, _) => stored,
            Opened::Missing => return Ok(None),
            Opened::Foreign(found) => {
                return Err(corrupt(format!(
                    "it is {found}, not a stop request the store wrote; it is not followed"
                )));
            }
        };
        let bytes = file::read_up_to(stored, MAX_REQUEST_BYTES)
            .map_err(|source| io(format!("reading {}", path.display()), source))?;
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            corrupt(format!(
                "it is not a stop request ({e}); remove the file and ask again"
            ))
        })
    }

    fn request(&self, id: &RunId, request: &StopRequest) -> Result<(), RunStoreError> {
        match file::ensure_dir(&self.dir) {
            Ok(Ok(_)) => {}
            Ok(Err(found)) => {
                return Err(io(
                    format!("making {}", self.dir.display()),
                    io::Error::other(format!("{found} is in its place, not a folder")),
                ));
            }
            Err(source) => return Err(io(format!("making {}", self.dir.display()), source)),
        }
        // Read, decide and write under the folder's lock: two processes asking at once
        // would otherwise both read "nothing waits", and an interrupt written last would
        // soften the abort written first.
        let _locked = self.lock()?;
        let standing = match self.pending(id) {
            Ok(Some(waiting)) => waiting.then(request.clone()),
            // A damaged request is replaced by a readable one.
            Ok(None) | Err(RunStoreError::Corrupt { .. }) => request.clone(),
            Err(e) => return Err(e),
        };
        let json = serde_json::to_vec(&standing).map_err(|e| {
            io(
                format!("encoding the stop request of run {id}"),
                io::Error::other(e),
            )
        })?;
        let path = self.path(id);
        file::replace(&path, &json, file::Sync::Data)
            .and_then(|()| file::sync_dir(&self.dir))
            .map_err(|source| io(format!("writing {}", path.display()), source))
    }

    /// The folder's exclusive lock (`stops/.lock`, `flock`), held until the file returned
    /// is dropped: one writer at a time, across processes. A filesystem that cannot lock
    /// is logged and tolerated (requests are still written whole).
    fn lock(&self) -> Result<Option<File>, RunStoreError> {
        let path = self.dir.join(LOCK_FILE);
        // Made once, never followed if something else is in its place.
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(io(format!("making {}", path.display()), source)),
        }
        let opened = match file::open_regular(&path, OpenOptions::new().read(true).write(true)) {
            Ok(Opened::File(opened, _)) => opened,
            Ok(Opened::Missing | Opened::Foreign(_)) => {
                tracing::warn!(path = %path.display(),
                    "the stop requests' lock file is not a regular file; writing without it");
                return Ok(None);
            }
            Err(source) => return Err(io(format!("opening {}", path.display()), source)),
        };
        match opened.lock() {
            Ok(()) => Ok(Some(opened)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e,
                    "cannot lock the stop requests' folder; two requests at once could soften an abort");
                Ok(None)
            }
        }
    }

    fn clear(&self, id: &RunId, honoured: &StopRequest) -> Result<(), RunStoreError> {
        // Nothing waits, or something else does: nothing to take, no lock to make.
        if self.pending(id)?.as_ref() != Some(honoured) {
            return Ok(());
        }
        // Compare and remove under the folder's lock, so that a request written between
        // the two (an abort after the interrupt being cleared) is never removed with it.
        let _locked = self.lock()?;
        if self.pending(id)?.as_ref() != Some(honoured) {
            return Ok(());
        }
        let path = self.path(id);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(io(format!("removing {}", path.display()), source)),
        }
    }
}

impl StopRequestStore for FsStopRequests {
    async fn request(&self, id: &RunId, request: &StopRequest) -> Result<(), RunStoreError> {
        let inner = Arc::clone(&self.inner);
        let (owned, request) = (id.clone(), request.clone());
        blocking::run(move || Ok(inner.request(&owned, &request)))
            .await
            .map_err(|source| io(format!("asking run {id} to stop"), source))?
    }

    async fn pending(&self, id: &RunId) -> Result<Option<StopRequest>, RunStoreError> {
        let inner = Arc::clone(&self.inner);
        let owned = id.clone();
        blocking::run(move || Ok(inner.pending(&owned)))
            .await
            .map_err(|source| io(format!("reading the stop request of run {id}"), source))?
    }

    async fn clear(&self, id: &RunId, honoured: &StopRequest) -> Result<(), RunStoreError> {
        let inner = Arc::clone(&self.inner);
        let (owned, honoured) = (id.clone(), honoured.clone());
        blocking::run(move || Ok(inner.clear(&owned, &honoured)))
            .await
            .map_err(|source| io(format!("clearing the stop request of run {id}"), source))?
    }
}

fn io(context: String, source: io::Error) -> RunStoreError {
    RunStoreError::Io { context, source }
}

//! `FsLedgerStore`: one append-only JSONL file per run, kept open, with torn-tail recovery.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};

use rein_ledger::{
    Entry, Ledger, LedgerLines, LedgerStore, LedgerStoreError, LoadedLedger, TornTail,
};
use rein_run::RunId;

use super::FsyncPolicy;
use super::file::{self, Opened};
use crate::blocking;
use crate::memory::shard::lock;
use crate::tip::{Link, Tip};

mod read;

use read::{parse, read_complete, tip_of};

/// A [`LedgerStore`] on disk: `ledgers/<run id>.jsonl`, one JSON line per entry
/// ([`Entry::write_json_line`]), only ever appended to.
///
/// Made by [`FsStores::open`](crate::FsStores::open); cheap to clone (clones share the open
/// files).
///
/// - **Open handles.** The first `append` or `load` of a run opens its file and keeps it
///   open for appending; later appends are one `write` (and, per [`FsyncPolicy`], one
///   `fdatasync`). Under `EveryStep` and `Relaxed` that `write` runs on the caller's thread:
///   it only copies a line into the page cache, and a hop to the blocking pool would cost
///   twenty times as much. Opening, `fsync` and loading run on the blocking pool. Idle
///   handles beyond
///   [`FsConfig::with_max_open_ledgers`](crate::FsConfig::with_max_open_ledgers) are
///   closed, least recently used first, never with unsynced entries.
/// - **Torn tail.** Opening a file whose last line has no newline (the process died while
///   writing it, so `append` never returned for it) takes the file's lock, logs a warning,
///   and reports the torn line in [`LoadedLedger::torn_tail`] for as long as the handle
///   stays open; the next `append` writes its entry over the torn line and cuts what is
///   left of it. The cut and the entry that can report it (the engine's `run_resumed`)
///   land in one write, so a process that dies before it leaves the torn line for the next
///   one to find, and report. Any *complete* line that does not parse, last or not, is
///   [`LedgerStoreError::Corrupt`] naming the file and line: it is never cut or skipped.
/// - **Chain.** `append` refuses an entry that does not follow the last stored one (wrong
///   number or `prev`), so a second writer cannot fork a run's chain; `load` verifies the
///   whole chain and refuses a broken one with [`LedgerStoreError::Broken`].
/// - **Durability.** See [`FsyncPolicy`]: `sync(run_id)` is where `EveryStep` pays its one
///   `fdatasync` per step.
///
/// Each run's file has its own lock, held for one operation and never across an `.await`.
#[derive(Debug, Clone)]
pub struct FsLedgerStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    fsync: FsyncPolicy,
    max_open: usize,
    /// Opened only to read (`FsConfig::reading`): a torn last line is read around, never
    /// locked and taken over.
    reading: bool,
    slots: Mutex<HashMap<RunId, Arc<Slot>>>,
    clock: AtomicU64,
}

/// One run's ledger file: open or not yet (or no longer) open.
#[derive(Debug)]
struct Slot {
    last_used: AtomicU64,
    file: Mutex<Option<OpenLedger>>,
}

/// An open ledger file and what the store knows about its end.
#[derive(Debug)]
struct OpenLedger {
    file: File,
    /// The file's length: where the next line starts.
    len: u64,
    /// The end of the chain, once known (found on the first append after opening).
    tip: Option<Tip>,
    /// The torn last line found when the file was opened.
    torn: Option<TornTail>,
    /// The file's length with that torn line, until the first append writes over it.
    uncut: Option<u64>,
    /// Whether entries were written since the last `fdatasync` (only tracked for
    /// [`FsyncPolicy::EveryStep`]).
    dirty: bool,
    /// Whether this handle holds the file's exclusive lock (taken before the first append,
    /// or on opening a file with a torn tail; released when the handle closes).
    locked: bool,
}

impl FsLedgerStore {
    /// A store over `dir` (which exists).
    pub(crate) fn new(dir: PathBuf, fsync: FsyncPolicy, max_open: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                dir,
                fsync,
                max_open: max_open.max(1),
                reading: false,
                slots: Mutex::default(),
                clock: AtomicU64::new(0),
            }),
        }
    }

    /// The same store, opened only to read (see `FsConfig::reading`).
    pub(crate) fn reading(mut self) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.reading = true;
        }
        self
    }

    /// The directory the ledgers live in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where the ledger of `run_id` is stored: `<dir>/<run id>.jsonl`.
    #[must_use]
    pub fn ledger_path(&self, run_id: &RunId) -> PathBuf {
        self.inner.path(run_id)
    }
}

impl Inner {
    fn path(&self, run_id: &RunId) -> PathBuf {
        super::FsLayout::ledger_in(&self.dir, run_id)
    }

    /// The slot of `run_id`, made if missing (closing idle handles when there are too many).
    fn slot(&self, run_id: &RunId) -> Arc<Slot> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(run_id) {
            slot.last_used.store(now, Ordering::Relaxed);
            return Arc::clone(slot);
        }
        if slots.len() >= self.max_open {
            evict(&mut slots, self.max_open / 2);
        }
        let slot = Arc::new(Slot {
            last_used: AtomicU64::new(now),
            file: Mutex::new(None),
        });
        slots.insert(run_id.clone(), Arc::clone(&slot));
        slot
    }

    /// The slot of `run_id` if this process has one.
    fn existing_slot(&self, run_id: &RunId) -> Option<Arc<Slot>> {
        lock(&self.slots).get(run_id).map(Arc::clone)
    }

    /// Opens the ledger file of `run_id` at `path` (creating it if `create`), locks it when
    /// its last line is torn (the first append writes over it), and returns the handle with
    /// the file's complete lines. `None` if it does not exist and `create` is false.
    fn open(
        &self,
        run_id: &RunId,
        path: &Path,
        create: bool,
    ) -> Result<Option<(OpenLedger, Vec<u8>)>, LedgerStoreError> {
        let io_error = |what: &str| {
            let context = format!("{what} {}", path.display());
            move |source| LedgerStoreError::Io { context, source }
        };
        let mut options = OpenOptions::new();
        options.read(true).append(true);
        let (file, len, created) =
            match file::open_regular(path, &options).map_err(io_error("opening"))? {
                Opened::File(file, meta) => (file, meta.len(), false),
                Opened::Missing if !create => return Ok(None),
                Opened::Missing => {
                    let file = options
                        .create_new(true)
                        .open(path)
                        .map_err(io_error("creating"))?;
                    (file, 0, true)
                }
                Opened::Foreign(found) => {
                    return Err(io_error("opening")(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("it is {found}, not a ledger the store wrote; it is not followed"),
                    )));
                }
            };
        if created && self.fsync != FsyncPolicy::Relaxed {
            file::sync_dir(&self.dir).map_err(io_error("syncing the folder of"))?;
        }

        let mut bytes = file::read_up_to(&file, len).map_err(io_error("reading"))?;
        let lines = LedgerLines::split(&bytes);
        let complete = lines.complete().len();
        let torn = lines.torn();
        let mut locked = false;
        if let Some(tail) = torn.filter(|_| !self.reading) {
            // A torn line is cut only from a ledger that is whole without it: a damaged
            // file keeps every byte for whoever repairs it, and the error says what is wrong.
            let entries = parse(path, lines)?;
            Ledger::from_entries(run_id.clone(), entries).map_err(|source| {
                LedgerStoreError::Broken {
                    run_id: run_id.clone(),
                    source,
                }
            })?;
            // Only a writer that is gone leaves a torn line: take it over only under the
            // lock, never the line a live writer in another process is in the middle of.
            // It is cut by the first append, in the same write as that entry: cut now, a
            // process that died before its next entry would leave no trace of the cut.
            lock_for_writing(&file, path)?;
            locked = true;
            tracing::warn!(path = %path.display(), line = tail.line, bytes = tail.bytes,
                "found a torn last line in a ledger (the process stopped while writing it); \
                 the next entry is written over it");
        }
        // A reading store reads around a torn line too, and leaves it to the writer (or to
        // whoever resumes the run).
        bytes.truncate(complete);
        let open = OpenLedger {
            file,
            len: complete as u64,
            tip: None,
            torn,
            uncut: torn.map(|_| len),
            dirty: false,
            locked,
        };
        Ok(Some((open, bytes)))
    }

    /// Writes `line`, the JSON line of the entry linked by `link`, to the ledger of `run_id`,
    /// opening the file first if needed. Blocking.
    fn append(
        &self,
        run_id: &RunId,
        slot: &Slot,
        link: Link,
        line: &[u8],
    ) -> Result<(), LedgerStoreError> {
        let mut guard = lock(&slot.file);
        let mut fresh = None;
        let open = match &mut *guard {
            Some(open) => open,
            empty => {
                let path = self.path(run_id);
                let opened = self.open(run_id, &path, true)?;
                let (open, bytes) = opened.ok_or_else(|| LedgerStoreError::Io {
                    context: format!("creating {}", path.display()),
                    source: io::ErrorKind::NotFound.into(),
                })?;
                fresh = Some(bytes);
                empty.insert(open)
            }
        };
        if open.tip.is_none() {
            let path = self.path(run_id);
            if !open.locked {
                // One writer per ledger across processes; and what this handle read must
                // still be the whole file, or another process wrote since.
                lock_for_writing(&open.file, &path)?;
                open.locked = true;
                let now = open.file.metadata().map(|m| m.len());
                if now.as_ref().ok() != Some(&open.len) {
                    *guard = None;
                    return Err(LedgerStoreError::Io {
                        context: format!("appending entry {} to {}", link.seq(), path.display()),
                        source: io::Error::other(
                            "the ledger changed since this process read it: another process \
                             wrote to it; load the run again",
                        ),
                    });
                }
            }
            let bytes = match fresh {
                Some(bytes) => bytes,
                None => read_complete(&path, open.len)?,
            };
            open.tip = Some(tip_of(&path, &bytes)?);
        }
        self.write(run_id, &mut guard, link, line)
    }

    /// The fast path of [`Inner::append`], on the caller's thread: when the run's file is
    /// open, its tip known, its lock free and no `fsync` is due, an append is one `write`
    /// into the page cache (about a microsecond, like a log line), not a hop to the
    /// blocking pool (tens of microseconds). `None` when the slow path must run.
    fn try_append_inline(
        &self,
        run_id: &RunId,
        slot: &Slot,
        link: Link,
        line: &[u8],
    ) -> Option<Result<(), LedgerStoreError>> {
        if self.fsync == FsyncPolicy::EveryEntry {
            return None;
        }
        let mut guard = slot.file.try_lock().ok()?;
        guard.as_ref()?.tip?;
        Some(self.write(run_id, &mut guard, link, line))
    }

    /// Checks `link` against the open file's tip, writes `line`, and fsyncs per policy. On
    /// a failed write the handle is dropped (the next open cuts any partial line).
    fn write(
        &self,
        run_id: &RunId,
        state: &mut Option<OpenLedger>,
        link: Link,
        line: &[u8],
    ) -> Result<(), LedgerStoreError> {
        let failed = |source| LedgerStoreError::Io {
            context: format!(
                "appending entry {} to {}",
                link.seq(),
                self.path(run_id).display()
            ),
            source,
        };
        let Some(open) = state.as_mut() else {
            return Err(failed(io::Error::other("the ledger file is not open")));
        };
        let Some(tip) = open.tip else {
            return Err(failed(io::Error::other(
                "the ledger's last entry is unknown",
            )));
        };
        tip.check(link, || self.path(run_id).display().to_string())?;

        let written = match open.uncut {
            Some(on_disk) => file::write_over_torn(&self.path(run_id), open.len, on_disk, line),
            None => open.file.write_all(line),
        };
        let written = written.and_then(|()| match self.fsync {
            FsyncPolicy::EveryEntry => open.file.sync_data(),
            FsyncPolicy::EveryStep | FsyncPolicy::Relaxed => Ok(()),
        });
        if let Err(source) = written {
            // Leave no partial line behind; if even that fails, the next open finds it torn.
            // A torn line found on opening stays for the next open to report.
            if open.uncut.is_none() {
                let _ = open.file.set_len(open.len);
            }
            *state = None;
            return Err(failed(source));
        }
        open.uncut = None;
        open.len += line.len() as u64;
        open.tip = Some(Tip::after(link));
        open.dirty = self.fsync == FsyncPolicy::EveryStep;
        Ok(())
    }

    /// Makes every entry written to `slot`'s file durable.
    fn sync(&self, run_id: &RunId, slot: &Slot) -> Result<(), LedgerStoreError> {
        let mut guard = lock(&slot.file);
        let Some(open) = guard.as_mut().filter(|open| open.dirty) else {
            return Ok(());
        };
        if let Err(source) = open.file.sync_data() {
            // After a failed fsync the kernel may have dropped the dirty pages; never
            // pretend a later fsync of this handle covers them.
            *guard = None;
            return Err(LedgerStoreError::Io {
                context: format!("syncing {}", self.path(run_id).display()),
                source,
            });
        }
        open.dirty = false;
        Ok(())
    }
}

impl LedgerStore for FsLedgerStore {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        // The line the entry was sealed with: written as is, never encoded again.
        let slot = self.inner.slot(entry.run_id());
        let link = Link::of(entry);
        if let Some(done) =
            self.inner
                .try_append_inline(entry.run_id(), &slot, link, entry.json_line())
        {
            return done;
        }
        let inner = Arc::clone(&self.inner);
        let run_id = entry.run_id().clone();
        let line = entry.shared_json_line();
        blocking::run(move || Ok(inner.append(&run_id, &slot, link, &line)))
            .await
            .map_err(|source| LedgerStoreError::Io {
                context: format!("appending entry {} of run {}", entry.seq(), entry.run_id()),
                source,
            })?
    }

    /// `Some` when the run's file is open, its last entry known, its lock free and no fsync
    /// is due for this entry (under [`FsyncPolicy::EveryStep`] and
    /// [`FsyncPolicy::Relaxed`]): one `write` into the page cache, as `append` does then.
    fn try_append_now(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        // As `append` does: finds (or makes) the run's slot and marks it recently used.
        let slot = self.inner.slot(entry.run_id());
        self.inner
            .try_append_inline(entry.run_id(), &slot, Link::of(entry), entry.json_line())
    }

    async fn sync(&self, run_id: &RunId) -> Result<(), LedgerStoreError> {
        if self.inner.fsync != FsyncPolicy::EveryStep {
            return Ok(());
        }
        let Some(slot) = self.inner.existing_slot(run_id) else {
            return Ok(());
        };
        if !slot.is_dirty_or_busy() {
            // Everything written is on disk already: no hop to the blocking pool.
            return Ok(());
        }
        let inner = Arc::clone(&self.inner);
        let owned = run_id.clone();
        blocking::run(move || Ok(inner.sync(&owned, &slot)))
            .await
            .map_err(|source| LedgerStoreError::Io {
                context: format!("syncing the ledger of run {run_id}"),
                source,
            })?
    }

    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        let slot = self.inner.slot(run_id);
        let inner = Arc::clone(&self.inner);
        let owned = run_id.clone();
        blocking::run(move || Ok(inner.load(&owned, &slot)))
            .await
            .map_err(|source| LedgerStoreError::Io {
                context: format!("loading the ledger of run {run_id}"),
                source,
            })?
    }

    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        let inner = Arc::clone(&self.inner);
        blocking::run(move || Ok(inner.list()))
            .await
            .map_err(|source| LedgerStoreError::Io {
                context: "listing ledgers".to_owned(),
                source,
            })?
    }
}

/// Closes idle handles, least recently used first, until at most `keep` slots remain or
/// none is idle. A slot is idle when nobody holds it and it has no unsynced entries.
fn evict(slots: &mut HashMap<RunId, Arc<Slot>>, keep: usize) {
    let mut idle: Vec<(u64, RunId)> = slots
        .iter()
        .filter(|(_, slot)| Arc::strong_count(slot) == 1 && !slot.is_dirty_or_busy())
        .map(|(id, slot)| (slot.last_used.load(Ordering::Relaxed), id.clone()))
        .collect();
    idle.sort_unstable();
    let excess = slots.len().saturating_sub(keep);
    for (_, id) in idle.into_iter().take(excess) {
        slots.remove(&id);
    }
}

impl Slot {
    /// Whether the slot is in use right now or holds entries not yet synced.
    fn is_dirty_or_busy(&self) -> bool {
        match self.file.try_lock() {
            Ok(guard) => guard.as_ref().is_some_and(|open| open.dirty),
            Err(TryLockError::Poisoned(poisoned)) => poisoned
                .into_inner()
                .as_ref()
                .is_some_and(|open| open.dirty),
            Err(TryLockError::WouldBlock) => true,
        }
    }
}

/// Takes `file`'s exclusive advisory lock (`flock`), held until the handle closes, so that
/// one process at a time appends to a ledger or cuts its torn tail. Another process holding
/// it is an error; a filesystem that cannot lock is logged and tolerated (the chain check
/// on append still refuses most forks).
fn lock_for_writing(file: &File, path: &Path) -> Result<(), LedgerStoreError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(LedgerStoreError::Io {
            context: format!("locking {} for writing", path.display()),
            source: io::Error::new(
                io::ErrorKind::WouldBlock,
                "another process is writing this ledger; let it finish, or stop it, before \
                 resuming the run here",
            ),
        }),
        Err(std::fs::TryLockError::Error(e)) => {
            tracing::warn!(path = %path.display(), error = %e,
                "cannot lock the ledger file; two processes writing it at once would fork it");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;

//! `MemoryLedgerStore`: run ledgers kept in process memory.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use rein_ledger::{Entry, EntryKind, Ledger, LedgerStore, LedgerStoreError, LoadedLedger};
use rein_run::RunId;

use super::shard::{Sharded, lock};
use crate::blocking;
use crate::tip::{Link, Tip};

/// A [`LedgerStore`] that keeps entries in memory, with the same checks as the filesystem
/// store: an appended entry must follow the stored chain, and `load` verifies it.
///
/// It keeps what the filesystem store writes: each entry's JSON line
/// ([`Entry::json_line`]), one after the other in one buffer per run, so an append costs
/// no encoding and, most of the time, no allocation, and a stored entry takes the few
/// hundred bytes of its line. A run whose drive ended (completed, failed, paused,
/// interrupted) keeps no spare room. `load` reads the lines back as the filesystem store
/// does.
///
/// Each run's entries have their own lock, so concurrent runs never wait on each other;
/// `sync` has nothing to do. Nothing survives the process, so nothing is ever torn.
///
/// ```
/// use rein_ledger::{EntryKind, Ledger, LedgerStore};
/// use rein_run::{State, Timestamp};
/// use rein_storage::MemoryLedgerStore;
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let store = MemoryLedgerStore::new();
/// let mut ledger = Ledger::new("run-1".parse()?);
/// let entry = ledger.append(Timestamp::from_unix_millis(0), State::Intake,
///     EntryKind::Steering { note: "hello".into() });
/// store.append(entry).await?;
/// store.sync(ledger.run_id()).await?;
/// let loaded = store.load(ledger.run_id()).await?;
/// assert_eq!(loaded.ledger, ledger);
/// assert_eq!(loaded.torn_tail, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MemoryLedgerStore {
    ledgers: Sharded<RunId, Stored>,
    created: AtomicU64,
    /// This store among the stores of the process, for [`RECENT`].
    id: u64,
}

/// The run a thread last appended to, and in which store. An engine appends a run's
/// entries one after another on the task that drives it, so most appends find their run
/// here and skip the shard lookup (hashing the id, a shard lock, a map probe). It holds the
/// run's lines weakly: it never keeps a store's data alive, and a stale one is looked up
/// again.
struct Recent {
    store: u64,
    run_id: RunId,
    lines: Weak<Mutex<Lines>>,
}

thread_local! {
    static RECENT: RefCell<Option<Recent>> = const { RefCell::new(None) };
}

/// Numbers stores, so [`Recent`] never mistakes one for another.
static STORES: AtomicU64 = AtomicU64::new(0);

impl Default for MemoryLedgerStore {
    fn default() -> Self {
        Self {
            ledgers: Sharded::default(),
            created: AtomicU64::new(0),
            id: STORES.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// One run's entries, and when its first entry came, for [`LedgerStore::list`]'s order.
#[derive(Debug)]
struct Stored {
    first_appended: u64,
    lines: Arc<Mutex<Lines>>,
}

/// A run's JSON lines, oldest first, and where its chain ends.
#[derive(Debug)]
struct Lines {
    /// The lines, one after the other, each ending in a newline.
    bytes: Vec<u8>,
    /// Where each line ends in `bytes`.
    ends: Vec<usize>,
    tip: Tip,
}

impl Default for Lines {
    fn default() -> Self {
        Self {
            bytes: Vec::new(),
            ends: Vec::new(),
            tip: Tip::EMPTY,
        }
    }
}

impl Lines {
    /// Room a run's buffer starts with: a short run's lines fit without growing it often.
    const FIRST_BYTES: usize = 8 * 1024;
    const FIRST_LINES: usize = 32;

    /// Keeps `entry`'s line after the others.
    fn push(&mut self, entry: &Entry) {
        if self.ends.is_empty() {
            self.bytes.reserve(Self::FIRST_BYTES);
            self.ends.reserve(Self::FIRST_LINES);
        }
        self.bytes.extend_from_slice(entry.json_line());
        self.ends.push(self.bytes.len());
        if ends_a_drive(entry.event()) {
            // Nothing may follow for a long time, or ever: no spare room is kept.
            self.bytes.shrink_to_fit();
            self.ends.shrink_to_fit();
        }
    }

    /// The lines, oldest first.
    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.bytes[start..end])
    }
}

/// Whether a run's drive stops with this entry: it ended, paused or was interrupted.
const fn ends_a_drive(event: &EntryKind) -> bool {
    matches!(
        event,
        EntryKind::RunCompleted { .. }
            | EntryKind::RunFailed { .. }
            | EntryKind::RunPaused { .. }
            | EntryKind::RunInterrupted { .. }
    )
}

impl MemoryLedgerStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The lines of `run_id` if this thread's last append was to that run of this store.
    fn recent(&self, run_id: &RunId) -> Option<Arc<Mutex<Lines>>> {
        RECENT.with(|recent| {
            let recent = recent.try_borrow().ok()?;
            let recent = recent.as_ref()?;
            (recent.store == self.id && recent.run_id == *run_id)
                .then(|| recent.lines.upgrade())
                .flatten()
        })
    }

    /// Makes `run_id` this thread's last appended run.
    fn remember(&self, run_id: &RunId, lines: &Arc<Mutex<Lines>>) {
        RECENT.with(|recent| {
            if let Ok(mut recent) = recent.try_borrow_mut() {
                *recent = Some(Recent {
                    store: self.id,
                    run_id: run_id.clone(),
                    lines: Arc::downgrade(lines),
                });
            }
        });
    }

    fn lines(&self, run_id: &RunId) -> Option<Arc<Mutex<Lines>>> {
        let shard = self.ledgers.lock(run_id);
        shard.get(run_id).map(|stored| Arc::clone(&stored.lines))
    }
}

impl MemoryLedgerStore {
    /// [`LedgerStore::append`]'s work, which never waits.
    fn append_now(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        let run_id = entry.run_id();
        let lines = self.recent(run_id).unwrap_or_else(|| {
            let lines = self.lines(run_id).unwrap_or_else(|| {
                let mut shard = self.ledgers.lock(run_id);
                let stored = shard.entry(run_id.clone()).or_insert_with(|| Stored {
                    first_appended: self.created.fetch_add(1, Ordering::Relaxed),
                    lines: Arc::default(),
                });
                Arc::clone(&stored.lines)
            });
            self.remember(run_id, &lines);
            lines
        });
        let mut lines = lock(&lines);
        let link = Link::of(entry);
        lines
            .tip
            .check(link, || format!("the in-memory ledger of run {run_id}"))?;
        lines.push(entry);
        lines.tip = Tip::after(link);
        Ok(())
    }
}

impl LedgerStore for MemoryLedgerStore {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        self.append_now(entry)
    }

    /// Always `Some`: an in-memory append never waits.
    fn try_append_now(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        Some(self.append_now(entry))
    }

    fn sync(&self, _run_id: &RunId) -> impl Future<Output = Result<(), LedgerStoreError>> + Send {
        Synced
    }

    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        let lines = self
            .lines(run_id)
            .ok_or_else(|| LedgerStoreError::NotFound {
                run_id: run_id.clone(),
            })?;
        // A copy of the lines, so that appends to the run go on while they are read.
        let lines = {
            let lines = lock(&lines);
            Lines {
                bytes: lines.bytes.clone(),
                ends: lines.ends.clone(),
                tip: lines.tip,
            }
        };
        // Reading and verifying every entry: long ledgers are done off the caller's task.
        let owned = run_id.clone();
        let bytes = lines.bytes.len();
        let verified = blocking::compute(bytes, move || {
            let entries = lines
                .iter()
                .zip(1u64..)
                .map(|(line, number)| read_line(&owned, line, number))
                .collect::<Result<Vec<Entry>, _>>()?;
            Ledger::from_entries(owned.clone(), entries).map_err(|source| {
                LedgerStoreError::Broken {
                    run_id: owned,
                    source,
                }
            })
        })
        .await
        .map_err(|source| LedgerStoreError::Io {
            context: format!("verifying the in-memory ledger of run {run_id}"),
            source,
        })?;
        let ledger = verified?;
        Ok(LoadedLedger {
            ledger,
            torn_tail: None,
        })
    }

    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        let mut ids = Vec::new();
        self.ledgers
            .for_each(|id, stored| ids.push((stored.first_appended, id.clone())));
        ids.sort_unstable();
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }
}

/// Reads back line `number` of the in-memory ledger of `run_id`. Every line was made by
/// [`Entry`] itself, so this fails only if memory was corrupted.
fn read_line(run_id: &RunId, line: &[u8], number: u64) -> Result<Entry, LedgerStoreError> {
    serde_json::from_slice(line).map_err(|e| LedgerStoreError::Corrupt {
        location: format!("the in-memory ledger of run {run_id}"),
        line: number,
        reason: format!("it is not a valid ledger entry: {e}"),
    })
}

/// What `sync` returns: there is nothing to wait for. The type has no fields, so when the
/// engine boxes it (it calls stores through the object-safe `DynLedgerStore`) nothing is
/// allocated, at every step of every run.
struct Synced;

impl Future for Synced {
    type Output = Result<(), LedgerStoreError>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(()))
    }
}

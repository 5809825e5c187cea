//! `MemoryLedgerStore`: run ledgers kept in process memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rein_ledger::{Entry, Ledger, LedgerStore, LedgerStoreError, LoadedLedger};
use rein_run::RunId;

use super::shard::{Sharded, lock};
use crate::blocking;
use crate::tip::{Link, Tip};

/// A [`LedgerStore`] that keeps entries in memory, with the same checks as the filesystem
/// store: an appended entry must follow the stored chain, and `load` verifies it.
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
#[derive(Debug, Default)]
pub struct MemoryLedgerStore {
    ledgers: Sharded<RunId, Stored>,
    created: AtomicU64,
}

/// One run's entries, and when its first entry came, for [`LedgerStore::list`]'s order.
#[derive(Debug)]
struct Stored {
    first_appended: u64,
    entries: Arc<Mutex<Vec<Entry>>>,
}

impl MemoryLedgerStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self, run_id: &RunId) -> Option<Arc<Mutex<Vec<Entry>>>> {
        let shard = self.ledgers.lock(run_id);
        shard.get(run_id).map(|stored| Arc::clone(&stored.entries))
    }
}

impl LedgerStore for MemoryLedgerStore {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        let run_id = entry.run_id();
        let entries = {
            let mut shard = self.ledgers.lock(run_id);
            let stored = shard.entry(run_id.clone()).or_insert_with(|| Stored {
                first_appended: self.created.fetch_add(1, Ordering::Relaxed),
                entries: Arc::default(),
            });
            Arc::clone(&stored.entries)
        };
        let mut entries = lock(&entries);
        let tip = entries
            .last()
            .map_or(Tip::EMPTY, |last| Tip::after(Link::of(last)));
        tip.check(Link::of(entry), || {
            format!("the in-memory ledger of run {run_id}")
        })?;
        entries.push(entry.clone());
        Ok(())
    }

    async fn sync(&self, _run_id: &RunId) -> Result<(), LedgerStoreError> {
        Ok(())
    }

    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        let entries = self
            .entries(run_id)
            .ok_or_else(|| LedgerStoreError::NotFound {
                run_id: run_id.clone(),
            })?;
        let entries = lock(&entries).clone();
        // Verifying hashes every entry: long ledgers are checked off the caller's task.
        let owned = run_id.clone();
        let verified = blocking::compute(entries.len().saturating_mul(512), move || {
            Ledger::from_entries(owned, entries)
        })
        .await
        .map_err(|source| LedgerStoreError::Io {
            context: format!("verifying the in-memory ledger of run {run_id}"),
            source,
        })?;
        let ledger = verified.map_err(|source| LedgerStoreError::Broken {
            run_id: run_id.clone(),
            source,
        })?;
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

//! `MemoryRunStore`: run snapshots kept in process memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rein_run::{Run, RunId, RunStore, RunStoreError};

use super::shard::Sharded;

/// A [`RunStore`] that keeps snapshots in memory: the default store, and the one tests use.
///
/// Saving clones the run once; loading clones it once. Runs are spread over independent
/// locks, each held for a single map operation, so concurrent runs do not wait on each
/// other. Nothing survives the process.
///
/// ```
/// use rein_run::{Run, RunStore, RunStoreError, Timestamp};
/// use rein_storage::MemoryRunStore;
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let store = MemoryRunStore::new();
/// let run = Run::new("run-1".parse()?, "goal", Default::default(), serde_json::json!({}),
///     Timestamp::from_unix_millis(0));
/// store.save(&run).await?;
/// assert_eq!(store.load(run.id()).await?, run);
/// assert!(matches!(store.load(&"run-2".parse()?).await, Err(RunStoreError::NotFound { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    runs: Sharded<RunId, Stored>,
    saves: AtomicU64,
}

/// One stored snapshot and when its run was first saved, for [`RunStore::list`]'s order.
#[derive(Debug)]
struct Stored {
    first_saved: u64,
    run: Arc<Run>,
}

impl MemoryRunStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
}

impl RunStore for MemoryRunStore {
    async fn save(&self, run: &Run) -> Result<(), RunStoreError> {
        let snapshot = Arc::new(run.clone());
        let order = self.saves.fetch_add(1, Ordering::Relaxed);
        self.runs
            .lock(run.id())
            .entry(run.id().clone())
            .and_modify(|stored| stored.run = Arc::clone(&snapshot))
            .or_insert_with(|| Stored {
                first_saved: order,
                run: Arc::clone(&snapshot),
            });
        Ok(())
    }

    async fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        // Take the Arc under the lock, deep-clone outside it.
        let stored = self.runs.lock(id).get(id).map(|s| Arc::clone(&s.run));
        stored
            .map(|run| Run::clone(&run))
            .ok_or_else(|| RunStoreError::NotFound { id: id.clone() })
    }

    async fn list(&self) -> Result<Vec<RunId>, RunStoreError> {
        let mut ids = Vec::new();
        self.runs
            .for_each(|id, stored| ids.push((stored.first_saved, id.clone())));
        ids.sort_unstable();
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }
}

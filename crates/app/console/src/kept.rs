//! The console's run index, kept in memory between requests on a filesystem store: a
//! listing walks the data directory's stamps (one `lstat` per run file) but neither reads
//! nor parses the index file again, and listings that arrive while a refresh is under way
//! share the next one instead of each walking the directory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rein::RunId;
use rein::store::{FsRunIndex, IndexedRun};

use crate::summary::{Summary, summarize};

/// A filesystem store's run index and the runs its last refresh found.
pub(crate) struct KeptIndex {
    index: FsRunIndex,
    /// How many refreshes have started (the number of the latest).
    started: AtomicU64,
    /// One refresh at a time; the runs it found, and its number.
    kept: tokio::sync::Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// The number of the refresh that found `runs` (0: none yet).
    made_by: u64,
    /// `None` before the first refresh, and after one that failed or was abandoned: the next
    /// starts from the index file again.
    runs: Option<Vec<IndexedRun<Summary>>>,
}

impl KeptIndex {
    pub(crate) fn new(index: FsRunIndex) -> Self {
        Self {
            index,
            started: AtomicU64::new(0),
            kept: tokio::sync::Mutex::new(Kept::default()),
        }
    }

    /// `read` of every run the data directory holds, as found by a refresh that started
    /// after this call: never older than the request. A request that arrives while a
    /// refresh is under way waits for it to end, and then either finds a newer one made
    /// while it waited or makes it, for itself and every request waiting with it.
    pub(crate) async fn read<R>(
        &self,
        state: &Arc<crate::State>,
        read: impl FnOnce(&[IndexedRun<Summary>]) -> R,
    ) -> Result<R, String> {
        let seen = self.started.load(Ordering::SeqCst);
        let mut kept = self.kept.lock().await;
        if kept.made_by <= seen || kept.runs.is_none() {
            let number = self.started.fetch_add(1, Ordering::SeqCst) + 1;
            let previous = kept.runs.take();
            let index = self.index.clone();
            let shared = Arc::clone(state);
            let handle = tokio::runtime::Handle::current();
            // The walk is blocking file work (one lstat per file): off the executor, and
            // each changed run read through the async stores from there.
            let refreshed = tokio::task::spawn_blocking(move || {
                let summarize = |id: &RunId| handle.block_on(summarize(&shared, id, true));
                match previous {
                    Some(runs) => index.refresh_kept(runs, summarize),
                    None => index.refresh(summarize),
                }
            })
            .await
            .map_err(|e| format!("the run index could not be read: {e}"))?
            .map_err(|e| e.to_string())?;
            if let Some(e) = &refreshed.unsaved {
                tracing::warn!(error = %e, "the console's run index could not be saved");
            }
            kept.runs = Some(refreshed.runs);
            kept.made_by = number;
        }
        Ok(read(kept.runs.as_deref().unwrap_or_default()))
    }
}

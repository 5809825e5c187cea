//! `MemoryStopRequests`: stop requests kept in process memory.

use std::collections::HashMap;
use std::sync::Mutex;

use rein_run::{RunId, RunStoreError, StopRequest, StopRequestStore};

/// A [`StopRequestStore`] in memory: for an engine on in-memory stores, where whoever asks
/// a run to stop shares the process (and the store) with the engine that drives it.
///
/// ```
/// use rein_run::{StopKind, StopRequest, StopRequestStore, Timestamp};
/// use rein_storage::MemoryStopRequests;
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let stops = MemoryStopRequests::new();
/// let id = "run-1".parse()?;
/// let abort = StopRequest::new(StopKind::Abort, "alice", "", Timestamp::from_unix_millis(1));
/// stops.request(&id, &abort).await?;
/// let interrupt = StopRequest::new(StopKind::Interrupt, "bob", "", Timestamp::from_unix_millis(2));
/// stops.request(&id, &interrupt).await?;
/// assert_eq!(stops.pending(&id).await?, Some(abort)); // an abort stands
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryStopRequests {
    waiting: Mutex<HashMap<RunId, StopRequest>>,
}

impl MemoryStopRequests {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, StopRequest>> {
        // A map operation cannot leave the map half-changed: a poisoned lock is still sound.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl StopRequestStore for MemoryStopRequests {
    async fn request(&self, id: &RunId, request: &StopRequest) -> Result<(), RunStoreError> {
        let mut waiting = self.waiting();
        let standing = match waiting.remove(id) {
            Some(earlier) => earlier.then(request.clone()),
            None => request.clone(),
        };
        waiting.insert(id.clone(), standing);
        Ok(())
    }

    async fn pending(&self, id: &RunId) -> Result<Option<StopRequest>, RunStoreError> {
        Ok(self.waiting().get(id).cloned())
    }

    async fn clear(&self, id: &RunId, honoured: &StopRequest) -> Result<(), RunStoreError> {
        let mut waiting = self.waiting();
        if waiting.get(id) == Some(honoured) {
            waiting.remove(id);
        }
        Ok(())
    }
}

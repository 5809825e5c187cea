//! Where an engine keeps stop requests (DESIGN.md §7), and the task that looks for one
//! while a run is driven, pulling the run's abort or stop signal when it finds one — for
//! a store other processes write to; a request made through the engine itself pulls the
//! signal at once. How they are asked for and honoured is in `operator_stop`.

use std::sync::Arc;
use std::time::Duration;

use rein_run::{DynStopRequestStore, RunId, StopKind};
use rein_storage::{FsStores, MemoryStopRequests};
use tokio::task::JoinHandle;

use crate::record_first::Signals;

/// How often a driven run looks for a stop request, unless configured.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// What a builder was told about stop requests.
#[derive(Default)]
pub(crate) struct StopConfig {
    pub(crate) store: Option<Arc<dyn DynStopRequestStore>>,
    pub(crate) poll: Option<Duration>,
}

/// Where an engine's stop requests are kept, and how often a driven run looks.
pub(crate) struct Stops {
    pub(crate) store: Arc<dyn DynStopRequestStore>,
    /// Whether a request can reach the store other than through this engine: a store
    /// given to the builder, or the filesystem's. Only then does a driven run poll it;
    /// the engine's own store in memory is written by this engine alone, which pulls the
    /// run's signal itself (`Shared::signal`).
    shared: bool,
    poll: Duration,
}

impl StopConfig {
    /// The store set, else the filesystem stores' (`<dir>/stops`), else one in memory.
    pub(crate) fn build(self, fs: Option<&FsStores>) -> Stops {
        let (store, shared): (Arc<dyn DynStopRequestStore>, bool) = match (self.store, fs) {
            (Some(store), _) => (store, true),
            (None, Some(fs)) => (Arc::new(fs.stop_requests()), true),
            (None, None) => (Arc::new(MemoryStopRequests::new()), false),
        };
        Stops {
            store,
            shared,
            // A zero period would spin: the shortest is a millisecond.
            poll: self
                .poll
                .unwrap_or(DEFAULT_POLL)
                .max(Duration::from_millis(1)),
        }
    }
}

/// A task that looks for a stop request for one driven run and pulls the run's abort or
/// stop signal when it finds one (none for a store only the engine writes). Dropping it
/// ends the task.
pub(crate) struct Watch(Option<JoinHandle<()>>);

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// Starts watching for stop requests for run `id`, driven with `signals`, when another
/// process may ask for one. The drive has just looked (`honour_waiting_stop`): the
/// first look is one period away.
pub(crate) fn watch(stops: &Stops, id: &RunId, signals: &Arc<Signals>) -> Watch {
    if !stops.shared {
        return Watch(None);
    }
    let store = Arc::clone(&stops.store);
    let poll = stops.poll;
    let id = id.clone();
    let (cancel, stop) = (signals.cancel.clone(), signals.stop.clone());
    Watch(Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + poll, poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match store.pending_boxed(&id).await {
                Ok(Some(request)) if request.kind == StopKind::Abort => {
                    cancel.cancel();
                    return;
                }
                // Interrupted at the next step; an abort asked for later still cuts in.
                Ok(Some(_)) => stop.cancel(),
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    run_id = %id, error = %e,
                    "cannot read the run's stop request; looking again at the next poll"
                ),
            }
        }
    })))
}

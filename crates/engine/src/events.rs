//! `RunEvent` and `RunEvents`: a live, lossy view of what a run records.

use std::sync::Arc;

use rein_ledger::Entry;
use tokio::sync::broadcast;

/// Something a subscriber sees while a run goes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// The run recorded this ledger entry (shared: every subscriber gets the same one).
    Recorded(Arc<Entry>),
    /// The subscriber was too slow and missed this many events. The ledger is the lossless
    /// record: read it when every entry matters.
    Missed(u64),
}

/// A subscription to a run's events. Slow subscribers lose events (and are told how many);
/// the run never waits for them.
///
/// ```no_run
/// # async fn f(handle: rein_engine::RunHandle) {
/// use rein_engine::RunEvent;
/// let mut events = handle.subscribe();
/// while let Some(event) = events.next().await {
///     match event {
///         RunEvent::Recorded(entry) => println!("{} {}", entry.seq(), entry.event().name()),
///         RunEvent::Missed(n) => println!("missed {n} events"),
///         _ => {}
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct RunEvents {
    rx: broadcast::Receiver<RunEvent>,
}

impl RunEvents {
    pub(crate) const fn new(rx: broadcast::Receiver<RunEvent>) -> Self {
        Self { rx }
    }

    /// The next event, or `None` once the run has ended and every event was seen.
    pub async fn next(&mut self) -> Option<RunEvent> {
        match self.rx.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(n)) => Some(RunEvent::Missed(n)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

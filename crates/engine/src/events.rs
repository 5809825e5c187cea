//! `RunEvent` and `RunEvents`: a live, lossy view of a run — every entry it records, the
//! typed events a UI follows (read off those entries in one place), and what is never
//! recorded (a step starting, a model's reply streaming in). `Subscribers` is the run's
//! end of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rein_ledger::Entry;
use rein_run::{DeltaSink, ModelDelta, RunId, State};
use tokio::sync::broadcast;

mod display;
mod typed;

pub use typed::{
    ApprovalAsked, ApprovalDecided, ModelCallEnded, ModelCallOutcome, ModelCallStarted,
    ModelStreamed, ModelUsage, Moved, RunEnded, StepStarted, ToolFinished, ToolNoticed,
    ToolOutcome, ToolStarted,
};

/// Something a subscriber sees while a run goes: every ledger entry as it is recorded
/// ([`Recorded`](Self::Recorded)), and beside it the typed events a UI follows. Each
/// ledger-backed typed event comes right after the entry it is read from; a step's start
/// and a model's reply streaming in are never recorded (the ledger keeps the whole reply).
///
/// The typed events hold their details shared (`Arc`): every subscriber gets the same one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// The run recorded this ledger entry (shared: every subscriber gets the same one).
    Recorded(Arc<Entry>),
    /// The subscriber was too slow and missed this many events. The ledger is the lossless
    /// record: read it when every entry matters.
    Missed(u64),
    /// A step is about to be planned (not recorded).
    StepStarted(Arc<StepStarted>),
    /// A model call's attempt is about to be sent (after its `planner_attempt` entry).
    ModelCallStarted(Arc<ModelCallStarted>),
    /// A piece of the model's reply, as it streams in (not recorded). Only a planner that
    /// streams (the LLM planner with a streaming provider) publishes them.
    ModelDelta(Arc<ModelStreamed>),
    /// A model call's attempt ended, with what it used (after its `planner_call` or
    /// `planner_attempt_failed` entry).
    ModelCallEnded(Arc<ModelCallEnded>),
    /// A tool attempt started (after its `tool_call` entry).
    ToolStarted(Arc<ToolStarted>),
    /// A tool attempt finished (after its `tool_result` or `tool_error` entry).
    ToolFinished(Arc<ToolFinished>),
    /// The approver was asked about a call (after its `approval_requested` entry).
    ApprovalAsked(Arc<ApprovalAsked>),
    /// The approver decided (after its `approval_granted` or `approval_denied` entry).
    ApprovalDecided(Arc<ApprovalDecided>),
    /// The run moved from one state to another (after its `transition` entry).
    Transition(Arc<Moved>),
    /// The run stopped being driven: completed, failed, interrupted or paused (after the
    /// entry that says so).
    RunEnded(Arc<RunEnded>),
    /// A tool in flight told how far it got, or sent a log line (an MCP server's progress
    /// and logging notifications; not recorded).
    ToolNotice(Arc<ToolNoticed>),
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
///         RunEvent::ModelDelta(piece) => print!("{}", piece.delta),
///         RunEvent::ToolStarted(call) => println!("\n{} …", call.tool),
///         RunEvent::Recorded(_) => {} // every entry, for those who want them all
///         other => println!("\n{other}"),
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

/// A run's end of its event channel. Everything it sends is built only while somebody
/// holds a receiver, and sending never waits: a subscriber that never reads costs a run one
/// check per event.
#[derive(Debug)]
pub(crate) struct Subscribers {
    tx: broadcast::Sender<RunEvent>,
    run: RunId,
    /// The step being planned: the one a streamed piece belongs to.
    step: AtomicU32,
}

impl Subscribers {
    /// The end of `tx` for run `run`.
    pub(crate) const fn new(tx: broadcast::Sender<RunEvent>, run: RunId) -> Self {
        Self {
            tx,
            run,
            step: AtomicU32::new(0),
        }
    }

    /// The channel, for a child run's events to reach the same subscribers.
    pub(crate) const fn sender(&self) -> &broadcast::Sender<RunEvent> {
        &self.tx
    }

    /// Whether anybody holds a receiver.
    fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// Tells subscribers that `entry` was recorded, then the typed event it is, if any.
    pub(crate) fn recorded(&self, entry: &Entry) {
        if !self.watched() {
            return;
        }
        let _ = self.tx.send(RunEvent::Recorded(Arc::new(entry.clone())));
        if let Some(typed) = RunEvent::of_entry(entry) {
            let _ = self.tx.send(typed);
        }
    }

    /// Tells subscribers that step `step` is about to be planned in `state`; the pieces of
    /// a reply published from now on are that step's.
    pub(crate) fn step_started(&self, step: u32, state: State) {
        self.step.store(step, Ordering::Relaxed);
        if self.watched() {
            let _ = self.tx.send(RunEvent::StepStarted(Arc::new(StepStarted {
                run: self.run.clone(),
                step,
                state,
            })));
        }
    }
}

impl Subscribers {
    /// Tells subscribers what a call of `tool` in flight noticed.
    pub(crate) fn tool_notice(&self, tool: &rein_run::ToolName, notice: rein_tool::ToolNotice) {
        if self.watched() {
            let _ = self.tx.send(RunEvent::ToolNotice(Arc::new(ToolNoticed {
                run: self.run.clone(),
                tool: tool.clone(),
                notice,
            })));
        }
    }
}

/// The step's meter publishes a streaming reply here (`PlanMeter::with_deltas`).
impl DeltaSink for Subscribers {
    fn wanted(&self) -> bool {
        self.watched()
    }

    fn delta(&self, delta: ModelDelta) {
        if self.watched() {
            let _ = self.tx.send(RunEvent::ModelDelta(Arc::new(ModelStreamed {
                run: self.run.clone(),
                step: self.step.load(Ordering::Relaxed),
                delta,
            })));
        }
    }
}

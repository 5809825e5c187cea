//! `RunEvent` and `RunEvents`: a live, lossy view of a run — every entry it records, the
//! typed events a UI follows (read off those entries in one place), and what is never
//! recorded (a step starting, a model's reply streaming in). `Subscribers` is the run's
//! end of it, `Published` what goes through the channel: a recorded entry travels as the
//! JSON line the ledger already shares (no copy, no event built by the run), and each
//! subscriber reads its entry and typed event off that line when it takes it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rein_ledger::{Entry, LedgerLines};
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
/// A subscriber reads each entry and its typed event off the entry's JSON line when it takes
/// it: the run shares the line and builds nothing (events are cheap to clone: their details
/// are behind an `Arc`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// The run recorded this ledger entry (read back from its JSON line).
    Recorded(Arc<Entry>),
    /// The subscriber was too slow and missed this many entries and unrecorded events (the
    /// typed events read off a missed entry are missed with it). The ledger is the lossless
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
    rx: broadcast::Receiver<Published>,
    /// The typed event read off the entry [`next`](Self::next) handed out last, due next.
    typed: Option<RunEvent>,
}

impl RunEvents {
    pub(crate) const fn new(rx: broadcast::Receiver<Published>) -> Self {
        Self { rx, typed: None }
    }

    /// The next event, or `None` once the run has ended and every event was seen.
    pub async fn next(&mut self) -> Option<RunEvent> {
        if let Some(typed) = self.typed.take() {
            return Some(typed);
        }
        loop {
            let published = match self.rx.recv().await {
                Ok(published) => published,
                Err(broadcast::error::RecvError::Lagged(n)) => return Some(RunEvent::Missed(n)),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            match published {
                Published::Line(line) => match LedgerLines::parse(0, &line) {
                    Ok(entry) => {
                        self.typed = RunEvent::of_entry(&entry);
                        return Some(RunEvent::Recorded(Arc::new(entry)));
                    }
                    // The engine sealed this line itself: unreadable, it is a bug, not a
                    // reason to end the subscription.
                    Err(e) => tracing::warn!(error = %e, "a recorded entry could not be read back"),
                },
                Published::Step { run, step, state } => {
                    return Some(RunEvent::StepStarted(Arc::new(StepStarted {
                        run,
                        step,
                        state,
                    })));
                }
                Published::Event(event) => return Some(event),
            }
        }
    }
}

/// What a run sends its subscribers: as little as it can, the subscriber building the rest.
#[derive(Debug, Clone)]
pub(crate) enum Published {
    /// An entry was recorded: its JSON line, shared with the entry (and the memory store).
    Line(rein_ledger::SharedLine),
    /// Step `step` of run `run` is about to be planned in `state`.
    Step { run: RunId, step: u32, state: State },
    /// An event the run built: a piece of a streaming reply, a tool's notice.
    Event(RunEvent),
}

/// A run's end of its event channel. Sending never waits, and the run builds nothing for
/// it but a streamed reply's pieces (only while somebody holds a receiver): an entry goes
/// as the line it shares with the ledger, a step's start as three plain fields. A
/// subscriber that never reads costs a run a reference count and a slot in the ring per
/// entry.
#[derive(Debug)]
pub(crate) struct Subscribers {
    tx: broadcast::Sender<Published>,
    run: RunId,
    /// The step being planned: the one a streamed piece belongs to.
    step: AtomicU32,
}

impl Subscribers {
    /// The end of `tx` for run `run`.
    pub(crate) const fn new(tx: broadcast::Sender<Published>, run: RunId) -> Self {
        Self {
            tx,
            run,
            step: AtomicU32::new(0),
        }
    }

    /// The channel, for a child run's events to reach the same subscribers.
    pub(crate) const fn sender(&self) -> &broadcast::Sender<Published> {
        &self.tx
    }

    /// Whether anybody holds a receiver.
    fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// Tells subscribers that `entry` was recorded (they read its typed event off it).
    pub(crate) fn recorded(&self, entry: &Entry) {
        if self.watched() {
            let _ = self.tx.send(Published::Line(entry.shared_json_line()));
        }
    }

    /// Tells subscribers that step `step` is about to be planned in `state`; the pieces of
    /// a reply published from now on are that step's.
    pub(crate) fn step_started(&self, step: u32, state: State) {
        self.step.store(step, Ordering::Relaxed);
        if self.watched() {
            let _ = self.tx.send(Published::Step {
                run: self.run.clone(),
                step,
                state,
            });
        }
    }
}

impl Subscribers {
    /// Tells subscribers what a call of `tool` in flight noticed.
    pub(crate) fn tool_notice(&self, tool: &rein_run::ToolName, notice: rein_tool::ToolNotice) {
        if self.watched() {
            let _ = self.tx.send(Published::Event(RunEvent::ToolNotice(Arc::new(
                ToolNoticed {
                    run: self.run.clone(),
                    tool: tool.clone(),
                    notice,
                },
            ))));
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
            let _ = self.tx.send(Published::Event(RunEvent::ModelDelta(Arc::new(
                ModelStreamed {
                    run: self.run.clone(),
                    step: self.step.load(Ordering::Relaxed),
                    delta,
                },
            ))));
        }
    }
}

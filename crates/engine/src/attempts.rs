//! `AttemptLink`: the engine's observer on the resilience stack. It tells the driver how
//! each attempt ended and asks it before every retry, so the driver can charge and ledger
//! the retry — and ledger the failure before it — before the retry starts.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rein_resilience::{Admission, AttemptObserver, AttemptReport};
use rein_run::{DynPlanner, PlanMeter, ToolName};
use rein_tool::ToolError;
use tokio::sync::{mpsc, oneshot};

use crate::clock::Clock;

/// How one attempt ended. Successful outputs are not copied: the call's result carries it.
#[derive(Debug, Clone)]
pub(crate) struct AttemptRecord {
    /// The attempt's number in the stack's count (from 1 in every call of the stack).
    pub(crate) attempt: u32,
    /// Boxed: the event channel's first block holds 32 events and is allocated for every
    /// run; errors are rare, and boxed they keep that block small.
    pub(crate) error: Option<Box<ToolError>>,
    /// How long it took by the engine's [`Clock`] (a `ManualClock` that does not move
    /// makes it 0, so a ledger stays reproducible byte for byte).
    pub(crate) elapsed: Duration,
}

/// What the observer tells the driver while a call runs, in the order it happened.
#[derive(Debug)]
pub(crate) enum AttemptEvent {
    /// An attempt ended.
    Ended(AttemptRecord),
    /// The stack wants to start attempt `attempt` (a retry); it waits for the reply.
    Admit {
        attempt: u32,
        /// The retry's input on success: the stack keeps no copy of it.
        reply: oneshot::Sender<Result<serde_json::Value, ToolError>>,
    },
    /// The call asks the run's model (a server's sampling request): the driver answers
    /// with the planner and a meter over what the run has left.
    Sample(oneshot::Sender<Sampling>),
    /// A model call made for the call announces an attempt or reports what it used: the
    /// driver records (and charges) it, then answers.
    Model(crate::plan_link::PlanMessage),
}

/// Admits attempt 1 at once (the driver charged and ledgered it before the call); asks the
/// driver before every later attempt and reports every attempt's end, timed by the
/// engine's clock.
#[derive(Debug)]
pub(crate) struct AttemptLink {
    tx: mpsc::UnboundedSender<AttemptEvent>,
    clock: Arc<dyn Clock>,
    /// When the current attempt was admitted, in the clock's milliseconds.
    started: AtomicU64,
}

/// The veto's error: never seen by the planner (the engine reports the last real attempt's
/// error), but named so a user layer that logs it is not confused.
pub(crate) const VETO_MESSAGE: &str = "no retry: the tool_calls budget has nothing left";

impl AttemptLink {
    /// An observer that reports to the driver holding `tx`'s receiver. The driver keeps one
    /// channel for the whole run (a channel allocates its first block of slots on first
    /// use, which per call cost W1 ~0.7 µs a decision) and drains it after every call.
    pub(crate) fn new(tx: mpsc::UnboundedSender<AttemptEvent>, clock: Arc<dyn Clock>) -> Self {
        let started = AtomicU64::new(clock.now().as_unix_millis());
        Self { tx, clock, started }
    }

    /// Readies the link for the next call: its first attempt's time starts now. The driver
    /// keeps one link for the run (calls are one at a time), so a call allocates none.
    pub(crate) fn restart(&self) {
        self.started.store(self.now(), Ordering::Relaxed);
    }

    /// The driver's end of the channel, for a call's scope to report through.
    pub(crate) fn sender(&self) -> mpsc::UnboundedSender<AttemptEvent> {
        self.tx.clone()
    }

    fn now(&self) -> u64 {
        self.clock.now().as_unix_millis()
    }
}

impl AttemptObserver for AttemptLink {
    fn before_attempt(&self, _tool: &ToolName, attempt: u32) -> Admission {
        // A retry's time starts at its admission; the first attempt's when the link was made.
        if attempt <= 1 {
            return Admission::allow();
        }
        self.started.store(self.now(), Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        if self
            .tx
            .send(AttemptEvent::Admit { attempt, reply })
            .is_err()
        {
            // The driver is gone: nothing could record the attempt, so it must not run.
            return Admission::deny(ToolError::Cancelled);
        }
        Admission::wait_with_input(async move { answer.await.unwrap_or(Err(ToolError::Cancelled)) })
    }

    fn times_attempts(&self) -> bool {
        // Attempts are timed by the engine's clock (`started`), never by the report.
        false
    }

    fn after_attempt(&self, report: &AttemptReport<'_>) {
        let record = AttemptRecord {
            attempt: report.attempt,
            error: report.outcome.as_ref().err().cloned().map(Box::new),
            elapsed: Duration::from_millis(
                self.now()
                    .saturating_sub(self.started.load(Ordering::Relaxed)),
            ),
        };
        // A driver that is gone has stopped recording; the report has nowhere to go.
        let _ = self.tx.send(AttemptEvent::Ended(record));
    }
}

/// A sampling request's answer from the driver: the model to ask and the meter over what
/// the run has left.
pub(crate) struct Sampling {
    pub(crate) planner: Arc<dyn DynPlanner>,
    pub(crate) meter: PlanMeter,
}

impl fmt::Debug for Sampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampling")
            .field("meter", &self.meter)
            .finish_non_exhaustive()
    }
}

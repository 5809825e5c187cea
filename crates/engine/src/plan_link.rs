//! Model calls on the record before they are sent: the planner-facing [`PlanLink`] carries
//! what a planner announces through its `PlanMeter` (an attempt, its outcome, a correction,
//! a skill entering the context) to the driver, whose [`Live`] appends it to the ledger —
//! an attempt durably — before the planner goes on. While `plan` runs the run is borrowed
//! by the planner, so these entries are appended first and applied to the projection as
//! soon as `plan` returns, in ledger order (`plan_attempts`). [`ModelProgress`] follows
//! what a resume still has to charge.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use rein_ledger::{Entry, EntryKind, Violation};
use rein_policy::Budget;
use rein_run::{
    BoxFuture, BudgetName, Decision, Digest, PlanEvent, PlanSink, PlanSinkClosed, PlannerAttempt,
    PlannerError, Run,
};
use tokio::sync::{mpsc, oneshot};

use crate::error::EngineError;
use crate::record_first::{First, Next, Signals, Watch};
use crate::writer::LedgerWriter;

/// The `finish_reason` of a model call charged at its worst case because the process
/// stopped before its outcome was on record.
pub(crate) const IN_DOUBT_REASON: &str = "in doubt: the process stopped before the reply was recorded; charged at the declared worst case";

/// The `finish_reason` of a model call cancelled by a stop ([`RunHandle::stop`]), charged
/// at its declared worst case: its outcome is unknown, as after a crash.
///
/// [`RunHandle::stop`]: crate::RunHandle::stop
pub(crate) const STOPPED_REASON: &str = "cancelled: the run was stopped while the call was in flight; charged at the declared worst case";

/// How asking the planner ended.
#[derive(Debug)]
pub(crate) enum Planned {
    /// The planner answered.
    Decided(Result<Decision, PlannerError>),
    /// The run was aborted meanwhile; the plan was dropped.
    Aborted,
    /// The run was stopped meanwhile; the plan was dropped.
    Stopped,
}

/// One event and the answer the planner waits for (sent once it is on record). Boxed: the
/// channel's first block holds 32 messages and is allocated for every run, while most
/// planners (scripts, a team's own) never send one; boxed, that block is 256 bytes.
pub(crate) type PlanMessage = Box<(PlanEvent, oneshot::Sender<()>)>;

/// The engine's [`PlanSink`]: one per run, shared by every step's meter.
#[derive(Debug)]
pub(crate) struct PlanLink {
    tx: mpsc::UnboundedSender<PlanMessage>,
}

impl PlanLink {
    /// A link that sends to the driver holding `tx`'s receiver.
    pub(crate) fn new(tx: mpsc::UnboundedSender<PlanMessage>) -> Self {
        Self { tx }
    }
}

impl PlanSink for PlanLink {
    fn record(&self, event: PlanEvent) -> BoxFuture<'_, Result<(), PlanSinkClosed>> {
        let (reply, recorded) = oneshot::channel();
        let sent = self.tx.send(Box::new((event, reply)));
        Box::pin(async move {
            sent.map_err(|_| PlanSinkClosed)?;
            recorded.await.map_err(|_| PlanSinkClosed)
        })
    }
}

/// How far the current step's model calls got, as the ledger shows them: what a resume
/// still has to charge.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelProgress {
    /// An attempt announced and not ended.
    pub(crate) open: Option<(u32, PlannerAttempt)>,
    /// The last call recorded and what of it is not charged yet (tokens, cost).
    pub(crate) due: Option<(u64, u64)>,
}

impl ModelProgress {
    /// Follows one entry.
    pub(crate) fn track(&mut self, kind: &EntryKind) {
        match kind {
            EntryKind::PlannerAttempt { step, attempt } => {
                self.open = Some((*step, attempt.clone()));
                self.due = None;
            }
            EntryKind::PlannerCall { call, .. } => {
                self.open = None;
                self.due = Some((call.tokens(), call.cost.charged_micros()));
            }
            EntryKind::PlannerAttemptFailed { .. } => self.open = None,
            EntryKind::BudgetConsumed { name, .. } | EntryKind::BudgetOverrun { name, .. } => {
                if let Some((tokens, cost)) = &mut self.due {
                    if *name == BudgetName::TOKENS {
                        *tokens = 0;
                    } else if *name == BudgetName::COST {
                        *cost = 0;
                    }
                }
            }
            EntryKind::Decision { .. }
            | EntryKind::RunCompleted { .. }
            | EntryKind::RunFailed { .. }
            | EntryKind::RunInterrupted { .. } => *self = Self::default(),
            _ => {}
        }
    }
}

/// The driver's side of a step's plan: appends what the planner announces while it plans.
pub(crate) struct Live<'a> {
    pub(crate) log: &'a mut LedgerWriter,
    /// What was appended, for the driver to apply to the projection once `plan` returns.
    pub(crate) appended: &'a mut Vec<Entry>,
    /// The skills already on record before this step.
    pub(crate) skills_entered: &'a [(String, Digest)],
    pub(crate) rx: &'a mut mpsc::UnboundedReceiver<PlanMessage>,
    /// The run, as the planner sees it (entries appended here are applied after).
    pub(crate) run: &'a Run,
    /// The budget the run is charged against.
    pub(crate) budget: &'a Budget,
    /// Charged to `tokens` and `cost` in this step and not yet applied to the projection.
    pub(crate) charged: [u64; 2],
}

impl Live<'_> {
    /// Runs `plan`, recording what it announces, until it answers or the run is aborted
    /// or stopped (`signals`).
    pub(crate) async fn drive(
        mut self,
        plan: impl Future<Output = Result<Decision, PlannerError>> + Send,
        signals: Option<Arc<Signals>>,
    ) -> Result<Planned, EngineError> {
        let outcome = {
            let mut plan = pin!(plan);
            let mut watch = Watch::new(signals, First::Messages).and_stop();
            loop {
                match watch.next(plan.as_mut(), Some(&mut *self.rx)).await {
                    Next::Message(message) => {
                        let (event, reply) = *message;
                        self.write(event).await?;
                        // A planner that stopped waiting finds its event on record anyway.
                        let _ = reply.send(());
                    }
                    Next::Done(decided) => break Planned::Decided(decided),
                    Next::Aborted => break Planned::Aborted,
                    Next::Stopped => break Planned::Stopped,
                }
            }
        };
        // The plan is dropped: what it sent before is still recorded, in order.
        while let Ok(message) = self.rx.try_recv() {
            let (event, reply) = *message;
            self.write(event).await?;
            let _ = reply.send(());
        }
        Ok(outcome)
    }

    async fn write(&mut self, event: PlanEvent) -> Result<(), EngineError> {
        let step = self.run.steps();
        match event {
            PlanEvent::Attempt(attempt) => {
                self.append(EntryKind::PlannerAttempt { step, attempt })
                    .await?;
                // On the record before the request goes out.
                self.log.shared.ledgers.sync_boxed(self.run.id()).await?;
            }
            PlanEvent::Called(call) => {
                let (tokens, cost) = (call.tokens(), call.cost.charged_micros());
                self.append(EntryKind::PlannerCall { step, call }).await?;
                self.charge(0, BudgetName::TOKENS, tokens).await?;
                self.charge(1, BudgetName::COST, cost).await?;
            }
            PlanEvent::Failed { attempt, error } => {
                self.append(EntryKind::PlannerAttemptFailed {
                    step,
                    attempt,
                    error,
                })
                .await?;
            }
            PlanEvent::Correction { message } => {
                self.append(EntryKind::PolicyViolation {
                    violation: Violation::InvalidReply,
                    message,
                    handed_back: true,
                })
                .await?;
            }
            PlanEvent::Compacted(compaction) => {
                self.append(EntryKind::PromptCompacted { step, compaction })
                    .await?;
            }
            PlanEvent::SkillEntered { name, checksum } => {
                // Once per run: at the first step the skill's body entered the context.
                let entered = self
                    .skills_entered
                    .iter()
                    .any(|(n, c)| *n == name && *c == checksum)
                    || self.appended.iter().any(|e| {
                        matches!(e.event(), EntryKind::SkillEntered { name: n, checksum: c, .. }
                            if *n == name && *c == checksum)
                    });
                if !entered {
                    self.append(EntryKind::SkillEntered {
                        step,
                        name,
                        checksum,
                    })
                    .await?;
                }
            }
            // An event this engine does not know is not recorded; the planner goes on.
            _ => {}
        }
        Ok(())
    }

    /// Charges what a model call used, as `Driver::charge_reported` does, counting what
    /// this step charged already.
    async fn charge(
        &mut self,
        at: usize,
        name: BudgetName,
        amount: u64,
    ) -> Result<(), EngineError> {
        let charged = self.charged[at];
        let Some(entry) =
            crate::overrun::reported_charge(self.budget, self.run.usage(), name, amount, charged)
        else {
            return Ok(());
        };
        self.charged[at] = self.charged[at].saturating_add(amount);
        self.append(entry).await
    }

    async fn append(&mut self, kind: EntryKind) -> Result<(), EngineError> {
        let at = self.log.shared.clock.now();
        let entry = self.log.append(at, self.run.state(), kind).await?;
        self.appended.push(entry);
        Ok(())
    }
}

//! The run's side of a tool call in flight ([`rein_tool::CallScope`]): the driver runs each
//! call inside a task-local scope, which [`CurrentCall`] hands to a tool that asks (an MCP
//! server's connection, shared by every run, ties what arrives during the call to it). A
//! sampling request is answered by the run's planner's model under a meter over what the
//! run has left, its attempts and calls recorded and charged by the driver as the
//! planner's are (`planner_attempt`, `planner_call`, `budget_consumed`); a notice goes to
//! the run's subscribers, never to the ledger.

use std::sync::Arc;

use rein_run::{BoxFuture, PlanEvent, PlanMeter, PlanSink, PlanSinkClosed, ToolName};
use rein_tool::{CallScope, CallScopes, SampleError, SampleReply, SampleRequest, ToolNotice};
use tokio::sync::{mpsc, oneshot};

use crate::attempts::{AttemptEvent, Sampling};
use crate::events::Subscribers;

tokio::task_local! {
    /// The scope of the tool call the current task runs: held inline, so that a call whose
    /// tool never asks for it allocates nothing.
    static CALL: RunCall;
}

/// Finds the run's side of the tool call running in the current task: give it to the
/// tools that need the run (`rein_mcp::ServerConfig::with_call_scopes`). Outside a call the
/// engine runs, it finds none.
///
/// ```
/// use rein_engine::CurrentCall;
/// use rein_tool::CallScopes as _;
/// assert!(CurrentCall.current().is_none());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CurrentCall;

impl CallScopes for CurrentCall {
    fn current(&self) -> Option<Arc<dyn CallScope>> {
        CALL.try_with(|call| Arc::new(call.clone()) as Arc<dyn CallScope>)
            .ok()
    }
}

/// A tool call in flight, as its run offers it.
#[derive(Clone)]
pub(crate) struct RunCall {
    tool: ToolName,
    events: Option<Arc<Subscribers>>,
    /// To the driver, which answers and records while it waits for the call; none for a
    /// call of a batch, whose driver waits for the batch and records nothing meanwhile.
    tx: Option<mpsc::UnboundedSender<AttemptEvent>>,
}

impl RunCall {
    /// The scope of a call of `tool`, reporting to the driver holding `tx`'s receiver.
    pub(crate) const fn new(
        tool: ToolName,
        events: Option<Arc<Subscribers>>,
        tx: Option<mpsc::UnboundedSender<AttemptEvent>>,
    ) -> Self {
        Self { tool, events, tx }
    }

    /// Runs `call` inside this scope.
    pub(crate) async fn scope<F: Future>(self, call: F) -> F::Output {
        CALL.scope(self, call).await
    }
}

/// Why a request that came after its call ended is refused.
const ENDED: &str = "the tool call it came with has ended";

/// Why a request made by a call of a batch is refused.
const IN_BATCH: &str = "the call runs in a batch of parallel calls, and rein samples only for a call made alone; have the planner make this call on its own";

impl CallScope for RunCall {
    fn sample(&self, request: SampleRequest) -> BoxFuture<'_, Result<SampleReply, SampleError>> {
        Box::pin(async move {
            let Some(tx) = &self.tx else {
                return Err(SampleError::Refused(IN_BATCH.to_owned()));
            };
            let (reply, answer) = oneshot::channel();
            if tx.send(AttemptEvent::Sample(reply)).is_err() {
                return Err(SampleError::Refused(ENDED.to_owned()));
            }
            let Ok(Sampling { planner, meter }) = answer.await else {
                return Err(SampleError::Refused(ENDED.to_owned()));
            };
            planner.sample_boxed(&request, &meter).await
        })
    }

    fn notice(&self, notice: ToolNotice) {
        if let Some(events) = &self.events {
            events.tool_notice(&self.tool, notice);
        }
    }
}

/// The meter's sink for a sampling request: each event goes to the driver, which records
/// it while it waits for the call, and answers once it is on record.
#[derive(Debug)]
pub(crate) struct SamplingLink {
    pub(crate) tx: mpsc::UnboundedSender<AttemptEvent>,
}

impl PlanSink for SamplingLink {
    fn record(&self, event: PlanEvent) -> BoxFuture<'_, Result<(), PlanSinkClosed>> {
        let (reply, recorded) = oneshot::channel();
        let sent = self.tx.send(AttemptEvent::Model(Box::new((event, reply))));
        Box::pin(async move {
            sent.map_err(|_| PlanSinkClosed)?;
            recorded.await.map_err(|_| PlanSinkClosed)
        })
    }
}

impl crate::driver::Driver {
    /// The model and meter a sampling request of the call in flight is answered with: the
    /// planner driving this run, metered against what its budgets have left now.
    pub(crate) fn sampling(&self) -> Sampling {
        let meter = PlanMeter::new(self.rec.proj.budget().snapshot(self.rec.proj.run.usage()))
            .with_sink(Arc::new(SamplingLink {
                tx: self.tool_attempts.link.sender(),
            }));
        let planner = Arc::clone(self.sub.planner.as_ref().unwrap_or(&self.shared.planner));
        Sampling { planner, meter }
    }

    /// Records what a model call made for the call in flight announces, as a planner's
    /// call is recorded: an attempt (durably, before it is sent), its failure, or what it
    /// used (then charged to `tokens` and `cost`; more than the budget had left is
    /// charged all the same, as a `budget_overrun`, and stops the run after the call).
    pub(crate) async fn record_sampled(
        &mut self,
        event: PlanEvent,
    ) -> Result<(), crate::error::EngineError> {
        use rein_ledger::EntryKind;
        use rein_run::BudgetName;
        let step = self.rec.steps();
        match event {
            PlanEvent::Attempt(attempt) => {
                self.rec
                    .record(EntryKind::PlannerAttempt { step, attempt })
                    .await?;
                self.shared.ledgers.sync_boxed(self.rec.id()).await?;
            }
            PlanEvent::Called(mut call) => {
                // No turn of the planner's dialogue: the reply went to the tool, whose
                // result records what became of it.
                call.reply = None;
                let (tokens, cost) = (call.tokens(), call.cost.charged_micros());
                self.rec
                    .record(EntryKind::PlannerCall { step, call })
                    .await?;
                self.charge_reported(BudgetName::TOKENS, tokens).await?;
                self.charge_reported(BudgetName::COST, cost).await?;
            }
            PlanEvent::Failed { attempt, error } => {
                self.rec
                    .record(EntryKind::PlannerAttemptFailed {
                        step,
                        attempt,
                        error,
                    })
                    .await?;
            }
            // Corrections, compactions and skills belong to planning, not to sampling.
            _ => {}
        }
        Ok(())
    }
}

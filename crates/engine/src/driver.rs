//! The run loop: one task owns one run, asks the planner, checks every policy, executes,
//! and records each step in the ledger before it changes the run.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use rein_artifact::StoreOptions;
use rein_ledger::{EntryKind, InterruptKind, Ledger};
use rein_policy::{ApprovalRequest, ApprovalResponse};
use rein_resilience::{CircuitState, ToolCall};
use rein_run::{
    ArtifactLink, BudgetName, Decision, Digest, Failure, FailureKind, Payload, PlanRequest, Run,
    RunStatus, State, ToolName,
};
use rein_statemachine::Lifecycle;
use rein_tool::{ToolError, ToolOutput};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::attempts::{AttemptEvent, AttemptLink, AttemptRecord, VETO_MESSAGE};
use crate::config::{OnToolError, OnViolation};
use crate::depth;
use crate::engine::{RunPolicy, Shared};
use crate::error::{EngineError, Rejection};
use crate::events::RunEvent;
use crate::project::{OpenAttempt, Progress, Projection, ProjectionError, Unsettled};
use crate::tools::ToolEntry;

/// What a handle sends to its run.
#[derive(Debug)]
pub(crate) enum Control {
    Steer(String),
    Interrupt,
}

/// The run's end of its handle: control messages, the abort signal, the event channel.
#[derive(Debug)]
pub(crate) struct Controls {
    pub(crate) rx: mpsc::UnboundedReceiver<Control>,
    pub(crate) cancel: CancellationToken,
    pub(crate) events: broadcast::Sender<RunEvent>,
}

/// Drives one run. Owned by one task; nothing here is shared with another run.
pub(crate) struct Driver {
    shared: Arc<Shared>,
    policy: Arc<RunPolicy>,
    proj: Projection,
    ledger: Ledger,
    lifecycle: Option<Lifecycle>,
    cache: HashMap<(ToolName, Digest), Payload>,
    controls: Option<Controls>,
    /// A graceful interrupt arrived: no more tool calls, one more decision.
    interrupting: bool,
    /// The next attempt's `tool_calls` unit is already charged (by the step a crash cut short).
    prepaid: bool,
    /// Where every tool call's [`AttemptLink`] reports: one channel for the run, empty
    /// between calls.
    attempt_tx: mpsc::UnboundedSender<AttemptEvent>,
    attempt_rx: mpsc::UnboundedReceiver<AttemptEvent>,
}

/// One call's attempts, as the driver has ledgered them so far.
struct Attempts {
    tool: ToolName,
    input_hash: Digest,
    idempotent: bool,
    /// The number the call's first attempt has in the ledger (above 1 when a resume retries).
    first_attempt: u32,
    /// Where the first attempt's `tool_call` entry is in the ledger (retries copy its input).
    call_entry: usize,
    /// The stack's number of the last attempt whose `tool_call` is recorded.
    current: u32,
    /// The last attempt's end, not recorded until it is known whether a retry follows.
    ended: Option<AttemptRecord>,
    /// A retry was vetoed for lack of budget: the error of the attempt before it, recorded.
    veto: Option<ToolError>,
}

impl Attempts {
    /// The ledger's number for the stack's attempt `attempt`.
    const fn number(&self, attempt: u32) -> u32 {
        self.first_attempt.saturating_add(attempt.saturating_sub(1))
    }
}

/// What woke the driver while a call runs.
enum Next {
    Event(Option<AttemptEvent>),
    Done(Result<ToolOutput, ToolError>),
    Aborted,
}

/// How a step ended, for the loop.
enum Flow {
    Continue,
    Stop,
}

impl Driver {
    pub(crate) fn new(
        shared: Arc<Shared>,
        policy: Arc<RunPolicy>,
        proj: Projection,
        ledger: Ledger,
        controls: Option<Controls>,
    ) -> Self {
        let lifecycle = Lifecycle::new(proj.state(), policy.snapshot.transitions).ok();
        let (attempt_tx, attempt_rx) = mpsc::unbounded_channel();
        Self {
            shared,
            policy,
            proj,
            ledger,
            lifecycle,
            cache: HashMap::new(),
            controls,
            interrupting: false,
            prepaid: false,
            attempt_tx,
            attempt_rx,
        }
    }

    pub(crate) fn run(&self) -> &Run {
        &self.proj.run
    }

    pub(crate) fn into_run(self) -> Run {
        self.proj.run
    }

    // ---- recording -------------------------------------------------------------------------

    /// Records `kind`: applies it to the run (the aggregate refuses what breaks its rules —
    /// then nothing is written and the refusal comes back), appends it to the ledger and its
    /// store, and tells subscribers.
    pub(crate) async fn try_record(
        &mut self,
        kind: EntryKind,
    ) -> Result<Result<(), ProjectionError>, EngineError> {
        let at = self.shared.clock.now();
        let state = self.proj.state();
        if let Err(e) = self.proj.apply(&kind, at) {
            return Ok(Err(e));
        }
        if let Some(lifecycle) = &self.lifecycle
            && lifecycle.state() != self.proj.state()
            && !self.proj.state().is_terminal()
        {
            // A transition the lifecycle did not make (a rebuilt run): follow the ledger.
            self.lifecycle =
                Lifecycle::new(self.proj.state(), self.policy.snapshot.transitions).ok();
        }
        let entry = self.ledger.append(at, state, kind);
        self.shared.ledgers.append_boxed(entry).await?;
        if let Some(controls) = &self.controls
            && controls.events.receiver_count() > 0
        {
            let _ = controls
                .events
                .send(RunEvent::Recorded(std::sync::Arc::new(entry.clone())));
        }
        Ok(Ok(()))
    }

    /// Records an entry the engine has already checked; one the run refuses is a bug.
    pub(crate) async fn record(&mut self, kind: EntryKind) -> Result<(), EngineError> {
        let name = kind.name();
        self.try_record(kind)
            .await?
            .map_err(|e| EngineError::InconsistentLedger {
                id: self.proj.run.id().clone(),
                seq: self.ledger.len() as u64 + 1,
                reason: format!("{name}: {}", e.reason),
            })
    }

    async fn fail(&mut self, kind: FailureKind, message: String) -> Result<(), EngineError> {
        self.record(EntryKind::RunFailed {
            failure: Failure::new(kind, message),
        })
        .await
    }

    /// Makes the ledger as durable as a step boundary requires, then saves the run's
    /// snapshot anchored to it ([`Driver::save`]).
    pub(crate) async fn persist(&mut self) -> Result<(), EngineError> {
        self.shared.ledgers.sync_boxed(self.proj.run.id()).await?;
        self.save().await
    }

    /// Saves the run's snapshot, anchored to the ledger: records the ledger's head (the
    /// last entry appended) in the run, then saves it. Every snapshot the engine saves goes
    /// through here, after the entries it reflects were appended, so a ledger that is only
    /// ever appended to always reaches the head its snapshot names (`Engine::load_ledger`
    /// checks that it does).
    pub(crate) async fn save(&mut self) -> Result<(), EngineError> {
        if let Some(head) = self.ledger.head() {
            self.proj
                .run
                .anchor(head)
                .map_err(|e| EngineError::InconsistentLedger {
                    id: self.proj.run.id().clone(),
                    seq: head.seq,
                    reason: e.to_string(),
                })?;
        }
        self.shared.runs.save_boxed(&self.proj.run).await?;
        Ok(())
    }

    fn cancel_token(&self) -> Option<CancellationToken> {
        self.controls.as_ref().map(|c| c.cancel.clone())
    }

    // ---- the loop ----------------------------------------------------------------------------

    /// Drives the run until it ends, pauses or is interrupted; persists it; returns it.
    pub(crate) async fn drive(mut self) -> Result<Run, EngineError> {
        let span =
            tracing::info_span!("run", run_id = %self.proj.run.id(), state = %self.proj.state());
        let result = async {
            while self.proj.run.status() == RunStatus::Running {
                let step = self.proj.run.steps();
                let span = tracing::debug_span!("step", step, state = %self.proj.state());
                if let Flow::Stop = self.step().instrument(span).await? {
                    break;
                }
                self.shared.ledgers.sync_boxed(self.proj.run.id()).await?;
            }
            self.persist().await
        }
        .instrument(span)
        .await;
        result.map(|()| self.into_run())
    }

    async fn step(&mut self) -> Result<Flow, EngineError> {
        if let Flow::Stop = self.drain_controls().await? {
            return Ok(Flow::Stop);
        }
        if self.cancel_token().is_some_and(|c| c.is_cancelled()) {
            self.abort().await?;
            return Ok(Flow::Stop);
        }
        let max = self.policy.snapshot.max_steps;
        if self.proj.run.steps() >= max {
            self.reject(Rejection::MaxSteps {
                limit: max,
                state: self.proj.state(),
            })
            .await?;
            return Ok(Flow::Continue);
        }
        if let Some(exhausted) = self.exhausted(&BudgetName::STEPS) {
            self.refuse_over_budget(exhausted).await?;
            return Ok(Flow::Continue);
        }

        let decision = match self.plan().await {
            Some(Ok(decision)) => decision,
            Some(Err(e)) => {
                self.fail(FailureKind::PlannerError, e.to_string()).await?;
                return Ok(Flow::Stop);
            }
            None => {
                self.abort().await?;
                return Ok(Flow::Stop);
            }
        };
        if depth::decision_too_deep(&decision) {
            // Neither recorded (it could not be read back) nor touched recursively.
            depth::dispose_decision(decision);
            self.reject(Rejection::TooDeep {
                limit: depth::MAX_JSON_DEPTH,
            })
            .await?;
            return Ok(Flow::Continue);
        }
        let step = self.proj.run.steps();
        if self.interrupting
            && let Decision::CallTool { tool, .. } = &decision
        {
            // No tool calls after an interrupt. The decision is not recorded, so the step is
            // not used up: resume asks the planner for this step again.
            let reason = format!(
                "interrupted through the run handle before the proposed call of `{tool}`; \
                 resume asks the planner for step {step} again"
            );
            self.record(EntryKind::RunInterrupted { reason }).await?;
            return Ok(Flow::Stop);
        }
        self.record(EntryKind::Decision {
            step,
            decision: decision.clone(),
        })
        .await?;
        let last_chance = self.interrupting;
        self.apply(decision).await?;
        if last_chance && self.proj.run.status() == RunStatus::Running {
            self.record(EntryKind::RunInterrupted {
                reason: "interrupted through the run handle".into(),
            })
            .await?;
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    }

    /// The error a charge of 1 on `name` would meet, if its limit is reached.
    fn exhausted(&self, name: &BudgetName) -> Option<rein_policy::BudgetExhausted> {
        let usage = self.proj.run.usage();
        let limit = self.proj.budget().limit(name)?;
        let (used, reserved) = (usage.used(name), usage.reserved(name));
        (used.saturating_add(reserved) >= limit).then(|| rein_policy::BudgetExhausted {
            name: name.clone(),
            limit,
            used,
            reserved,
            requested: 1,
        })
    }

    /// Asks the planner; `None` when the run was aborted meanwhile.
    async fn plan(&self) -> Option<Result<Decision, rein_run::PlannerError>> {
        let run = &self.proj.run;
        let request = PlanRequest::new(
            run,
            self.policy.allowed.in_state(run.state()),
            self.proj.budget().snapshot(run.usage()),
        )
        .with_skills(&self.shared.config.skills);
        // A panicking planner is a planner error on this run, never a dead task.
        let plan = AssertUnwindSafe(self.shared.planner.plan_boxed(request))
            .catch_unwind()
            .map(|outcome| {
                outcome.unwrap_or_else(|panic| {
                    Err(rein_run::PlannerError::failed(format!(
                        "the planner panicked: {}",
                        panic_message(panic.as_ref())
                    )))
                })
            })
            .instrument(tracing::debug_span!("plan", step = run.steps(), state = %run.state()));
        match self.cancel_token() {
            None => Some(plan.await),
            Some(cancel) => tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                decision = plan => Some(decision),
            },
        }
    }

    async fn drain_controls(&mut self) -> Result<Flow, EngineError> {
        loop {
            let Some(controls) = self.controls.as_mut() else {
                return Ok(Flow::Continue);
            };
            let Ok(control) = controls.rx.try_recv() else {
                return Ok(Flow::Continue);
            };
            match control {
                Control::Steer(note) => self.record(EntryKind::Steering { note }).await?,
                Control::Interrupt if !self.interrupting => {
                    self.interrupting = true;
                    self.record(EntryKind::Interrupt {
                        kind: InterruptKind::Graceful,
                    })
                    .await?;
                }
                Control::Interrupt => {}
            }
        }
    }

    async fn abort(&mut self) -> Result<(), EngineError> {
        self.record(EntryKind::Interrupt {
            kind: InterruptKind::Abort,
        })
        .await?;
        self.fail(
            FailureKind::Aborted,
            "aborted through the run handle".into(),
        )
        .await
    }

    // ---- decisions ---------------------------------------------------------------------------

    async fn apply(&mut self, decision: Decision) -> Result<(), EngineError> {
        match decision {
            Decision::CallTool { tool, input, .. } => self.call_tool(&tool, input).await,
            Decision::Transition {
                to: State::Done,
                reason,
            } => self.finish(reason, Value::Null).await,
            Decision::Transition {
                to: State::Failed,
                reason,
            } => self.give_up(reason).await,
            Decision::Transition { to, reason } => {
                if let Some(from) = self.move_to(to).await? {
                    self.record(EntryKind::Transition { from, to, reason })
                        .await?;
                }
                Ok(())
            }
            Decision::AskHuman { question, options } => {
                let kind = EntryKind::HumanInputRequested {
                    question: question.clone(),
                    options: options.clone(),
                };
                if let Err(e) = self.try_record(kind).await? {
                    return self
                        .reject(Rejection::InvalidQuestion { reason: e.reason })
                        .await;
                }
                self.record(EntryKind::RunPaused { question }).await?;
                Ok(())
            }
            Decision::Finish { summary, result } => self.finish(summary, result).await,
            Decision::Fail { reason } => self.give_up(reason).await,
            _ => self.reject(Rejection::UnsupportedDecision).await,
        }
    }

    /// Asks the lifecycle to move to `to`; a refusal is rejected (and recorded).
    async fn move_to(&mut self, to: State) -> Result<Option<State>, EngineError> {
        let from = self.proj.state();
        let result = match self.lifecycle.as_mut() {
            Some(lifecycle) => lifecycle
                .transition(to, &self.policy.act_guard, self.proj.run.usage())
                .map(|t| t.from),
            None => Ok(from),
        };
        match result {
            Ok(from) => Ok(Some(from)),
            Err(e) => {
                self.reject(Rejection::Transition(e)).await?;
                Ok(None)
            }
        }
    }

    async fn finish(&mut self, summary: String, result: Value) -> Result<(), EngineError> {
        if let Some(from) = self.move_to(State::Done).await? {
            self.record(EntryKind::Transition {
                from,
                to: State::Done,
                reason: summary.clone(),
            })
            .await?;
            self.record(EntryKind::RunCompleted { summary, result })
                .await?;
        }
        Ok(())
    }

    async fn give_up(&mut self, reason: String) -> Result<(), EngineError> {
        if let Some(from) = self.move_to(State::Failed).await? {
            self.record(EntryKind::Transition {
                from,
                to: State::Failed,
                reason: reason.clone(),
            })
            .await?;
            self.fail(FailureKind::PlannerGaveUp, reason).await?;
        }
        Ok(())
    }

    /// Records a rejected decision; hands it back to the planner or fails the run.
    async fn reject(&mut self, rejection: Rejection) -> Result<(), EngineError> {
        let message = rejection.to_string();
        tracing::info!(%message, "decision rejected");
        // Running out of steps cannot be corrected by the planner: those always end the run.
        // Nor can a decision too deep to record: unrecorded, it does not count as a step,
        // so a planner handed it back would propose it again at the same step.
        let fatal = matches!(
            rejection,
            Rejection::MaxSteps { .. } | Rejection::UnsupportedDecision | Rejection::TooDeep { .. }
        ) || matches!(&rejection, Rejection::BudgetExhausted(e) if e.name == BudgetName::STEPS);
        let handed_back = !fatal
            && matches!(
                self.shared.config.on_violation,
                OnViolation::HandBack { .. }
            )
            && !self
                .proj
                .budget()
                .is_exhausted(self.proj.run.usage(), &BudgetName::VIOLATIONS);
        self.record(EntryKind::PolicyViolation {
            violation: rejection.violation(),
            message: message.clone(),
            handed_back,
        })
        .await?;
        if handed_back {
            return Ok(());
        }
        let kind = match rejection {
            Rejection::MaxSteps { .. } => FailureKind::MaxSteps,
            Rejection::BudgetExhausted(_) => FailureKind::BudgetExhausted,
            _ => FailureKind::PolicyViolation,
        };
        let message = if matches!(
            self.shared.config.on_violation,
            OnViolation::HandBack { .. }
        ) && !fatal
        {
            format!("{message} (and the violations budget is exhausted)")
        } else {
            message
        };
        self.fail(kind, message).await
    }

    // ---- tool calls --------------------------------------------------------------------------

    async fn call_tool(&mut self, name: &str, input: Value) -> Result<(), EngineError> {
        let shared = Arc::clone(&self.shared);
        let Some(entry) = shared.tools.get(name) else {
            let known = shared.tools.names();
            return self
                .reject(Rejection::UnknownTool {
                    name: crate::tools::clip(name),
                    known,
                })
                .await;
        };
        let errors = entry.schema_errors(&input);
        if !errors.is_empty() {
            return self
                .reject(Rejection::InvalidInput {
                    tool: entry.spec.name().clone(),
                    errors,
                })
                .await;
        }
        if let Err(ineligible) = self
            .policy
            .eligibility
            .check(self.proj.state(), &entry.spec)
        {
            return self.reject(Rejection::Ineligible(ineligible)).await;
        }
        if self.interrupting {
            // Graceful interrupt: no further tool calls; the step loop marks the run interrupted.
            return Ok(());
        }
        let tool = entry.spec.name().clone();
        let annotations = *entry.spec.annotations();
        let input_hash = Digest::of_json(&input);
        if annotations.is_cacheable()
            && let Some(output) = self.cache.get(&(tool.clone(), input_hash)).cloned()
        {
            return self
                .record(EntryKind::ToolResult {
                    tool,
                    attempt: 0,
                    duration_ms: 0,
                    cached: true,
                    output,
                })
                .await;
        }
        if let CircuitState::Open { retry_after } = entry.stack.circuit_state()
            && !retry_after.is_zero()
        {
            // Refused before any attempt: nothing is charged, nobody is asked to approve.
            let error = ToolError::CircuitOpen {
                tool: tool.clone(),
                retry_after,
            };
            return self.tool_failed(tool, error).await;
        }
        if !self.approve(entry, &input, input_hash).await? {
            return Ok(());
        }
        self.execute(entry, input, input_hash, 1).await
    }

    /// Asks for approval when the policy requires it. Fails closed.
    async fn approve(
        &mut self,
        entry: &ToolEntry,
        input: &Value,
        input_hash: Digest,
    ) -> Result<bool, EngineError> {
        let Some(reason) = self.policy.snapshot.approvals.requires(&entry.spec) else {
            return Ok(true);
        };
        let tool = entry.spec.name().clone();
        let run = &self.proj.run;
        let request = ApprovalRequest::new(
            run.id().clone(),
            run.steps(),
            run.state(),
            &entry.spec,
            input.clone(),
            reason,
        );
        self.record(EntryKind::ApprovalRequested {
            tool: tool.clone(),
            input_hash,
            reason: reason.to_string(),
        })
        .await?;
        let timeout = self.policy.snapshot.approvals.timeout();
        let (approver, why, granted) = match self.shared.approver.clone() {
            None => (
                "engine".to_owned(),
                "no approver is configured; approvals fail closed".to_owned(),
                false,
            ),
            Some(approver) => {
                // A panicking approver is an approver error: a denial, like any other.
                let decide = AssertUnwindSafe(approver.decide_boxed(&request))
                    .catch_unwind()
                    .map(|outcome| {
                        outcome.unwrap_or_else(|panic| {
                            Err(rein_policy::ApproverError::new(format!(
                                "the approver panicked: {}",
                                panic_message(panic.as_ref())
                            )))
                        })
                    });
                let answer = tokio::time::timeout(timeout, decide);
                let answer = match self.cancel_token() {
                    None => Some(answer.await),
                    Some(cancel) => tokio::select! {
                        biased;
                        () = cancel.cancelled() => None,
                        a = answer => Some(a),
                    },
                };
                match answer {
                    None => {
                        self.abort().await?;
                        return Ok(false);
                    }
                    Some(Err(_)) => (
                        "engine".to_owned(),
                        format!(
                            "the approver did not answer within {} ms; approvals fail closed",
                            timeout.as_millis()
                        ),
                        false,
                    ),
                    Some(Ok(Err(e))) => (
                        "engine".to_owned(),
                        format!("{e}; approvals fail closed"),
                        false,
                    ),
                    Some(Ok(Ok(response))) => judge(&request, &response),
                }
            }
        };
        if granted {
            self.record(EntryKind::ApprovalGranted {
                tool,
                input_hash,
                approver,
                reason: why,
            })
            .await?;
            return Ok(true);
        }
        self.record(EntryKind::ApprovalDenied {
            tool: tool.clone(),
            input_hash,
            approver: approver.clone(),
            reason: why.clone(),
        })
        .await?;
        self.reject(Rejection::ApprovalDenied {
            tool,
            approver,
            reason: why,
        })
        .await?;
        Ok(false)
    }

    /// Charges and ledgers attempt `first_attempt`, runs the call through the tool's stack,
    /// and ledgers every retry as the stack asks for it — the failed attempt's error, the
    /// retry's charge and its `tool_call`, before the retry starts — then the outcome.
    async fn execute(
        &mut self,
        entry: &ToolEntry,
        input: Value,
        input_hash: Digest,
        first_attempt: u32,
    ) -> Result<(), EngineError> {
        let tool = entry.spec.name().clone();
        let idempotent = entry.spec.annotations().is_idempotent();
        if !self.charge_attempt().await? {
            return Ok(());
        }
        self.record(EntryKind::ToolCall {
            tool: tool.clone(),
            input: input.clone(),
            input_hash,
            attempt: first_attempt,
            idempotent,
        })
        .await?;
        let call_entry = self.ledger.len() - 1;
        if !idempotent {
            // The in-doubt marker must be durable before the side effect can happen.
            self.shared.ledgers.sync_boxed(self.proj.run.id()).await?;
        }
        let link = AttemptLink::new(self.attempt_tx.clone());
        // The input moves into the call; retries, which are rare, read it back from the ledger.
        let call = ToolCall::new(input).with_observer(Arc::new(link));
        let span = tracing::debug_span!("tool", tool = %tool, state = %self.proj.state());
        let mut attempts = Attempts {
            tool: tool.clone(),
            input_hash,
            idempotent,
            first_attempt,
            call_entry,
            current: 1,
            ended: None,
            veto: None,
        };
        let cancel = self.cancel_token();
        let outcome = {
            let call = entry.stack.call(call).instrument(span);
            tokio::pin!(call);
            let mut open = true;
            loop {
                // Attempt events first: a retry waits on its admission while the call is polled.
                let next = match &cancel {
                    None => tokio::select! {
                        biased;
                        event = self.attempt_rx.recv(), if open => Next::Event(event),
                        outcome = &mut call => Next::Done(outcome),
                    },
                    Some(cancel) => tokio::select! {
                        biased;
                        () = cancel.cancelled() => Next::Aborted,
                        event = self.attempt_rx.recv(), if open => Next::Event(event),
                        outcome = &mut call => Next::Done(outcome),
                    },
                };
                match next {
                    Next::Event(Some(event)) => self.on_attempt(&mut attempts, event).await?,
                    Next::Event(None) => open = false,
                    Next::Done(outcome) => break Some(outcome),
                    Next::Aborted => break None,
                }
            }
            // Dropping the call here drops an attempt still in flight, which reports itself.
        };
        while let Ok(event) = self.attempt_rx.try_recv() {
            // Only ends are left: a retry asked for now would never be polled.
            if let AttemptEvent::Ended(record) = event {
                attempts.ended = Some(record);
            }
        }
        let aborted = outcome.is_none();
        let mut outcome = outcome.unwrap_or(Err(ToolError::Cancelled));
        if let Some(last) = attempts.veto.take() {
            // A vetoed retry is no failure of its own: the call failed with the last attempt.
            outcome = Err(last);
        } else {
            self.record_last_attempt(entry, &attempts, &mut outcome)
                .await?;
        }
        if aborted {
            return self.abort().await;
        }
        if let Err(error) = outcome
            && self.shared.config.on_tool_error == OnToolError::FailRun
        {
            self.fail(
                FailureKind::ToolFailed,
                format!("tool `{tool}` failed: {error}"),
            )
            .await?;
        }
        Ok(())
    }

    /// Handles what the call's observer reports: keeps an attempt's end until it is known
    /// whether a retry follows; admits a retry only once its charge and call are recorded
    /// (and the failure before it), or vetoes it when the `tool_calls` budget cannot pay.
    async fn on_attempt(
        &mut self,
        attempts: &mut Attempts,
        event: AttemptEvent,
    ) -> Result<(), EngineError> {
        let (attempt, reply) = match event {
            AttemptEvent::Ended(record) => {
                attempts.ended = Some(record);
                return Ok(());
            }
            AttemptEvent::Admit { attempt, reply } => (attempt, reply),
        };
        // The stack reports an attempt before it asks for the next, and retries only errors.
        let Some(AttemptRecord {
            attempt: failed,
            error: Some(error),
            elapsed,
        }) = attempts.ended.take()
        else {
            let _ = reply.send(Err(ToolError::failed(
                "no retry: the attempt before it was not reported as failed",
            )));
            return Ok(());
        };
        let tool = attempts.tool.clone();
        let failed_number = attempts.number(failed);
        let duration_ms = millis(elapsed);
        if let Some(exhausted) = self.exhausted(&BudgetName::TOOL_CALLS) {
            self.record(EntryKind::ToolError {
                tool,
                attempt: failed_number,
                duration_ms,
                error: error.clone(),
                will_retry: false,
            })
            .await?;
            self.record(exhausted_entry(&exhausted)).await?;
            attempts.veto = Some(error);
            let _ = reply.send(Err(ToolError::failed(VETO_MESSAGE)));
            return Ok(());
        }
        self.record(EntryKind::ToolError {
            tool: tool.clone(),
            attempt: failed_number,
            duration_ms,
            error,
            will_retry: true,
        })
        .await?;
        self.record(EntryKind::BudgetConsumed {
            name: BudgetName::TOOL_CALLS,
            amount: 1,
            used: self.proj.run.usage().used(&BudgetName::TOOL_CALLS) + 1,
            limit: self.proj.budget().limit(&BudgetName::TOOL_CALLS),
        })
        .await?;
        let input = match self.ledger.entries()[attempts.call_entry].event() {
            EntryKind::ToolCall { input, .. } => input.clone(),
            _ => Value::Null,
        };
        self.record(EntryKind::ToolCall {
            tool,
            input,
            input_hash: attempts.input_hash,
            attempt: attempts.number(attempt),
            idempotent: attempts.idempotent,
        })
        .await?;
        if !attempts.idempotent {
            // The same rule as for the first attempt: durable before the side effect.
            self.shared.ledgers.sync_boxed(self.proj.run.id()).await?;
        }
        attempts.current = attempt;
        // A call dropped meanwhile no longer listens; the attempt is recorded, never run.
        let _ = reply.send(Ok(()));
        Ok(())
    }

    /// Records how the call's last attempt ended: its result, its error, or — when it never
    /// reported (refused before any attempt by an open circuit or a full bulkhead, or dropped
    /// by an abort before it started) — the call's error.
    async fn record_last_attempt(
        &mut self,
        entry: &ToolEntry,
        attempts: &Attempts,
        outcome: &mut Result<ToolOutput, ToolError>,
    ) -> Result<(), EngineError> {
        let tool = attempts.tool.clone();
        // An output the ledger could not read back is a failed call, taken apart unrecorded.
        let mut too_deep = None;
        if outcome.as_ref().is_ok_and(|o| depth::too_deep(o.value())) {
            let error = ToolError::failed(format!(
                "the tool returned JSON nested more than {} levels deep, which the ledger cannot \
                 record",
                depth::MAX_JSON_DEPTH
            ));
            if let Ok(output) = std::mem::replace(outcome, Err(error.clone())) {
                depth::dispose(output.into_value());
            }
            too_deep = Some(error);
        }
        let number = attempts.number(attempts.current);
        let (error, duration_ms) = match &attempts.ended {
            Some(ended) if ended.attempt == attempts.current => {
                (ended.error.clone(), millis(ended.elapsed))
            }
            _ => match outcome {
                Err(error) => (Some(error.clone()), 0),
                Ok(_) => (None, 0),
            },
        };
        if let Some(error) = error.or(too_deep) {
            return self
                .record(EntryKind::ToolError {
                    tool,
                    attempt: number,
                    duration_ms,
                    error,
                    will_retry: false,
                })
                .await;
        }
        if let Ok(output) = outcome {
            let output = self.payload(&tool, output).await?;
            if entry.spec.annotations().is_cacheable() {
                self.cache
                    .insert((tool.clone(), attempts.input_hash), output.clone());
            }
            self.record(EntryKind::ToolResult {
                tool,
                attempt: number,
                duration_ms,
                cached: false,
                output,
            })
            .await?;
        }
        Ok(())
    }

    /// Records a call refused before any attempt (attempt 0: nothing ran, nothing was
    /// charged), and fails the run unless tool errors are handed back.
    async fn tool_failed(&mut self, tool: ToolName, error: ToolError) -> Result<(), EngineError> {
        let message = format!("tool `{tool}` failed: {error}");
        self.record(EntryKind::ToolError {
            tool,
            attempt: 0,
            duration_ms: 0,
            error,
            will_retry: false,
        })
        .await?;
        if self.shared.config.on_tool_error == OnToolError::FailRun {
            self.fail(FailureKind::ToolFailed, message).await?;
        }
        Ok(())
    }

    /// Records that a charge would exceed a budget, then rejects the decision that needed it.
    async fn refuse_over_budget(
        &mut self,
        exhausted: rein_policy::BudgetExhausted,
    ) -> Result<(), EngineError> {
        self.record(exhausted_entry(&exhausted)).await?;
        self.reject(Rejection::BudgetExhausted(exhausted)).await
    }

    /// Charges one `tool_calls` unit for an attempt; a refusal is rejected (and recorded).
    async fn charge_attempt(&mut self) -> Result<bool, EngineError> {
        if std::mem::take(&mut self.prepaid) {
            return Ok(true);
        }
        let name = BudgetName::TOOL_CALLS;
        match self.exhausted(&name) {
            None => {
                let used = self.proj.run.usage().used(&name) + 1;
                let limit = self.proj.budget().limit(&name);
                self.record(EntryKind::BudgetConsumed {
                    name,
                    amount: 1,
                    used,
                    limit,
                })
                .await?;
                Ok(true)
            }
            Some(exhausted) => {
                self.refuse_over_budget(exhausted).await?;
                Ok(false)
            }
        }
    }

    /// The output inline, or moved to the artifact store when it is larger than the limit.
    async fn payload(&self, tool: &ToolName, output: &ToolOutput) -> Result<Payload, EngineError> {
        let limit = self.shared.config.inline_output_limit;
        if fits(output.value(), limit) {
            return Ok(Payload::Inline(output.value().clone()));
        }
        let bytes = serde_json::to_vec(output.value()).unwrap_or_default();
        let options = StoreOptions::new()
            .with_content_type("application/json")
            .with_name(format!("{tool} output"))
            .with_metadata("run_id", self.proj.run.id().as_str());
        let reference = self.shared.artifacts.put_boxed(bytes, options).await?;
        Ok(Payload::Artifact(ArtifactLink {
            id: reference.id().to_string(),
            checksum: reference.checksum().to_string(),
            size: reference.size(),
            content_type: reference.content_type().to_owned(),
        }))
    }

    /// Finishes the step a crash cut short, from where its ledger stops: records the end
    /// the step had reached (a completion, a failure, a rejection), or applies the decision
    /// again when nothing it did is on record but markers (with the attempt's `tool_calls`
    /// unit already paid, if it was charged).
    pub(crate) async fn complete_step(&mut self, step: Unsettled) -> Result<(), EngineError> {
        // The projection names the decision by its place in this ledger; read it back.
        let decision = match self
            .ledger
            .entries()
            .get(step.decision_at)
            .map(rein_ledger::Entry::event)
        {
            Some(EntryKind::Decision { decision, .. }) => decision.clone(),
            _ => {
                return Err(EngineError::InconsistentLedger {
                    id: self.proj.run.id().clone(),
                    seq: step.decision_at as u64 + 1,
                    reason: "the interrupted step's decision is not at the entry the ledger's \
                             replay pointed to"
                        .to_owned(),
                });
            }
        };
        match step.progress {
            Progress::Started => self.apply(decision).await,
            Progress::Charged => {
                self.prepaid = true;
                let applied = self.apply(decision).await;
                self.prepaid = false;
                applied
            }
            Progress::Retrying { failed, error } => self.retry(failed, error, false).await,
            Progress::RetryCharged { failed, error } => self.retry(failed, error, true).await,
            Progress::Ended(State::Done) => {
                let (summary, result) = match decision {
                    Decision::Finish { summary, result } => (summary, result),
                    Decision::Transition { reason, .. } => (reason, Value::Null),
                    other => (format!("{other:?}"), Value::Null),
                };
                self.record(EntryKind::RunCompleted { summary, result })
                    .await
            }
            Progress::Ended(_) => {
                let reason = match decision {
                    Decision::Fail { reason } | Decision::Transition { reason, .. } => reason,
                    other => format!("{other:?}"),
                };
                self.fail(FailureKind::PlannerGaveUp, reason).await
            }
            Progress::Rejected { violation, message } => {
                let kind = match violation {
                    rein_ledger::Violation::MaxSteps => FailureKind::MaxSteps,
                    rein_ledger::Violation::BudgetExhausted => FailureKind::BudgetExhausted,
                    _ => FailureKind::PolicyViolation,
                };
                self.fail(kind, message).await
            }
            Progress::Denied {
                tool,
                approver,
                reason,
            } => {
                self.reject(Rejection::ApprovalDenied {
                    tool,
                    approver,
                    reason,
                })
                .await
            }
            Progress::ToolFailed { tool, error } => {
                if self.shared.config.on_tool_error != OnToolError::FailRun {
                    return Ok(());
                }
                self.fail(
                    FailureKind::ToolFailed,
                    format!("tool `{tool}` failed: {error}"),
                )
                .await
            }
        }
    }

    /// Makes the retry a crash cut short after attempt `failed` failed: the next attempt,
    /// charged unless `charged` says its unit is paid already. A retry the budget cannot pay,
    /// of a tool not idempotent or no longer registered, ends the call with the failure on
    /// record — as the stack would have ended it.
    async fn retry(
        &mut self,
        failed: OpenAttempt,
        error: ToolError,
        charged: bool,
    ) -> Result<(), EngineError> {
        let shared = Arc::clone(&self.shared);
        let entry = shared
            .tools
            .get(failed.tool.as_str())
            .filter(|_| failed.idempotent);
        let exhausted = if charged {
            None
        } else {
            self.exhausted(&BudgetName::TOOL_CALLS)
        };
        let Some(entry) = entry.filter(|_| exhausted.is_none()) else {
            self.record(EntryKind::ToolError {
                tool: failed.tool.clone(),
                attempt: failed.attempt,
                duration_ms: 0,
                error: error.clone(),
                will_retry: false,
            })
            .await?;
            if let Some(exhausted) = exhausted {
                self.record(exhausted_entry(&exhausted)).await?;
            }
            if self.shared.config.on_tool_error == OnToolError::FailRun {
                self.fail(
                    FailureKind::ToolFailed,
                    format!("tool `{}` failed: {error}", failed.tool),
                )
                .await?;
            }
            return Ok(());
        };
        let input_hash = Digest::of_json(&failed.input);
        self.prepaid = charged;
        let executed = self
            .execute(
                entry,
                failed.input,
                input_hash,
                failed.attempt.saturating_add(1),
            )
            .await;
        self.prepaid = false;
        executed
    }

    /// Resolves a call left in doubt by a crash, as the in-doubt policy says.
    pub(crate) async fn settle_in_doubt(
        &mut self,
        open: OpenAttempt,
        retry_all: bool,
    ) -> Result<(), EngineError> {
        if !(open.idempotent || retry_all) {
            return self
                .fail(
                    FailureKind::InDoubtToolCall,
                    Projection::in_doubt_failure(&open).message,
                )
                .await;
        }
        let shared = Arc::clone(&self.shared);
        let Some(entry) = shared.tools.get(open.tool.as_str()) else {
            return self
                .fail(
                    FailureKind::InDoubtToolCall,
                    format!(
                        "the in-doubt call's tool `{}` is no longer registered",
                        open.tool
                    ),
                )
                .await;
        };
        let input_hash = Digest::of_json(&open.input);
        self.execute(
            entry,
            open.input,
            input_hash,
            open.attempt.saturating_add(1),
        )
        .await
    }
}

/// Reads an approver's response: granted only if it answers this exact call.
fn judge(request: &ApprovalRequest, response: &ApprovalResponse) -> (String, String, bool) {
    if !response.covers(request) {
        let why = if response.input_hash() == request.input_hash() {
            format!(
                "the response was given for another call (tool `{}`), not this call of `{}`; an \
                 approval never carries over",
                response.tool(),
                request.tool()
            )
        } else {
            format!(
                "the response covers input {} but the call's input is {}; an approval never \
                 carries over",
                response.input_hash(),
                request.input_hash()
            )
        };
        return (response.approver().to_owned(), why, false);
    }
    (
        response.approver().to_owned(),
        response.reason().to_owned(),
        response.is_granted(),
    )
}

/// The message of a panic payload, when it has one.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether `value`'s compact JSON is at most `limit` bytes, without building it.
fn fits(value: &Value, limit: usize) -> bool {
    struct Counter {
        left: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(buf.len())
                .ok_or(std::io::ErrorKind::FileTooLarge)?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter { left: limit }, value).is_ok()
}

/// The `budget_exhausted` entry that records `exhausted`.
fn exhausted_entry(exhausted: &rein_policy::BudgetExhausted) -> EntryKind {
    EntryKind::BudgetExhausted {
        name: exhausted.name.clone(),
        limit: exhausted.limit,
        used: exhausted.used,
        requested: exhausted.requested,
    }
}

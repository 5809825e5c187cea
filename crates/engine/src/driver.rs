//! The run loop: one task owns one run, asks the planner, checks every policy, executes,
//! and records each step in the ledger before it changes the run. Read top to bottom: the
//! loop, one step, the plan, the controls. How each kind of decision is applied is in
//! `apply`, the tool-call pipeline in `call`, approvals in `approval`, crash recovery in
//! `recovery`; every write goes through the run's [`Recorder`].

use std::collections::HashMap;
use std::sync::Arc;

use rein_ledger::{Entry, EntryKind, HookPoint, InterruptKind, Ledger};
use rein_run::telemetry::TraceParent;
use rein_run::{
    BoxFuture, BudgetName, Decision, Digest, Failure, FailureKind, Payload, Run, RunId, RunStatus,
    StopKind, ToolName,
};
use rein_statemachine::Lifecycle;
use tokio::sync::{broadcast, mpsc};
use tracing::Instrument as _;

use crate::attempts::{AttemptEvent, AttemptLink};
use crate::depth;
use crate::error::{EngineError, NarrowingError, ProjectionError};
use crate::events::Published;
use crate::gate::HookRuled;
use crate::handle::{Control, Controls};
use crate::narrow::PolicyNarrowing;
use crate::plan_link::{PlanLink, PlanMessage, Planned};
use crate::project::Projection;
use crate::record_first::{RecordFirst, Signals};
use crate::recorder::Recorder;
use crate::rejection::Rejection;
use crate::shared::{RunPolicy, Shared};
use crate::writer::LedgerWriter;

/// Drives one run. Owned by one task; nothing here is shared with another run.
pub(crate) struct Driver {
    pub(crate) shared: Arc<Shared>,
    pub(crate) policy: Arc<RunPolicy>,
    /// The one writer of the run: projection, ledger, events.
    pub(crate) rec: Recorder,
    pub(crate) cache: HashMap<(ToolName, Digest), Payload>,
    /// The run's end of its handle (control messages, the abort signal), if it has one.
    pub(crate) inbox: Option<Inbox>,
    /// A graceful interrupt arrived: no more tool calls, one more decision.
    pub(crate) interrupting: bool,
    /// What a tool call's stack announces (an attempt's end, a retry to admit), put on
    /// record before the retry runs (`call`).
    pub(crate) tool_attempts: RecordFirst<AttemptLink, AttemptEvent>,
    /// What the planner announces through every step's meter (a model attempt, its
    /// outcome), put on record before the request goes out (`plan_link`).
    pub(crate) model_attempts: RecordFirst<PlanLink, PlanMessage>,
    /// The entries a step's planning appended, to apply to the projection once it returns
    /// (kept between steps: a planner that announces nothing never allocates it).
    pub(crate) planned: Vec<Entry>,
    /// What a resume left for the step it finishes (`recovery`).
    pub(crate) resume: Resume,
    /// When the run's deadline passes, if it has one (see `deadline`).
    pub(crate) deadline: Option<crate::deadline::Due>,
    /// Sub-runs: the planner a child is driven by, a child to settle first on resume.
    pub(crate) sub: crate::children::SubState,
    /// The earlier runs of the conversation this run follows up on, oldest first (empty
    /// for a run that follows up on none).
    pub(crate) conversation: Arc<[rein_run::EarlierRun]>,
    /// The hook payload of the last point, back once its hooks answered: the next point
    /// reuses it when no hook kept it (`consult`).
    pub(crate) hook_scratch: Option<Arc<crate::hook::HookPayload>>,
    /// The run's count of spends (`BudgetUsage::spends`) when that payload's `used` was
    /// last brought up to date: while it stays the same, so does what the run used.
    pub(crate) hook_spends: u64,
}

/// What a resume left for the step it finishes, read from the ledger the run was opened
/// from; empty once that step is settled.
#[derive(Debug, Default)]
pub(crate) struct Resume {
    /// The decision of the step a stop left unsettled (its place is `proj.unsettled`).
    pub(crate) reopened: Option<Decision>,
    /// The next attempt's `tool_calls` unit is already charged (by the step a crash cut
    /// short).
    pub(crate) prepaid: bool,
    /// The trace the run's last drive was exported as, which this drive's span links to.
    pub(crate) trace: Option<TraceParent>,
}

/// Control messages and the abort and stop signals, as the driver receives them.
#[derive(Debug)]
pub(crate) struct Inbox {
    /// A handle's control messages; none for a run driven without one.
    pub(crate) rx: Option<mpsc::UnboundedReceiver<Control>>,
    pub(crate) signals: Arc<Signals>,
    /// Controls taken off `rx` while looking for steering notes, handled first next step.
    pub(crate) held: Vec<Control>,
}

impl Inbox {
    /// The inbox of a run driven without a handle: signals only an operator's stop
    /// request pulls (see `operator_stop`).
    pub(crate) fn signals_only() -> Self {
        Self {
            rx: None,
            signals: Arc::default(),
            held: Vec::new(),
        }
    }
}

/// The driver's and the recorder's ends of a handle's channels.
fn split(controls: Option<Controls>) -> (Option<Inbox>, Option<broadcast::Sender<Published>>) {
    match controls {
        Some(Controls {
            rx,
            cancel,
            stop,
            events,
        }) => (
            Some(Inbox {
                rx: Some(rx),
                signals: Arc::new(Signals { cancel, stop }),
                held: Vec::new(),
            }),
            events,
        ),
        None => (None, None),
    }
}

/// How a step ended, for the loop.
enum Flow {
    Continue,
    Stop,
}

impl Driver {
    /// A driver for a run rebuilt from its ledger (resume, narrowing). It goes on from the
    /// ledger's end and keeps none of its entries, only what it needs of them: when the
    /// deadline passes, and the decision of a step left unsettled.
    pub(crate) fn new(
        shared: Arc<Shared>,
        policy: Arc<RunPolicy>,
        proj: Projection,
        ledger: &Ledger,
        controls: Option<Controls>,
    ) -> Result<Self, EngineError> {
        let (inbox, events) = split(controls);
        let deadline = crate::deadline::due(&shared, &policy, ledger.entries());
        let reopened = proj
            .unsettled
            .as_ref()
            .and_then(|step| unsettled_decision(ledger, step));
        let log = LedgerWriter::new(Arc::clone(&shared), ledger.chain(), events);
        // The lifecycle machine, rebuilt from the moves the ledger records, lives as long as
        // the driver: every move from here goes through it.
        let moves = crate::recorder::recorded_moves(ledger.entries());
        let lifecycle = Lifecycle::rebuild(moves, policy.snapshot.transitions).map_err(|e| {
            EngineError::InconsistentLedger {
                id: proj.run.id().clone(),
                seq: ledger.len() as u64,
                source: Box::new(ProjectionError::Lifecycle(e.into())),
            }
        })?;
        let rec = Recorder::new(proj, log, lifecycle);
        let mut driver = Self::with(shared, policy, rec, inbox, deadline);
        driver.resume.reopened = reopened;
        driver.resume.trace = ledger.entries().iter().rev().find_map(|e| match e.event() {
            EntryKind::TraceStarted { traceparent } => Some(*traceparent),
            _ => None,
        });
        Ok(driver)
    }

    /// A driver for a new run, its `run_started` entry recorded.
    pub(crate) async fn start(
        shared: Arc<Shared>,
        policy: Arc<RunPolicy>,
        started: EntryKind,
        id: RunId,
        controls: Option<Controls>,
    ) -> Result<Self, EngineError> {
        let (inbox, events) = split(controls);
        let budget = policy.snapshot.budget.clone();
        let transitions = policy.snapshot.transitions;
        let (rec, started) = Recorder::start(
            Arc::clone(&shared),
            id,
            started,
            budget,
            transitions,
            events,
        )
        .await?;
        let deadline = crate::deadline::due(&shared, &policy, std::slice::from_ref(&started));
        Ok(Self::with(shared, policy, rec, inbox, deadline))
    }

    fn with(
        shared: Arc<Shared>,
        policy: Arc<RunPolicy>,
        rec: Recorder,
        inbox: Option<Inbox>,
        deadline: Option<crate::deadline::Due>,
    ) -> Self {
        let clock = Arc::clone(&shared.clock);
        let tool_attempts = RecordFirst::new(|tx| AttemptLink::new(tx, clock));
        Self {
            deadline,
            rec,
            shared,
            policy,
            cache: HashMap::new(),
            inbox,
            interrupting: false,
            tool_attempts,
            model_attempts: RecordFirst::new(PlanLink::new),
            planned: Vec::new(),
            resume: Resume::default(),
            sub: crate::children::SubState::default(),
            conversation: Arc::from([]),
            hook_scratch: None,
            hook_spends: 0,
        }
    }

    /// The run's gate, asked now: every "may it?" of the run (see `gate`).
    #[inline]
    pub(crate) fn gate(&self) -> crate::gate::Gate<'_> {
        crate::gate::Gate::new(
            &self.policy,
            &self.shared.tools,
            &self.rec.proj,
            self.interrupting,
            self.deadline.map(|due| (due, self.shared.clock.now())),
        )
    }

    pub(crate) fn run(&self) -> &Run {
        &self.rec.proj.run
    }

    pub(crate) fn into_run(self) -> Run {
        self.rec.proj.run
    }

    /// The run's abort and stop signals, for a wait to give up on.
    pub(crate) fn signals(&self) -> Option<Arc<Signals>> {
        self.inbox.as_ref().map(|inbox| Arc::clone(&inbox.signals))
    }

    /// Whether the run was aborted ([`RunHandle::abort`], or an operator's stop request).
    ///
    /// [`RunHandle::abort`]: crate::RunHandle::abort
    pub(crate) fn aborted(&self) -> bool {
        self.inbox.as_ref().is_some_and(|c| c.signals.aborted())
    }

    /// Whether a stop was asked for ([`RunHandle::stop`], or an operator's stop request).
    ///
    /// [`RunHandle::stop`]: crate::RunHandle::stop
    pub(crate) fn stop_requested(&self) -> bool {
        self.inbox.as_ref().is_some_and(|c| c.signals.stopped())
    }

    /// Drives the run until it ends, pauses or is interrupted; persists it; returns it.
    pub(crate) async fn drive(mut self) -> Result<Run, EngineError> {
        // A follow-up's drives share its conversation's id: the first run's.
        let conversation = self
            .conversation
            .first()
            .map_or_else(|| self.rec.proj.run.id(), |first| first.run.id());
        let span =
            crate::telemetry::run_span(&self.rec.proj.run, conversation, self.rec.log.len() > 1);
        // Stop requests from other processes reach the run through its abort and stop
        // signals, for as long as it is driven here.
        let _watch = self.watch_stop_requests();
        let result = async {
            self.trace_drive().await?;
            self.honour_waiting_stop().await?;
            if self.rec.steps() == 0
                && self.rec.proj.unsettled.is_none()
                && !self.run_start().await?
            {
                return self.rec.persist().await;
            }
            self.resume_open_child().await?;
            // A sequence a stop cut short goes on with its next member.
            self.continue_sequence().await?;
            while self.rec.status() == RunStatus::Running {
                let step = self.rec.steps();
                let span = crate::telemetry::step_span(step, self.rec.state());
                if let Flow::Stop = self.step().instrument(span).await? {
                    break;
                }
                self.shared.ledgers.sync_boxed(self.rec.id()).await?;
            }
            self.rec.persist().await
        }
        .instrument(span.clone())
        .await;
        if result.is_ok() {
            self.after_run().await;
        }
        crate::telemetry::run_ended(&span, &self.rec.proj.run, &result);
        result.map(|()| self.into_run())
    }

    /// With an exporter's trace context, links this drive's span (the current one) to the
    /// drive before it and records its own context, so the next drive can link to it.
    async fn trace_drive(&mut self) -> Result<(), EngineError> {
        let Some(context) = self.shared.config.trace_context.clone() else {
            return Ok(());
        };
        if let Some(previous) = self.resume.trace.take() {
            context.link_current(&previous);
        }
        match context.current() {
            Some(traceparent) => {
                self.rec
                    .record(EntryKind::TraceStarted { traceparent })
                    .await
            }
            None => Ok(()),
        }
    }

    async fn step(&mut self) -> Result<Flow, EngineError> {
        self.drain_controls().await?;
        if self.aborted() {
            self.abort().await?;
            return Ok(Flow::Stop);
        }
        if self.stop_requested() {
            self.halt().await?;
            return Ok(Flow::Stop);
        }
        if let Some(failure) = self.gate().overdue() {
            self.rec.fail(failure.kind, failure.message).await?;
            return Ok(Flow::Stop);
        }
        if let Some(max_steps) = self.gate().max_steps_reached() {
            self.reject(max_steps).await?;
            return Ok(Flow::Continue);
        }
        if let Err(exhausted) = self.gate().fits(&BudgetName::STEPS, 1) {
            self.refuse_over_budget(exhausted).await?;
            return Ok(Flow::Continue);
        }

        if self.stop_on_overrun().await? {
            return Ok(Flow::Stop);
        }
        if let Some(events) = &self.rec.log.events {
            events.step_started(self.rec.steps(), self.rec.state());
        }
        if self.hooked(HookPoint::BeforeModel, None) {
            let payload = self.hook_payload(HookPoint::BeforeModel, |_| {});
            let ruled = match self.rule_hooks(payload, None) {
                Some(ruling) => ruling.await?,
                None => HookRuled::default(),
            };
            if let Some(rejection) = ruled.denied {
                self.reject(rejection).await?;
                return Ok(Flow::Continue);
            }
        }
        let meter = self.meter();
        let planned = self.plan(&meter).await?;
        self.settle_planner_calls(meter).await?;
        if self.stop_on_overrun().await? {
            return Ok(Flow::Stop);
        }
        let decision = match planned {
            Planned::Decided(Ok(decision)) => decision,
            Planned::Decided(Err(rein_run::PlannerError::OverBudget(exhausted))) => {
                self.refuse_planner_call(exhausted).await?;
                return Ok(Flow::Stop);
            }
            Planned::Decided(Err(e)) => {
                // A planner that failed once the deadline passed was cut off by it.
                let failure = self
                    .gate()
                    .overdue()
                    .unwrap_or_else(|| Failure::new(FailureKind::PlannerError, e.to_string()));
                self.rec.fail(failure.kind, failure.message).await?;
                return Ok(Flow::Stop);
            }
            Planned::Aborted => {
                self.abort().await?;
                return Ok(Flow::Stop);
            }
            Planned::Stopped => {
                // The model call in flight was cancelled: charged as the in-doubt rule
                // charges a call whose outcome is unknown, then the run stops.
                let model = std::mem::take(&mut self.rec.proj.model);
                self.settle_model_calls(model, crate::plan_link::STOPPED_REASON)
                    .await?;
                self.halt().await?;
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
        // Shown after the depth check: a hook is handed a copy, and copying a decision too
        // deep to record would recurse once a level.
        if self.hooked(HookPoint::AfterModel, None) {
            let payload = self.hook_payload(HookPoint::AfterModel, |p| {
                p.decision = Some(decision.clone());
            });
            self.observe_hooks(payload).await;
        }
        let step = self.rec.steps();
        // A note that arrived while the planner decided to end the run is recorded (the
        // run may not take another step to see it), and, when the run hands refusals
        // back, handed over before the run may end.
        if ends_run(&decision)
            && let Some(note) = self.unread_steering().await?
            && self.gate().hands_back_unread_steering()
        {
            // The planner decided without the note: it is handed the note and asked again.
            self.rec
                .record(EntryKind::Decision { step, decision })
                .await?;
            self.reject(Rejection::SteeringUnread { note }).await?;
            return Ok(Flow::Continue);
        }
        if self.interrupting
            && let Decision::CallTool { tool, .. } = &decision
        {
            // No tool calls after an interrupt. The decision is not recorded, so the step is
            // not used up: resume asks the planner for this step again.
            let reason = format!(
                "interrupted through the run handle before the proposed call of `{tool}`; \
                 resume asks the planner for step {step} again"
            );
            self.rec
                .record(EntryKind::RunInterrupted { reason })
                .await?;
            return Ok(Flow::Stop);
        }
        // The entry hands the decision back: it is applied without a copy.
        let recorded = self
            .rec
            .record_entry(EntryKind::Decision { step, decision })
            .await?;
        let EntryKind::Decision { decision, .. } = recorded.into_event() else {
            unreachable!("a decision entry is recorded as one")
        };
        let last_chance = self.interrupting;
        self.apply(decision).await?;
        if last_chance && self.rec.status() == RunStatus::Running {
            self.rec
                .record(EntryKind::RunInterrupted {
                    reason: "interrupted through the run handle".into(),
                })
                .await?;
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    }

    /// Narrows the run's policy: records `policy_narrowed`, then holds the run to it. A
    /// narrowing that would widen anything is refused whole, and nothing is recorded.
    pub(crate) async fn narrow(
        &mut self,
        narrowing: &PolicyNarrowing,
    ) -> Result<Result<(), NarrowingError>, EngineError> {
        let specs = self.shared.tools.specs();
        let policy = match narrowing
            .apply(&self.policy, specs)
            .and_then(|snapshot| Ok(RunPolicy::new(snapshot, specs)?))
        {
            Ok(policy) => policy,
            Err(e) => return Ok(Err(e)),
        };
        self.rec
            .record(EntryKind::PolicyNarrowed {
                policy: Arc::clone(&policy.value),
                reason: narrowing.reason().to_owned(),
            })
            .await?;
        self.policy = Arc::new(policy);
        Ok(Ok(()))
    }

    /// Leaves the run interrupted after a stop ([`Driver::stop_requested`]): recorded as an
    /// `interrupt` of kind `stop`, then `run_interrupted`.
    pub(crate) fn halt(&mut self) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            let asked = self.operator_stop(StopKind::Interrupt).await?;
            self.rec
                .record(EntryKind::Interrupt {
                    kind: InterruptKind::Stop,
                })
                .await?;
            let by = asked.map_or_else(|| "through the run handle".to_owned(), |r| r.by);
            self.rec
                .record(EntryKind::RunInterrupted {
                    reason: format!(
                        "stopped {by}: nothing new was started; resume continues the run"
                    ),
                })
                .await
        })
    }

    pub(crate) fn abort(&mut self) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            let asked = self.operator_stop(StopKind::Abort).await?;
            self.rec
                .record(EntryKind::Interrupt {
                    kind: InterruptKind::Abort,
                })
                .await?;
            let message = asked.map_or_else(
                || "aborted through the run handle".to_owned(),
                |r| match r.reason.as_str() {
                    "" => format!("aborted by {}", r.by),
                    reason => format!("aborted by {}: {reason}", r.by),
                },
            );
            self.rec.fail(FailureKind::Aborted, message).await
        })
    }
}

/// The decision of the step `step` left unsettled, as `ledger` records it.
pub(crate) fn unsettled_decision(
    ledger: &Ledger,
    step: &crate::progress::Unsettled,
) -> Option<Decision> {
    match (
        ledger.entries().get(step.decision_at).map(Entry::event),
        step.member,
    ) {
        (Some(EntryKind::Decision { decision, .. }), None) => Some(decision.clone()),
        // A member of a sequence was being applied: the member is what is unsettled.
        (
            Some(EntryKind::Decision {
                decision: Decision::Sequence { decisions, .. },
                ..
            }),
            Some(member),
        ) => decisions.get(member).cloned(),
        _ => None,
    }
}

/// Whether `decision` ends the run: a `finish`, or a sequence that finishes.
fn ends_run(decision: &Decision) -> bool {
    match decision {
        Decision::Finish { .. } => true,
        Decision::Sequence { decisions, .. } => decisions.iter().any(ends_run),
        _ => false,
    }
}

/// The message of a panic payload, when it has one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

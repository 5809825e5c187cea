//! Planners report, the engine charges: each step's [`PlanMeter`] holds what is left of
//! `tokens` and `cost`; a planner declares a call's worst case against it before calling
//! out, and every call it reports is recorded as `planner_call` and charged, so the charges
//! survive pause, resume and restart like every budget.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use futures_util::future::Either;
use rein_run::{BoxFuture, PlanRequest, State};
use tracing::Instrument as _;

use rein_ledger::EntryKind;
use rein_run::{BudgetExhausted, BudgetName, FailureKind, PlanMeter};

use crate::charge::exhausted_entry;
use crate::driver::{Driver, panic_message};
use crate::error::EngineError;

impl Driver {
    /// Asks the planner, recording what it announces meanwhile, unless the run is aborted
    /// or stopped meanwhile.
    pub(crate) async fn plan(
        &mut self,
        meter: &rein_run::PlanMeter,
    ) -> Result<crate::plan_link::Planned, EngineError> {
        let signals = self.signals();
        let remaining = self.remaining();
        let run = &self.rec.proj.run;
        // The states the table allows from here, on the stack: no allocation per step.
        let mut next = [State::Intake; State::ALL.len()];
        let mut count = 0;
        for to in self.policy.snapshot.transitions.targets(run.state()) {
            next[count] = to;
            count += 1;
        }
        let mut request = PlanRequest::new(
            run,
            self.policy.allowed.in_state(run.state()),
            self.rec.proj.budget().snapshot(run.usage()),
        )
        .with_all_tools(self.shared.tools.specs())
        .with_interrupted(self.interrupting)
        .with_next_states(&next[..count])
        .with_meter(meter)
        .with_skills(&self.shared.config.skills)
        .with_dialogue(&self.rec.proj.dialogue)
        .with_conversation(&self.conversation)
        .with_rules(&self.policy.rules);
        if let Some(schema) = &self.policy.snapshot.result_schema {
            request = request.with_result_schema(schema);
        }
        // Delegation is offered while the run is shallower than the limit (the engine's
        // one list of planner names, lent: nothing allocated per step).
        if let Some(delegation) = self.shared.delegation_at(self.rec.proj.tree.depth()) {
            request = request.with_delegation(delegation);
        }
        // A panicking planner is a planner error on this run, never a dead task.
        // The child's planner when this run is a sub-run (field by field: the ledger is
        // borrowed mutably below while the plan future holds the planner).
        let planner = self.sub.planner.as_ref().unwrap_or(&self.shared.planner);
        let panicked = |panic: Box<dyn std::any::Any + Send>| {
            Err(rein_run::PlannerError::failed(format!(
                "the planner panicked: {}",
                panic_message(panic.as_ref())
            )))
        };
        // A planner that decides at once (a script) is asked without a future: nothing is
        // boxed for its step. Its decision goes through the same deadline and drive.
        let now = std::panic::catch_unwind(AssertUnwindSafe(|| planner.try_plan_now_dyn(&request)))
            .unwrap_or_else(|panic| Some(panicked(panic)));
        let plan = match now {
            Some(decided) => Either::Left(std::future::ready(decided)),
            None => Either::Right(
                AssertUnwindSafe(planner.plan_boxed(request))
                    .catch_unwind()
                    .map(move |outcome| outcome.unwrap_or_else(panicked)),
            ),
        }
        .instrument(crate::telemetry::plan_span(run.steps(), run.state()));
        // A run's deadline bounds the planner as it bounds a tool call: it gets the time left.
        let plan = async move {
            match remaining {
                None => plan.await,
                Some(after) => tokio::time::timeout(after, plan).await.unwrap_or_else(|_| {
                    Err(rein_run::PlannerError::failed(format!(
                        "the planner had not answered when the run's deadline passed, {} ms \
                         after it was asked",
                        after.as_millis()
                    )))
                }),
            }
        };
        let planned = crate::plan_link::Live {
            log: &mut self.rec.log,
            appended: &mut self.planned,
            skills_entered: &self.rec.proj.skills_entered,
            rx: &mut self.model_attempts.rx,
            run,
            budget: self.rec.proj.budget(),
            charged: [0; 2],
        }
        .drive(plan, signals)
        .await;
        self.apply_planned()?;
        planned
    }

    /// The meter for the step about to be planned; it publishes a streaming reply to the
    /// run's subscribers, when it has any.
    pub(crate) fn meter(&self) -> PlanMeter {
        let meter = PlanMeter::new(self.rec.proj.budget().snapshot(self.rec.proj.run.usage()))
            .with_sink(Arc::clone(&self.model_attempts.link) as Arc<dyn rein_run::PlanSink>);
        match &self.rec.log.events {
            Some(events) => meter.with_deltas(Arc::clone(events) as Arc<dyn rein_run::DeltaSink>),
            None => meter,
        }
    }

    /// Records every model call the planner reported and charges it to `tokens` and `cost`.
    pub(crate) async fn settle_planner_calls(
        &mut self,
        meter: PlanMeter,
    ) -> Result<(), EngineError> {
        let step = self.rec.steps();
        for call in meter.into_calls() {
            let (tokens, cost) = (call.tokens(), call.cost.charged_micros());
            self.rec
                .record(EntryKind::PlannerCall { step, call })
                .await?;
            self.charge_reported(BudgetName::TOKENS, tokens).await?;
            self.charge_reported(BudgetName::COST, cost).await?;
        }
        Ok(())
    }

    /// Charges what a planner used. A provider may report more than the planner declared
    /// and the budget had left: the true usage is charged all the same, recorded as a
    /// `budget_overrun`, and the step stops the run ([`Driver::stop_on_overrun`]).
    pub(crate) async fn charge_reported(
        &mut self,
        name: BudgetName,
        amount: u64,
    ) -> Result<(), EngineError> {
        let charge = crate::overrun::reported_charge(
            self.rec.proj.budget(),
            self.rec.proj.run.usage(),
            name,
            amount,
            0,
        );
        match charge {
            Some(entry) => self.rec.record(entry).await,
            None => Ok(()),
        }
    }

    /// A budget used past its limit (a provider reported more than it had left): the run
    /// stops, failed as over budget, and whatever the planner proposed with that call is
    /// not applied. `true` when it stopped.
    pub(crate) async fn stop_on_overrun(&mut self) -> Result<bool, EngineError> {
        let Some(failure) = self.gate().overrun() else {
            return Ok(false);
        };
        self.rec.fail(failure.kind, failure.message).await?;
        Ok(true)
    }

    /// The planner did not make a call that could have exceeded a budget, or hand back one
    /// more correction than `violations` allows: recorded, and the run stops.
    pub(crate) fn refuse_planner_call(
        &mut self,
        exhausted: BudgetExhausted,
    ) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            self.rec.record(exhausted_entry(&exhausted)).await?;
            if exhausted.name == BudgetName::VIOLATIONS {
                // The model's replies kept being unusable: the run ends by policy.
                return self
                    .rec
                    .fail(
                        FailureKind::PolicyViolation,
                        format!(
                            "the model's replies were unusable and the violations budget is \
                             exhausted ({exhausted}); raise it or fix the model's configuration"
                        ),
                    )
                    .await;
            }
            self.rec
                .fail(
                    FailureKind::BudgetExhausted,
                    format!("the planner's next model call does not fit: {exhausted}"),
                )
                .await
        })
    }
}

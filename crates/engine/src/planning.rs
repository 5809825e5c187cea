//! Planners report, the engine charges: each step's [`PlanMeter`] holds what is left of
//! `tokens` and `cost`; a planner declares a call's worst case against it before calling
//! out, and every call it reports is recorded as `planner_call` and charged, so the charges
//! survive pause, resume and restart like every budget.

use std::sync::Arc;

use rein_ledger::EntryKind;
use rein_run::{BudgetExhausted, BudgetName, FailureKind, PlanMeter};

use crate::call::exhausted_entry;
use crate::driver::Driver;
use crate::error::EngineError;

impl Driver {
    /// The meter for the step about to be planned.
    pub(crate) fn meter(&self) -> PlanMeter {
        PlanMeter::new(self.rec.proj.budget().snapshot(self.rec.proj.run.usage()))
            .with_sink(Arc::clone(&self.plan_link) as Arc<dyn rein_run::PlanSink>)
    }

    /// Records every model call the planner reported and charges it to `tokens` and `cost`.
    pub(crate) async fn settle_planner_calls(
        &mut self,
        meter: PlanMeter,
    ) -> Result<(), EngineError> {
        let step = self.rec.proj.run.steps();
        for call in meter.into_calls() {
            let (tokens, cost) = (call.tokens(), call.cost);
            self.rec
                .record(EntryKind::PlannerCall { step, call })
                .await?;
            self.charge_reported(BudgetName::TOKENS, tokens).await?;
            self.charge_reported(BudgetName::COST, cost).await?;
        }
        Ok(())
    }

    /// Charges what a planner used. A provider may report more than the planner declared:
    /// the charge then stops at the limit, which is reached, never passed.
    pub(crate) async fn charge_reported(
        &mut self,
        name: BudgetName,
        amount: u64,
    ) -> Result<(), EngineError> {
        let limit = self.rec.proj.budget().limit(&name);
        let usage = self.rec.proj.run.usage();
        let (used, reserved) = (usage.used(&name), usage.reserved(&name));
        let amount = limit.map_or(amount, |limit| {
            amount.min(limit.saturating_sub(used.saturating_add(reserved)))
        });
        if amount == 0 {
            return Ok(());
        }
        self.rec
            .record(EntryKind::BudgetConsumed {
                name,
                amount,
                used: used.saturating_add(amount),
                limit,
            })
            .await
    }

    /// The planner did not make a call that could have exceeded a budget, or hand back one
    /// more correction than `violations` allows: recorded, and the run stops.
    pub(crate) async fn refuse_planner_call(
        &mut self,
        exhausted: BudgetExhausted,
    ) -> Result<(), EngineError> {
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
    }
}

//! Model calls on the record, the driver's side: the entries a planner's announcements
//! added while it planned are applied to the projection, and on resume the model call the
//! ledger shows in progress is charged (an attempt without an outcome at its worst case).

use rein_ledger::EntryKind;
use rein_run::{BudgetName, PlannerCall};

use crate::driver::Driver;
use crate::error::EngineError;
use crate::plan_link::ModelProgress;

impl Driver {
    /// Applies the entries appended while the planner planned to the projection, in ledger
    /// order.
    pub(crate) fn apply_planned(&mut self) -> Result<(), EngineError> {
        for entry in self.planned.drain(..) {
            self.rec
                .proj
                .apply(entry.event(), entry.at())
                .map_err(|e| EngineError::InconsistentLedger {
                    id: self.rec.id().clone(),
                    seq: entry.seq(),
                    source: Box::new(e),
                })?;
        }
        Ok(())
    }

    /// After a restart or a stop: charges the model call the ledger shows in progress. An
    /// attempt without an outcome is charged at its declared worst case (recorded as a
    /// `planner_call` whose finish reason is `reason`); a recorded call whose charges are
    /// missing is charged now.
    pub(crate) async fn settle_model_calls(
        &mut self,
        progress: ModelProgress,
        reason: &str,
    ) -> Result<(), EngineError> {
        let (tokens, cost) = match (progress.open, progress.due) {
            (Some((step, attempt)), _) => {
                let call = PlannerCall {
                    provider: attempt.provider,
                    model: attempt.model,
                    request_hash: attempt.request_hash,
                    input_tokens: attempt.worst_tokens,
                    output_tokens: 0,
                    cost: attempt.worst_cost,
                    latency_ms: 0,
                    finish_reason: Some(reason.to_owned()),
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    reply: None,
                };
                self.rec
                    .record(EntryKind::PlannerCall { step, call })
                    .await?;
                (attempt.worst_tokens, attempt.worst_cost.charged_micros())
            }
            (None, Some(due)) => due,
            (None, None) => return Ok(()),
        };
        self.charge_reported(BudgetName::TOKENS, tokens).await?;
        self.charge_reported(BudgetName::COST, cost).await
    }
}

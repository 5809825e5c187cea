//! Charging a run's budgets for tool calls: one `tool_calls` unit recorded before each
//! attempt starts (`budget_consumed`), and a charge that does not fit recorded as
//! `budget_exhausted` and rejected.

use rein_ledger::EntryKind;
use rein_run::{BoxFuture, BudgetName};

use crate::driver::Driver;
use crate::error::EngineError;
use crate::rejection::Rejection;

impl Driver {
    /// Records that a charge would exceed a budget, then rejects the decision that needed it.
    pub(crate) fn refuse_over_budget(
        &mut self,
        exhausted: rein_policy::BudgetExhausted,
    ) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            self.rec.record(exhausted_entry(&exhausted)).await?;
            self.reject(Rejection::BudgetExhausted(exhausted)).await
        })
    }

    /// Charges one `tool_calls` unit for an attempt; a refusal is rejected (and recorded).
    pub(crate) async fn charge_attempt(&mut self) -> Result<bool, EngineError> {
        if std::mem::take(&mut self.resume.prepaid) {
            return Ok(true);
        }
        match self.charge_one_call().await? {
            Ok(()) => Ok(true),
            Err(exhausted) => {
                self.refuse_over_budget(exhausted).await?;
                Ok(false)
            }
        }
    }

    /// Records the charge of one `tool_calls` unit if it fits; otherwise records nothing
    /// and says what is exhausted.
    pub(crate) async fn charge_one_call(
        &mut self,
    ) -> Result<Result<(), rein_policy::BudgetExhausted>, EngineError> {
        let consumed = match self.gate().charge(&BudgetName::TOOL_CALLS, 1) {
            Ok(consumed) => consumed,
            Err(exhausted) => return Ok(Err(exhausted)),
        };
        self.rec.record(consumed).await?;
        Ok(Ok(()))
    }
}

/// The `budget_exhausted` entry that records `exhausted`.
pub(crate) fn exhausted_entry(exhausted: &rein_policy::BudgetExhausted) -> EntryKind {
    EntryKind::BudgetExhausted {
        name: exhausted.name.clone(),
        limit: exhausted.limit,
        used: exhausted.used,
        requested: exhausted.requested,
    }
}

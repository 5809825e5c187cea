//! Recovery: finishing the step a crash cut short, making a retry the ledger shows due,
//! and settling a call left in doubt — each from where the ledger stops.

use std::sync::Arc;

use rein_ledger::EntryKind;
use rein_run::{Decision, Digest, FailureKind, State};
use rein_tool::ToolError;
use serde_json::Value;

use crate::charge::exhausted_entry;
use crate::driver::Driver;
use crate::error::{EngineError, ProjectionError};
use crate::project::{OpenAttempt, Progress, Unsettled};
use crate::rejection::Rejection;

impl Driver {
    /// Finishes the step a crash cut short, from where its ledger stops: records the end
    /// the step had reached (a completion, a failure, a rejection), or applies the decision
    /// again when nothing it did is on record but markers (with the attempt's `tool_calls`
    /// unit already paid, if it was charged).
    pub(crate) async fn complete_step(&mut self, step: Unsettled) -> Result<(), EngineError> {
        // The decision as the driver read it from the ledger it was opened from.
        let Some(decision) = self.resume.reopened.take() else {
            return Err(EngineError::InconsistentLedger {
                id: self.rec.id().clone(),
                seq: step.decision_at as u64 + 1,
                source: Box::new(ProjectionError::DecisionMissing),
            });
        };
        match step.progress {
            Progress::Started => self.apply(decision).await,
            Progress::Charged => {
                self.resume.prepaid = true;
                let applied = self.apply(decision).await;
                self.resume.prepaid = false;
                applied
            }
            Progress::Retrying { failed, error } => self.retry(failed, error, false).await,
            Progress::RetryCharged { failed, error } => self.retry(failed, error, true).await,
            Progress::Ended(State::Done) => {
                let (summary, result) = match decision {
                    Decision::Finish { summary, result } => (summary, result),
                    Decision::Transition { reason, .. } => (reason.to_string(), Value::Null),
                    other => (format!("{other:?}"), Value::Null),
                };
                self.rec
                    .record(EntryKind::RunCompleted { summary, result })
                    .await
            }
            Progress::Ended(_) => {
                let reason = match decision {
                    Decision::Fail { reason } => reason,
                    Decision::Transition { reason, .. } => reason.to_string(),
                    other => format!("{other:?}"),
                };
                self.rec.fail(FailureKind::PlannerGaveUp, reason).await
            }
            Progress::Rejected { violation, message } => {
                let kind = match violation {
                    rein_ledger::Violation::MaxSteps => FailureKind::MaxSteps,
                    rein_ledger::Violation::BudgetExhausted => FailureKind::BudgetExhausted,
                    _ => FailureKind::PolicyViolation,
                };
                self.rec.fail(kind, message).await
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
            Progress::Batch => self.resume_batch().await,
            Progress::ToolFailed { tool, error } => match self.gate().tool_failure(&tool, &error) {
                Some(failure) => self.rec.fail(failure.kind, failure.message).await,
                None => Ok(()),
            },
        }
    }

    /// Makes the retry a crash cut short after attempt `failed` failed: the next attempt,
    /// charged unless `charged` says its unit is paid already. A retry the budget cannot pay,
    /// of a tool not idempotent or no longer registered, ends the call with the failure on
    /// record — as the stack would have ended it.
    pub(crate) async fn retry(
        &mut self,
        failed: OpenAttempt,
        error: ToolError,
        charged: bool,
    ) -> Result<(), EngineError> {
        let entry = match self.gate().retry(&failed, charged) {
            Ok(entry) => entry,
            Err(exhausted) => {
                self.rec
                    .record(EntryKind::ToolError {
                        tool: failed.tool.clone(),
                        attempt: failed.attempt,
                        duration_ms: 0,
                        error: error.clone(),
                        will_retry: false,
                    })
                    .await?;
                if let Some(exhausted) = exhausted {
                    self.rec.record(exhausted_entry(&exhausted)).await?;
                }
                return match self.gate().tool_failure(&failed.tool, &error) {
                    Some(failure) => self.rec.fail(failure.kind, failure.message).await,
                    None => Ok(()),
                };
            }
        };
        let input = self.recovered_input(failed.input)?;
        let input_hash = Digest::of_json(&input);
        self.resume.prepaid = charged;
        let executed = self
            .execute(&entry, input, input_hash, failed.attempt.saturating_add(1))
            .await;
        self.resume.prepaid = false;
        executed
    }

    /// Resolves a call left in doubt by a crash, as the in-doubt policy says.
    pub(crate) async fn settle_in_doubt(
        &mut self,
        open: OpenAttempt,
        retry_all: bool,
    ) -> Result<(), EngineError> {
        let entry = match self.gate().readmit(&open, retry_all) {
            Ok(entry) => entry,
            Err(failure) => return self.rec.fail(failure.kind, failure.message).await,
        };
        let input = self.recovered_input(open.input)?;
        let input_hash = Digest::of_json(&input);
        self.execute(&entry, input, input_hash, open.attempt.saturating_add(1))
            .await
    }

    /// The input of an attempt to recover, which a projection rebuilt from its ledger keeps.
    fn recovered_input(&self, input: Option<Arc<Value>>) -> Result<Arc<Value>, EngineError> {
        input.ok_or_else(|| EngineError::InconsistentLedger {
            id: self.rec.id().clone(),
            seq: self.rec.log.len(),
            source: Box::new(ProjectionError::CallInputMissing),
        })
    }
}

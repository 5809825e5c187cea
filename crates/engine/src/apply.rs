//! How each kind of decision is applied once the step has recorded it: a call, a move
//! between states, a question, the run's end, a batch, a delegation, a sequence (its members
//! in `sequence`); and how a decision a
//! policy refuses is rejected (handed back to the planner, or ending the run).

use std::sync::Arc;

use rein_ledger::EntryKind;
use rein_run::{BoxFuture, Decision, FailureKind, State};
use serde_json::Value;

use crate::driver::Driver;
use crate::error::EngineError;
use crate::rejection::Rejection;

impl Driver {
    pub(crate) async fn apply(&mut self, decision: Decision) -> Result<(), EngineError> {
        match decision {
            Decision::CallTool { tool, input, .. } => self.call_tool(&tool, input).await,
            Decision::Transition {
                to: State::Done,
                reason,
            } => self.finish(reason.to_string(), Value::Null).await,
            Decision::Transition {
                to: State::Failed,
                reason,
            } => self.give_up(reason.to_string()).await,
            Decision::Transition { to, reason } => self.move_to(to, reason).await.map(drop),
            Decision::AskHuman { question, options } => {
                let kind = EntryKind::HumanInputRequested {
                    question: question.clone(),
                    options: options.clone(),
                };
                if let Err(e) = self.rec.try_record(kind).await? {
                    return self
                        .reject(Rejection::InvalidQuestion {
                            reason: e.to_string(),
                        })
                        .await;
                }
                self.rec.record(EntryKind::RunPaused { question }).await?;
                Ok(())
            }
            Decision::Finish { summary, result } => self.finish(summary, result).await,
            Decision::Fail { reason } => self.give_up(reason).await,
            Decision::CallTools { calls, .. } => self.call_tools(calls).await,
            Decision::Delegate {
                goal,
                budget,
                planner,
                ..
            } => Box::pin(self.delegate(goal, &budget, planner)).await,
            Decision::Sequence { decisions, .. } => match rein_run::check_sequence(&decisions) {
                // The projection follows the sequence from its `decision` entry: the members
                // are applied from there, as after a restart.
                Ok(()) => self.continue_sequence().await,
                Err(e) => self.reject(Rejection::InvalidSequence(e)).await,
            },
            _ => self.reject(Rejection::UnsupportedDecision).await,
        }
    }

    /// Asks the run's lifecycle machine to move to `to` and records the move with `reason`;
    /// a refusal is rejected (and recorded). Whether it moved.
    pub(crate) async fn move_to(
        &mut self,
        to: State,
        reason: Arc<str>,
    ) -> Result<bool, EngineError> {
        match self
            .rec
            .transition(to, reason, &self.policy.act_guard)
            .await?
        {
            Ok(_) => Ok(true),
            Err(refused) => {
                self.reject(Rejection::Transition(refused)).await?;
                Ok(false)
            }
        }
    }

    pub(crate) async fn finish(
        &mut self,
        summary: String,
        result: Value,
    ) -> Result<(), EngineError> {
        // Checked before the move: a result the schema refuses leaves the run where it was,
        // so a planner handed the refusal back can finish again from there.
        let errors = self.gate().result_errors(&result);
        if !errors.is_empty() {
            return self.reject(Rejection::InvalidResult { errors }).await;
        }
        if self.move_to(State::Done, summary.as_str().into()).await? {
            self.rec
                .record(EntryKind::RunCompleted { summary, result })
                .await?;
        }
        Ok(())
    }

    pub(crate) fn give_up(&mut self, reason: String) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            if self.move_to(State::Failed, reason.as_str().into()).await? {
                self.rec.fail(FailureKind::PlannerGaveUp, reason).await?;
            }
            Ok(())
        })
    }

    /// Records a rejected decision; hands it back to the planner or fails the run.
    pub(crate) fn reject(
        &mut self,
        rejection: Rejection,
    ) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            let message = rejection.to_string();
            tracing::info!(%message, "decision rejected");
            let failure = self.gate().rejection_failure(&rejection);
            self.rec
                .record(EntryKind::PolicyViolation {
                    violation: rejection.violation(),
                    message,
                    handed_back: failure.is_none(),
                })
                .await?;
            match failure {
                Some(failure) => self.rec.fail(failure.kind, failure.message).await,
                None => Ok(()),
            }
        })
    }
}

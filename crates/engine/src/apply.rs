//! How each kind of decision is applied once the step has recorded it: a call, a move
//! between states, a question, the run's end, a batch, a delegation, a sequence (its members
//! in `sequence`); and how a decision a
//! policy refuses is rejected (handed back to the planner, or ending the run).

use rein_ledger::EntryKind;
use rein_run::{BoxFuture, BudgetName, Decision, FailureKind, State};
use rein_statemachine::Lifecycle;
use serde_json::Value;

use crate::config::OnViolation;
use crate::driver::Driver;
use crate::error::{EngineError, ProjectionError};
use crate::rejection::Rejection;

impl Driver {
    pub(crate) async fn apply(&mut self, decision: Decision) -> Result<(), EngineError> {
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
                    self.rec
                        .record(EntryKind::Transition { from, to, reason })
                        .await?;
                }
                Ok(())
            }
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

    /// Asks the lifecycle to move to `to`; a refusal is rejected (and recorded).
    pub(crate) async fn move_to(&mut self, to: State) -> Result<Option<State>, EngineError> {
        // The lifecycle machine is built from the run's state for each move: the projection
        // is the one copy of where the run is. It cannot start in a terminal state, and a
        // run that is driven is never in one: that would be a ledger that contradicts itself.
        let from = self.rec.proj.state();
        let mut lifecycle =
            Lifecycle::new(from, self.policy.snapshot.transitions).map_err(|_| {
                EngineError::InconsistentLedger {
                    id: self.rec.proj.run.id().clone(),
                    seq: self.rec.log.len(),
                    source: Box::new(ProjectionError::Terminal { state: from }),
                }
            })?;
        match lifecycle.transition(to, &self.policy.act_guard, self.rec.proj.run.usage()) {
            Ok(transition) => Ok(Some(transition.from)),
            Err(e) => {
                self.reject(Rejection::Transition(e)).await?;
                Ok(None)
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
        let errors = match &self.policy.result_validator {
            None => Vec::new(),
            Some(Ok(validator)) => crate::tools::schema_errors(validator, &result),
            Some(Err(reason)) => vec![format!(
                "the run's recorded result schema is not a valid JSON Schema: {reason}"
            )],
        };
        if !errors.is_empty() {
            return self.reject(Rejection::InvalidResult { errors }).await;
        }
        if let Some(from) = self.move_to(State::Done).await? {
            self.rec
                .record(EntryKind::Transition {
                    from,
                    to: State::Done,
                    reason: summary.clone(),
                })
                .await?;
            self.rec
                .record(EntryKind::RunCompleted { summary, result })
                .await?;
        }
        Ok(())
    }

    pub(crate) fn give_up(&mut self, reason: String) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            if let Some(from) = self.move_to(State::Failed).await? {
                self.rec
                    .record(EntryKind::Transition {
                        from,
                        to: State::Failed,
                        reason: reason.clone(),
                    })
                    .await?;
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
            // Running out of steps cannot be corrected by the planner: those always end the run.
            // Nor can a decision too deep to record: unrecorded, it does not count as a step,
            // so a planner handed it back would propose it again at the same step.
            let fatal = matches!(
                rejection,
                Rejection::MaxSteps { .. }
                    | Rejection::UnsupportedDecision
                    | Rejection::TooDeep { .. }
            ) || matches!(&rejection, Rejection::BudgetExhausted(e) if e.name == BudgetName::STEPS);
            let hands_back = matches!(
                self.policy.snapshot.on_violation,
                OnViolation::HandBack { .. }
            );
            let handed_back = !fatal
                && hands_back
                && !self
                    .rec
                    .proj
                    .budget()
                    .is_exhausted(self.rec.proj.run.usage(), &BudgetName::VIOLATIONS);
            self.rec
                .record(EntryKind::PolicyViolation {
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
            let message = if hands_back && !fatal {
                format!("{message} (and the violations budget is exhausted)")
            } else {
                message
            };
            self.rec.fail(kind, message).await
        })
    }
}

//! Follow-ups on the engine: `Engine::follow_up` starts a run that continues a finished
//! one (its conversation read and verified first), and `Engine::verify_conversation`
//! checks the chain of runs a conversation is.

use std::sync::Arc;

use rein_ledger::EntryKind;
use rein_policy::Budget;
use rein_run::{EarlierRun, LedgerHead, RunId};

use crate::conversation::{self, MAX_CONVERSATION_RUNS};
use crate::engine::Engine;
use crate::error::{ConversationError, EngineError};
use crate::handle::RunHandle;
use crate::open::Continues;
use crate::spec::FollowUp;

impl Engine {
    /// Starts a follow-up of the finished run `previous` on its own task: a new run whose
    /// second ledger entry (`follow_up_of`, after `run_started`) names `previous` and the
    /// head of its ledger, and whose planner sees the whole conversation so far — every
    /// earlier run's goal, evidence (tool results, notes, answers), model replies and
    /// outcome ([`PlanRequest::conversation`](rein_run::PlanRequest::conversation)). Every
    /// ledger of the conversation is verified first.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use rein_engine::Engine;
    /// use rein_planner::{ScriptStep, ScriptedPlanner};
    /// use rein_run::{Decision, RunStatus, State};
    /// use serde_json::json;
    ///
    /// let engine = Engine::builder()
    ///     .planner(ScriptedPlanner::new([
    ///         ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "look")),
    ///         ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "simple")),
    ///         ScriptStep::expect(State::Decide, Decision::finish("answered", json!("hi"))),
    ///     ]))
    ///     .build()?;
    /// let first = engine.run("Say hi").await?;
    /// let second = engine.follow_up(first.id(), "Again, please").await?.await?;
    /// assert_eq!(second.status(), RunStatus::Completed);
    /// assert_eq!(engine.verify_conversation(second.id()).await?, [first.id().clone(), second.id().clone()]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`EngineError::FollowUpRefused`] when `previous` does not exist, has not ended (queue
    /// the message with [`RunHandle::follow_up`] instead), its conversation does not verify,
    /// or is [`MAX_CONVERSATION_RUNS`] long; otherwise as [`Engine::start`].
    pub async fn follow_up(
        &self,
        previous: &RunId,
        follow_up: impl Into<FollowUp>,
    ) -> Result<RunHandle, EngineError> {
        let follow_up = follow_up.into();
        let continues = self
            .continues(previous, follow_up.carry_budgets)
            .await
            .map_err(|source| EngineError::FollowUpRefused {
                previous: previous.clone(),
                source: Box::new(source),
            })?;
        self.start_continuing(follow_up.spec, Some(continues)).await
    }

    /// Verifies the conversation run `id` ends: every run from the first to `id`, each
    /// ledger's hash chain, and each `follow_up_of` link — the earlier run's ledger ends
    /// exactly at the head the later one recorded, and the turns count up by one. Returns
    /// the runs' ids, oldest first (`[id]` for a run that follows up on none). A tampered
    /// earlier run breaks the verification of every run after it.
    ///
    /// # Errors
    /// [`EngineError::ConversationBroken`] naming the run and the broken link or ledger.
    pub async fn verify_conversation(&self, id: &RunId) -> Result<Vec<RunId>, EngineError> {
        let runs = conversation::read(self.shared(), id)
            .await
            .map_err(|source| EngineError::ConversationBroken {
                run: id.clone(),
                source: Box::new(source),
            })?;
        Ok(runs.into_iter().map(|r| r.earlier.id().clone()).collect())
    }

    /// The link and the conversation for a follow-up of `previous`.
    async fn continues(
        &self,
        previous: &RunId,
        carry_budgets: bool,
    ) -> Result<Continues, ConversationError> {
        let runs = conversation::read(self.shared(), previous).await?;
        let Some(last) = runs.last() else {
            return Err(ConversationError::NotFound {
                run: previous.clone(),
            });
        };
        let run = &last.earlier.run;
        if !run.is_finished() {
            return Err(ConversationError::NotFinished {
                run: previous.clone(),
                status: run.status(),
            });
        }
        if runs.len() >= MAX_CONVERSATION_RUNS as usize {
            return Err(ConversationError::TooLong {
                limit: MAX_CONVERSATION_RUNS,
            });
        }
        let head: Option<LedgerHead> = last.ledger.head();
        let Some(previous_head) = head else {
            return Err(ConversationError::NotFound {
                run: previous.clone(),
            });
        };
        let turn = conversation::link_of(last.ledger.entries()).map_or(0, |l| l.turn) + 1;
        let budget = carry_budgets.then(|| self.carried(&last.ledger, run));
        let link = EntryKind::FollowUpOf {
            previous: previous.clone(),
            previous_head,
            turn,
        };
        let earlier: Arc<[EarlierRun]> = runs.into_iter().map(|r| r.earlier).collect();
        Ok(Continues {
            link,
            earlier,
            budget,
        })
    }

    /// What the run `ledger` records left of each budget it had a limit for, over the
    /// engine's budget.
    fn carried(&self, ledger: &rein_ledger::Ledger, run: &rein_run::Run) -> Budget {
        let engine = self.shared().policy.snapshot.budget.clone();
        let Ok((_, policy)) = crate::open::recorded_policy(self.shared(), run.id(), ledger) else {
            return engine;
        };
        policy
            .snapshot
            .budget
            .limits()
            .iter()
            .fold(engine, |budget, (name, limit)| {
                let left = limit.saturating_sub(run.usage().used(name));
                budget.with_limit(name.clone(), left)
            })
    }
}

//! The `Run` aggregate: a run's whole state, changed only through methods that keep its rules.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    BudgetUsage, Evidence, EvidenceKind, LedgerHead, PendingApproval, RunError, RunId, RunStatus,
    State, Timestamp,
};

mod failure;
mod persisted;
#[cfg(test)]
mod tests;

pub use failure::{Failure, FailureKind};

/// A question waiting for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingQuestion {
    /// The question.
    pub question: String,
    /// The answers offered; empty means any non-empty answer.
    pub options: Vec<String>,
}

/// A run: its goal, where it is, what it learnt, what it spent, and how it ended.
///
/// Every change goes through a method that keeps the rules of DESIGN.md §2:
/// - a run in a terminal state never changes again;
/// - terminal states are entered only by [`Run::complete`] and [`Run::fail`], which record
///   the result or the failure;
/// - a run pauses only with a pending question or a pending approval (never both), and
///   goes on only with a valid answer or a verdict;
/// - budget use belongs to the run and is persisted with it.
///
/// Which state may follow which is the transition policy's business, not the aggregate's.
///
/// ```
/// use rein_run::{Run, RunStatus, State, Timestamp};
/// use serde_json::json;
///
/// let now = Timestamp::from_unix_millis(0);
/// let mut run = Run::new("r1".parse()?, "Deploy", Default::default(), json!({}), now);
/// run.pause("Deploy to prod?", vec!["yes".into(), "no".into()], now)?;
/// assert_eq!(run.status(), RunStatus::Paused);
/// assert!(run.answer("maybe", now).is_err()); // not offered
/// run.answer("yes", now)?;
/// assert_eq!(run.status(), RunStatus::Running);
/// assert_eq!(run.evidence().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "persisted::RunRepr")]
pub struct Run {
    /// The run's id. Public so `&run.id` reads naturally; every other field is private
    /// because only the methods below keep the run's rules.
    pub id: RunId,
    goal: String,
    state: State,
    status: RunStatus,
    /// Shared: a snapshot a store keeps (a clone of the run) costs a count, not a copy. The
    /// run copies it on its next addition only while a snapshot still shares it.
    evidence: Arc<Vec<Evidence>>,
    vars: Map<String, Value>,
    usage: BudgetUsage,
    summary: Option<String>,
    result: Option<Value>,
    failure: Option<Failure>,
    pending: Option<PendingQuestion>,
    /// The call a durable approval holds back, while the run is paused for it.
    approval: Option<PendingApproval>,
    steps: u32,
    created_at: Timestamp,
    updated_at: Timestamp,
    /// Shared, not copied: every snapshot of the run, and every run an engine starts under
    /// the same policy, can hold the one value.
    policy: Arc<Value>,
    /// The ledger entry the run was last saved after (see [`Run::anchor`]).
    ledger_head: Option<LedgerHead>,
}

impl Run {
    /// A new run in `intake`, running, with nothing spent.
    ///
    /// `policy` is the snapshot of the policy the run starts under (budget limits,
    /// eligibility, transitions, approvals) as the engine serialized it: resume uses it, so
    /// a restart with another configuration cannot widen what this run may do. Pass an
    /// `Arc<Value>` to share one snapshot between many runs.
    #[must_use]
    pub fn new(
        id: RunId,
        goal: impl Into<String>,
        vars: Map<String, Value>,
        policy: impl Into<Arc<Value>>,
        now: Timestamp,
    ) -> Self {
        Self {
            id,
            goal: goal.into(),
            state: State::Intake,
            status: RunStatus::Running,
            evidence: Arc::new(Vec::new()),
            vars,
            usage: BudgetUsage::default(),
            summary: None,
            result: None,
            failure: None,
            pending: None,
            approval: None,
            steps: 0,
            created_at: now,
            updated_at: now,
            policy: policy.into(),
            ledger_head: None,
        }
    }

    // ---- reading -------------------------------------------------------------------------

    /// The run's id.
    #[must_use]
    pub const fn id(&self) -> &RunId {
        &self.id
    }

    /// What the run is for.
    #[must_use]
    pub fn goal(&self) -> &str {
        &self.goal
    }

    /// The current state.
    #[must_use]
    pub const fn state(&self) -> State {
        self.state
    }

    /// Whether it is running, paused, interrupted or over.
    #[must_use]
    pub const fn status(&self) -> RunStatus {
        self.status
    }

    /// Evidence gathered so far, oldest first.
    #[must_use]
    pub fn evidence(&self) -> &[Evidence] {
        &self.evidence
    }

    /// Variables the run was started with.
    #[must_use]
    pub const fn vars(&self) -> &Map<String, Value> {
        &self.vars
    }

    /// Budget use so far.
    #[must_use]
    pub const fn usage(&self) -> &BudgetUsage {
        &self.usage
    }

    /// The summary given on completion.
    #[must_use]
    pub fn summary(&self) -> Option<&str> {
        self.summary.as_deref()
    }

    /// The result given on completion.
    #[must_use]
    pub const fn result(&self) -> Option<&Value> {
        self.result.as_ref()
    }

    /// Why the run failed, if it did.
    #[must_use]
    pub const fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// The question the run waits on, if paused.
    #[must_use]
    pub const fn pending_question(&self) -> Option<&PendingQuestion> {
        self.pending.as_ref()
    }

    /// The call the run waits to have approved, if paused for a durable approval.
    #[must_use]
    pub const fn pending_approval(&self) -> Option<&PendingApproval> {
        self.approval.as_ref()
    }

    /// What a paused run waits for, in words (`None` unless paused): "waiting for approval
    /// of …" or "waiting for an answer to …".
    #[must_use]
    pub fn waiting_for(&self) -> Option<String> {
        if self.status != RunStatus::Paused {
            return None;
        }
        match (&self.approval, &self.pending) {
            (Some(a), _) => Some(format!(
                "waiting for approval of `{}` (risk {}, step {}): {}",
                a.tool, a.risk, a.step, a.reason
            )),
            (None, Some(q)) => Some(format!("waiting for an answer to {:?}", q.question)),
            (None, None) => None,
        }
    }

    /// How many decisions have been taken: the number of the next step, from 0.
    #[must_use]
    pub const fn steps(&self) -> u32 {
        self.steps
    }

    /// When the run was created.
    #[must_use]
    pub const fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// When the run last changed.
    #[must_use]
    pub const fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    /// The policy snapshot the run started under.
    #[must_use]
    pub fn policy(&self) -> &Value {
        &self.policy
    }

    /// The last ledger entry this run reflects: the one the engine had appended when it
    /// saved this snapshot of the run, or the last one of the ledger it was rebuilt from.
    /// `None` for a new run, and for a snapshot saved before rein recorded heads.
    #[must_use]
    pub const fn ledger_head(&self) -> Option<LedgerHead> {
        self.ledger_head
    }

    /// Whether the run is over.
    #[must_use]
    pub const fn is_finished(&self) -> bool {
        self.status.is_terminal()
    }

    // ---- changing ------------------------------------------------------------------------

    /// Moves to the working state `to`.
    ///
    /// # Errors
    /// [`RunError::Finished`] after completion, [`RunError::NotRunning`] while paused or
    /// interrupted, [`RunError::EnterTerminal`] for `done`/`failed` (use [`Run::complete`] or
    /// [`Run::fail`]).
    pub fn enter(&mut self, to: State, now: Timestamp) -> Result<State, RunError> {
        self.ensure_running()?;
        if to.is_terminal() {
            return Err(RunError::EnterTerminal { to });
        }
        let from = std::mem::replace(&mut self.state, to);
        self.touch(now);
        Ok(from)
    }

    /// Counts one decision taken; returns the number of the next step.
    ///
    /// # Errors
    /// [`RunError::Finished`] or [`RunError::NotRunning`].
    pub fn count_step(&mut self, now: Timestamp) -> Result<u32, RunError> {
        self.ensure_running()?;
        self.steps = self.steps.saturating_add(1);
        self.touch(now);
        Ok(self.steps)
    }

    /// Appends evidence gathered during the current step.
    ///
    /// # Errors
    /// [`RunError::Finished`]: no evidence after completion.
    pub fn add_evidence(&mut self, kind: EvidenceKind, now: Timestamp) -> Result<(), RunError> {
        self.ensure_not_finished()?;
        Arc::make_mut(&mut self.evidence).push(Evidence::new(self.steps, kind));
        self.touch(now);
        Ok(())
    }

    /// Budget use, for spending through reservations.
    ///
    /// # Errors
    /// [`RunError::Finished`]: a finished run spends nothing.
    pub fn usage_mut(&mut self) -> Result<&mut BudgetUsage, RunError> {
        self.ensure_not_finished()?;
        Ok(&mut self.usage)
    }

    /// Pauses the run with a question for a human.
    ///
    /// # Errors
    /// [`RunError::NotRunning`]/[`RunError::Finished`] unless running;
    /// [`RunError::EmptyQuestion`]; [`RunError::InvalidOptions`] for empty or repeated
    /// options.
    pub fn pause(
        &mut self,
        question: impl Into<String>,
        options: Vec<String>,
        now: Timestamp,
    ) -> Result<(), RunError> {
        self.ensure_running()?;
        let question = question.into();
        if question.trim().is_empty() {
            return Err(RunError::EmptyQuestion);
        }
        let distinct = options
            .iter()
            .enumerate()
            .all(|(i, o)| !options[..i].contains(o));
        if options.iter().any(|o| o.trim().is_empty()) || !distinct {
            return Err(RunError::InvalidOptions { options });
        }
        self.pending = Some(PendingQuestion { question, options });
        self.status = RunStatus::Paused;
        self.touch(now);
        Ok(())
    }

    /// Pauses the run until `approval` gets a verdict (a durable approval).
    ///
    /// # Errors
    /// [`RunError::NotRunning`]/[`RunError::Finished`] unless running;
    /// [`RunError::Inconsistent`] when the approval names another run.
    pub fn await_approval(
        &mut self,
        approval: PendingApproval,
        now: Timestamp,
    ) -> Result<(), RunError> {
        self.ensure_running()?;
        if approval.run != self.id {
            return Err(RunError::Inconsistent(format!(
                "run {}: a pending approval for run {} cannot pause it",
                self.id, approval.run
            )));
        }
        self.approval = Some(approval);
        self.status = RunStatus::Paused;
        self.touch(now);
        Ok(())
    }

    /// Ends the wait for a durable approval (its verdict was given, or it expired): the run
    /// runs again, and the caller records what follows from the verdict.
    ///
    /// # Errors
    /// [`RunError::NotPaused`] when no approval is pending.
    pub fn settle_approval(&mut self, now: Timestamp) -> Result<PendingApproval, RunError> {
        self.ensure_not_finished()?;
        let Some(approval) = self.approval.take_if(|_| self.status == RunStatus::Paused) else {
            return Err(RunError::NotPaused {
                id: self.id.clone(),
                status: self.status,
            });
        };
        self.status = RunStatus::Running;
        self.touch(now);
        Ok(approval)
    }

    /// Answers the pending question: records the answer as evidence and runs again.
    ///
    /// # Errors
    /// [`RunError::NotPaused`] without a pending question; [`RunError::AnswerNotOffered`]
    /// when options were offered and `answer` is not one; [`RunError::EmptyAnswer`].
    pub fn answer(&mut self, answer: &str, now: Timestamp) -> Result<(), RunError> {
        self.ensure_not_finished()?;
        let Some(pending) = self
            .pending
            .as_ref()
            .filter(|_| self.status == RunStatus::Paused)
        else {
            return Err(RunError::NotPaused {
                id: self.id.clone(),
                status: self.status,
            });
        };
        if answer.trim().is_empty() {
            return Err(RunError::EmptyAnswer);
        }
        if !pending.options.is_empty() && !pending.options.iter().any(|o| o == answer) {
            return Err(RunError::AnswerNotOffered {
                answer: answer.to_owned(),
                options: pending.options.clone(),
            });
        }
        let Some(PendingQuestion { question, .. }) = self.pending.take() else {
            return Err(RunError::NotPaused {
                id: self.id.clone(),
                status: self.status,
            });
        };
        Arc::make_mut(&mut self.evidence).push(Evidence::new(
            self.steps,
            EvidenceKind::HumanInput {
                question,
                answer: answer.to_owned(),
            },
        ));
        self.status = RunStatus::Running;
        self.touch(now);
        Ok(())
    }

    /// Marks the run interrupted (stopped gracefully; `resume` continues it).
    ///
    /// # Errors
    /// [`RunError::Finished`] or [`RunError::NotRunning`].
    pub fn interrupt(&mut self, now: Timestamp) -> Result<(), RunError> {
        self.ensure_running()?;
        self.status = RunStatus::Interrupted;
        self.touch(now);
        Ok(())
    }

    /// Makes an interrupted run — or one a crashed process left `running` — run again.
    ///
    /// # Errors
    /// [`RunError::Finished`]; [`RunError::AwaitingAnswer`] for a paused run (use
    /// [`Run::answer`]).
    pub fn resume(&mut self, now: Timestamp) -> Result<(), RunError> {
        self.ensure_not_finished()?;
        if let Some(pending) = self
            .pending
            .as_ref()
            .filter(|_| self.status == RunStatus::Paused)
        {
            return Err(RunError::AwaitingAnswer {
                id: self.id.clone(),
                question: pending.question.clone(),
            });
        }
        if let Some(approval) = self
            .approval
            .as_ref()
            .filter(|_| self.status == RunStatus::Paused)
        {
            return Err(RunError::AwaitingApproval {
                id: self.id.clone(),
                tool: approval.tool.clone(),
            });
        }
        self.status = RunStatus::Running;
        self.touch(now);
        Ok(())
    }

    /// Ends the run in `done` with a summary and a result.
    ///
    /// # Errors
    /// [`RunError::Finished`] or [`RunError::NotRunning`].
    pub fn complete(
        &mut self,
        summary: impl Into<String>,
        result: Value,
        now: Timestamp,
    ) -> Result<(), RunError> {
        self.ensure_running()?;
        self.state = State::Done;
        self.status = RunStatus::Completed;
        self.summary = Some(summary.into());
        self.result = Some(result);
        self.touch(now);
        Ok(())
    }

    /// Ends the run in `failed`. Allowed from any non-terminal status: a paused or
    /// interrupted run can be failed (aborted, for instance).
    ///
    /// # Errors
    /// [`RunError::Finished`].
    pub fn fail(&mut self, failure: Failure, now: Timestamp) -> Result<(), RunError> {
        self.ensure_not_finished()?;
        self.state = State::Failed;
        self.status = RunStatus::Failed;
        self.failure = Some(failure);
        self.pending = None;
        self.approval = None;
        self.touch(now);
        Ok(())
    }

    /// Anchors the run to its ledger: records `head`, the ledger's last entry, as the entry
    /// this run reflects. The engine calls it right before it saves a snapshot, so every
    /// snapshot names the entry it was saved after, and whoever loads the snapshot with the
    /// ledger can check that the ledger still reaches it (a hash chain alone cannot see
    /// entries cut from its end).
    ///
    /// Allowed in every status, a finished run included: the anchor says where the run was
    /// saved, not what it did, and changes nothing else (not even
    /// [`updated_at`](Self::updated_at)).
    ///
    /// ```
    /// use rein_run::{Digest, LedgerHead, Run, Timestamp};
    /// use serde_json::json;
    ///
    /// let now = Timestamp::from_unix_millis(0);
    /// let mut run = Run::new("r1".parse()?, "Deploy", Default::default(), json!({}), now);
    /// assert_eq!(run.ledger_head(), None);
    /// let head = LedgerHead::new(3, Digest::of_bytes(b"entry 3"));
    /// run.anchor(head)?;
    /// assert_eq!(run.ledger_head(), Some(head));
    /// // A ledger only grows: the anchor never moves back.
    /// assert!(run.anchor(LedgerHead::new(2, Digest::of_bytes(b"entry 2"))).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RunError::AnchorBackwards`] when `head` is before the head already recorded, or is
    /// the same entry with another hash; nothing changes.
    pub fn anchor(&mut self, head: LedgerHead) -> Result<(), RunError> {
        if let Some(was) = self.ledger_head
            && (head.seq < was.seq || (head.seq == was.seq && head.hash != was.hash))
        {
            return Err(RunError::AnchorBackwards {
                id: self.id.clone(),
                was,
                head,
            });
        }
        self.ledger_head = Some(head);
        Ok(())
    }

    fn ensure_not_finished(&self) -> Result<(), RunError> {
        if self.status.is_terminal() {
            return Err(RunError::Finished {
                id: self.id.clone(),
                status: self.status,
            });
        }
        Ok(())
    }

    fn ensure_running(&self) -> Result<(), RunError> {
        self.ensure_not_finished()?;
        if self.status != RunStatus::Running {
            return Err(RunError::NotRunning {
                id: self.id.clone(),
                status: self.status,
            });
        }
        Ok(())
    }

    fn touch(&mut self, now: Timestamp) {
        self.updated_at = self.updated_at.max(now);
    }
}

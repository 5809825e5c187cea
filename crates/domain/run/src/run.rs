//! The `Run` aggregate: a run's whole state, changed only through methods that keep its rules.

use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{
    BudgetUsage, Evidence, EvidenceKind, LedgerHead, PendingApproval, RunError, RunId, RunStatus,
    State, Timestamp,
};

/// Why a run failed: a kind to branch on and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// What happened and, where it helps, what to do.
    pub message: String,
}

impl Failure {
    /// A failure of `kind`.
    #[must_use]
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// The kinds of failure a run can end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The planner proposed `Fail`.
    PlannerGaveUp,
    /// The planner returned an error.
    PlannerError,
    /// A decision was rejected by a policy (and rejections fail the run).
    PolicyViolation,
    /// A tool failed.
    ToolFailed,
    /// A budget ran out.
    BudgetExhausted,
    /// The run reached the engine's step limit.
    MaxSteps,
    /// The run was aborted through its handle.
    Aborted,
    /// The process died during a non-idempotent tool call; it may or may not have run.
    InDoubtToolCall,
    /// A store failed to record the run or its ledger.
    StoreError,
    /// The run's deadline (its `time` budget) passed.
    DeadlineExceeded,
}

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
#[serde(try_from = "RunRepr")]
pub struct Run {
    /// The run's id. Public so `&run.id` reads naturally; every other field is private
    /// because only the methods below keep the run's rules.
    pub id: RunId,
    goal: String,
    state: State,
    status: RunStatus,
    evidence: Vec<Evidence>,
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
            evidence: Vec::new(),
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
        self.evidence.push(Evidence::new(self.steps, kind));
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
        self.evidence.push(Evidence::new(
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

/// The persisted form, as written: the run's fields, borrowed (saving a run copies nothing).
/// Field for field the same as [`RunRepr`].
#[derive(Serialize)]
struct RunView<'a> {
    id: &'a RunId,
    goal: &'a str,
    state: State,
    status: RunStatus,
    evidence: &'a [Evidence],
    vars: &'a Map<String, Value>,
    usage: &'a BudgetUsage,
    summary: &'a Option<String>,
    result: &'a Option<Value>,
    failure: &'a Option<Failure>,
    pending: &'a Option<PendingQuestion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_approval: &'a Option<PendingApproval>,
    steps: u32,
    created_at: Timestamp,
    updated_at: Timestamp,
    policy: &'a Value,
    ledger_head: Option<LedgerHead>,
}

impl Serialize for Run {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RunView {
            id: &self.id,
            goal: &self.goal,
            state: self.state,
            status: self.status,
            evidence: &self.evidence,
            vars: &self.vars,
            usage: &self.usage,
            summary: &self.summary,
            result: &self.result,
            failure: &self.failure,
            pending: &self.pending,
            pending_approval: &self.approval,
            steps: self.steps,
            created_at: self.created_at,
            updated_at: self.updated_at,
            policy: &self.policy,
            ledger_head: self.ledger_head,
        }
        .serialize(serializer)
    }
}

/// The persisted form, as read; loading checks that its fields agree with each other.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRepr {
    id: RunId,
    goal: String,
    state: State,
    status: RunStatus,
    evidence: Vec<Evidence>,
    vars: Map<String, Value>,
    usage: BudgetUsage,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    failure: Option<Failure>,
    #[serde(default)]
    pending: Option<PendingQuestion>,
    /// Absent unless the run waits for a durable approval.
    #[serde(default)]
    pending_approval: Option<PendingApproval>,
    steps: u32,
    created_at: Timestamp,
    updated_at: Timestamp,
    policy: Value,
    /// Absent from snapshots saved before rein recorded ledger heads.
    #[serde(default)]
    ledger_head: Option<LedgerHead>,
}

impl TryFrom<RunRepr> for Run {
    type Error = RunError;
    fn try_from(r: RunRepr) -> Result<Self, Self::Error> {
        let inconsistent =
            |what: &str| Err(RunError::Inconsistent(format!("run {}: {what}", r.id)));
        match (r.status, r.state) {
            (RunStatus::Completed, State::Done) | (RunStatus::Failed, State::Failed) => {}
            (RunStatus::Completed | RunStatus::Failed, _) => {
                return inconsistent("a finished status needs its terminal state");
            }
            (_, State::Done | State::Failed) => {
                return inconsistent("a terminal state needs a finished status");
            }
            _ => {}
        }
        if (r.status == RunStatus::Paused) != (r.pending.is_some() || r.pending_approval.is_some())
        {
            return inconsistent(
                "a run is paused exactly when it has a pending question or approval",
            );
        }
        if r.pending.is_some() && r.pending_approval.is_some() {
            return inconsistent("a run waits for a question or an approval, never both");
        }
        if (r.status == RunStatus::Failed) != r.failure.is_some() {
            return inconsistent("a run has a failure exactly when it failed");
        }
        if r.updated_at < r.created_at {
            return inconsistent("updated before it was created");
        }
        if r.ledger_head.is_some_and(|head| head.seq == 0) {
            return inconsistent("saved after ledger entry 0, but entries count from 1");
        }
        Ok(Self {
            id: r.id,
            goal: r.goal,
            state: r.state,
            status: r.status,
            evidence: r.evidence,
            vars: r.vars,
            usage: r.usage,
            summary: r.summary,
            result: r.result,
            failure: r.failure,
            pending: r.pending,
            approval: r.pending_approval,
            steps: r.steps,
            created_at: r.created_at,
            updated_at: r.updated_at,
            policy: Arc::new(r.policy),
            ledger_head: r.ledger_head,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BudgetName, NoteSource};
    use proptest::prelude::*;
    use serde_json::json;

    fn t(ms: u64) -> Timestamp {
        Timestamp::from_unix_millis(ms)
    }

    fn pending_for(run: &Run) -> PendingApproval {
        PendingApproval {
            run: run.id.clone(),
            step: 1,
            tool: "deploy".parse().unwrap(),
            input_hash: crate::Digest::of_json(&json!({"env": "prod"})),
            risk: rein_tool::RiskLevel::High,
            reason: "destructive".into(),
            requested_at: t(5),
        }
    }

    #[test]
    fn a_run_paused_for_an_approval_goes_on_only_with_a_verdict_and_round_trips() {
        let mut r = run();
        let pending = pending_for(&r);
        r.await_approval(pending.clone(), t(5)).unwrap();
        assert_eq!(r.status(), RunStatus::Paused);
        assert!(
            r.waiting_for()
                .unwrap()
                .contains("waiting for approval of `deploy`")
        );
        assert!(matches!(
            r.resume(t(6)),
            Err(RunError::AwaitingApproval { .. })
        ));
        assert!(matches!(
            r.answer("yes", t(6)),
            Err(RunError::NotPaused { .. })
        ));
        let back: Run = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(r.settle_approval(t(7)).unwrap(), pending);
        assert_eq!(r.status(), RunStatus::Running);
        assert!(r.settle_approval(t(8)).is_err());
        // A snapshot without one never mentions it, so older snapshots read the same.
        assert!(
            serde_json::to_value(&r)
                .unwrap()
                .get("pending_approval")
                .is_none()
        );
        let other = PendingApproval {
            run: "other".parse().unwrap(),
            ..pending
        };
        assert!(r.await_approval(other, t(9)).is_err());
    }

    fn run() -> Run {
        Run::new(
            RunId::new("r").unwrap(),
            "goal",
            Map::new(),
            json!({"p": 1}),
            t(1),
        )
    }

    #[test]
    fn a_finished_run_never_changes() {
        for finish in [
            |r: &mut Run| r.complete("ok", json!(1), t(2)),
            |r: &mut Run| r.fail(Failure::new(FailureKind::Aborted, "stop"), t(2)),
        ] {
            let mut r = run();
            finish(&mut r).unwrap();
            let before = r.clone();
            assert!(matches!(
                r.enter(State::Explore, t(3)),
                Err(RunError::Finished { .. })
            ));
            assert!(
                r.add_evidence(EvidenceKind::note(NoteSource::Engine, "x"), t(3))
                    .is_err()
            );
            assert!(r.complete("again", json!(2), t(3)).is_err());
            assert!(
                r.fail(Failure::new(FailureKind::Aborted, "x"), t(3))
                    .is_err()
            );
            assert!(r.pause("q", vec![], t(3)).is_err());
            assert!(r.resume(t(3)).is_err());
            assert!(r.usage_mut().is_err());
            assert!(r.count_step(t(3)).is_err());
            assert_eq!(r, before);
        }
    }

    #[test]
    fn terminal_states_only_through_complete_and_fail() {
        let mut r = run();
        assert_eq!(
            r.enter(State::Done, t(2)),
            Err(RunError::EnterTerminal { to: State::Done })
        );
        assert_eq!(r.enter(State::Explore, t(2)), Ok(State::Intake));
        r.complete("s", json!({"k": 1}), t(3)).unwrap();
        assert_eq!((r.state(), r.status()), (State::Done, RunStatus::Completed));
        assert_eq!(r.summary(), Some("s"));
    }

    #[test]
    fn pause_needs_a_question_and_resume_needs_an_answer() {
        let mut r = run();
        assert_eq!(r.pause("  ", vec![], t(2)), Err(RunError::EmptyQuestion));
        assert!(matches!(
            r.pause("q", vec!["a".into(), "a".into()], t(2)),
            Err(RunError::InvalidOptions { .. })
        ));
        assert!(matches!(
            r.pause("q", vec![String::new()], t(2)),
            Err(RunError::InvalidOptions { .. })
        ));
        r.pause("Which?", vec!["a".into(), "b".into()], t(2))
            .unwrap();
        assert!(matches!(
            r.resume(t(3)),
            Err(RunError::AwaitingAnswer { .. })
        ));
        assert!(matches!(
            r.enter(State::Explore, t(3)),
            Err(RunError::NotRunning { .. })
        ));
        let err = r.answer("c", t(3)).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"answer "c" is not among the options offered: ["a", "b"]"#
        );
        r.answer("b", t(4)).unwrap();
        assert_eq!(r.status(), RunStatus::Running);
        assert!(r.pending_question().is_none());
        assert!(matches!(
            r.answer("b", t(5)),
            Err(RunError::NotPaused { .. })
        ));
        assert!(matches!(
            &r.evidence()[0].kind,
            EvidenceKind::HumanInput { question, answer } if question == "Which?" && answer == "b"
        ));
    }

    #[test]
    fn open_questions_take_any_non_empty_answer() {
        let mut r = run();
        r.pause("Name?", vec![], t(2)).unwrap();
        assert_eq!(r.answer(" ", t(3)), Err(RunError::EmptyAnswer));
        r.answer("Ada", t(3)).unwrap();
    }

    #[test]
    fn interrupt_then_resume() {
        let mut r = run();
        r.interrupt(t(2)).unwrap();
        assert_eq!(r.status(), RunStatus::Interrupted);
        assert!(r.enter(State::Explore, t(2)).is_err());
        r.resume(t(3)).unwrap();
        assert_eq!(r.status(), RunStatus::Running);
    }

    #[test]
    fn inconsistent_snapshots_are_refused_on_load() {
        let mut v = serde_json::to_value(run()).unwrap();
        v["status"] = json!("completed");
        let err = serde_json::from_value::<Run>(v).unwrap_err();
        assert!(
            err.to_string()
                .contains("finished status needs its terminal state"),
            "{err}"
        );
        let mut v = serde_json::to_value(run()).unwrap();
        v["status"] = json!("paused");
        assert!(serde_json::from_value::<Run>(v).is_err());
        let mut v = serde_json::to_value(run()).unwrap();
        v["surprise"] = json!(1);
        assert!(serde_json::from_value::<Run>(v).is_err());
    }

    fn head(seq: u64) -> LedgerHead {
        LedgerHead::new(seq, crate::Digest::of_bytes(&seq.to_be_bytes()))
    }

    #[test]
    fn the_anchor_only_moves_forward_and_changes_nothing_else() {
        let mut r = run();
        r.complete("ok", json!(1), t(2)).unwrap();
        let before = r.clone();
        r.anchor(head(3)).unwrap();
        r.anchor(head(3)).unwrap(); // the same head again: saved twice after one entry
        assert_eq!(r.ledger_head(), Some(head(3)));
        assert_eq!(r.updated_at(), before.updated_at());
        let err = r.anchor(head(2)).unwrap_err();
        assert!(matches!(err, RunError::AnchorBackwards { .. }), "{err}");
        let forked = LedgerHead::new(3, crate::Digest::ZERO);
        assert!(r.anchor(forked).is_err());
        assert_eq!(r.ledger_head(), Some(head(3)));
        r.anchor(head(9)).unwrap();
        assert_eq!(r.ledger_head(), Some(head(9)));
    }

    #[test]
    fn snapshots_from_before_ledger_heads_still_load() {
        let mut v = serde_json::to_value(run()).unwrap();
        assert_eq!(v["ledger_head"], Value::Null);
        v.as_object_mut().unwrap().remove("ledger_head");
        let old = serde_json::from_value::<Run>(v).unwrap();
        assert_eq!(old, run());
        assert_eq!(old.ledger_head(), None);
    }

    #[test]
    fn a_saved_head_round_trips_and_entry_zero_is_refused() {
        let mut r = run();
        r.anchor(head(4)).unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["ledger_head"]["seq"], 4);
        assert_eq!(serde_json::from_value::<Run>(v.clone()).unwrap(), r);
        let mut zero = v;
        zero["ledger_head"]["seq"] = json!(0);
        let err = serde_json::from_value::<Run>(zero).unwrap_err();
        assert!(err.to_string().contains("entries count from 1"), "{err}");
    }

    #[test]
    fn time_never_goes_backwards() {
        let mut r = run();
        r.enter(State::Explore, t(10)).unwrap();
        r.enter(State::Decide, t(5)).unwrap();
        assert_eq!(r.updated_at(), t(10));
    }

    fn arb_run() -> impl Strategy<Value = Run> {
        (
            "[a-z]{1,8}",
            proptest::collection::vec(0u8..6, 0..12),
            any::<u64>(),
            proptest::option::of("[a-z ]{1,10}"),
            proptest::option::of(1u64..1000),
        )
            .prop_map(|(goal, ops, base, note, seq)| {
                let mut r = Run::new(
                    RunId::new("id").unwrap(),
                    goal,
                    Map::new(),
                    json!({"limits": {}}),
                    t(0),
                );
                for (i, op) in ops.into_iter().enumerate() {
                    let now = t(base % 1000 + i as u64);
                    let _ = match op {
                        0 => r.enter(State::ALL[i % 5], now).map(|_| ()),
                        1 => r.add_evidence(
                            EvidenceKind::note(
                                NoteSource::Steering,
                                note.clone().unwrap_or_default(),
                            ),
                            now,
                        ),
                        2 => r.pause("q?", vec!["y".into()], now),
                        3 => r.answer("y", now),
                        4 => r.usage_mut().map(|u| {
                            let res = u.reserve(&BudgetName::STEPS, 1, Some(5));
                            if let Ok(res) = res {
                                u.commit(res)
                            }
                        }),
                        _ => r.count_step(now).map(|_| ()),
                    };
                }
                if let Some(seq) = seq {
                    r.anchor(head(seq)).unwrap();
                }
                r
            })
    }

    proptest! {
        #[test]
        fn runs_round_trip_through_serde(r in arb_run()) {
            let json = serde_json::to_string(&r).unwrap();
            prop_assert_eq!(serde_json::from_str::<Run>(&json).unwrap(), r);
        }
    }
}

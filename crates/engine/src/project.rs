//! The projection: how each ledger entry changes a run.
//!
//! The ledger is the run's source of truth. The engine changes a run only by recording an
//! entry, and this module is the one place that says what each entry does to the [`Run`].
//! Resume after a crash and replay use the same function over a stored ledger, so a live
//! run and a rebuilt one cannot disagree.

use std::sync::Arc;

use rein_ledger::{Entry, EntryKind, InterruptKind};
use rein_policy::Budget;
use rein_run::{
    BudgetName, Digest, EvidenceKind, Failure, LedgerHead, NoteSource, Run, RunId, State,
    Timestamp, ToolName,
};

pub(crate) use crate::error::ProjectionError;
pub(crate) use crate::progress::{BatchTrack, OpenAttempt, Progress, SequenceTrack, Unsettled};
use serde_json::Value;

/// The note a graceful interrupt hands the planner, for its one last step.
pub(crate) const INTERRUPTED_NOTE: &str = "the run was interrupted through its handle: no tool \
     will be called any more; this is the last step, so finish or fail now";

/// A run as its ledger describes it so far.
#[derive(Debug)]
pub(crate) struct Projection {
    pub(crate) run: Run,
    budget: Budget,
    /// The input of the current `CallTool` decision (for the evidence its result makes).
    call_input: Option<Arc<Value>>,
    /// An attempt started and not finished: the in-doubt call if the ledger ends here.
    pub(crate) open: Option<OpenAttempt>,
    /// The attempt a `tool_error` with `will_retry` just ended, for [`Progress::Retrying`].
    failed: Option<OpenAttempt>,
    /// The last decision, while its application is not finished: the interrupted step if
    /// the ledger ends here.
    pub(crate) unsettled: Option<Unsettled>,
    /// How many entries were applied (`run_started` included): the index the next one has.
    applied: usize,
    /// The current step's model calls: what a resume still has to charge.
    pub(crate) model: crate::plan_link::ModelProgress,
    /// The current `call_tools` batch, while not every call of it is settled.
    pub(crate) batch: Option<BatchTrack>,
    /// The current step's `sequence` decision, until its step's next decision (or its
    /// `sequence_stopped`, or the run's end).
    pub(crate) sequence: Option<SequenceTrack>,
    /// The run's place in a tree of runs: its open child, its parent.
    pub(crate) tree: crate::children::Tree,
    /// The skills whose bodies entered the planner's context (name, checksum): each is
    /// recorded once per run and version.
    pub(crate) skills_entered: Vec<(String, Digest)>,
    /// The model replies the ledger records, in order, and where each falls among the
    /// evidence: the planner's dialogue.
    pub(crate) dialogue: Vec<rein_run::Turn>,
    /// The approvals (tool, input hash) granted since the last decision: verdicts on this
    /// step's calls, given while the run was paused.
    pub(crate) granted: Vec<(ToolName, Digest)>,
    /// The run this one follows up on, when its ledger says so (`follow_up_of`).
    pub(crate) follows: Option<RunId>,
    /// The hooks' verdicts recorded since the last decision, refusal or sequence member:
    /// what a resume rules on instead of asking the hooks again.
    pub(crate) hooks_recorded: Vec<crate::progress::RecordedHooks>,
    /// Whether entries are being replayed from a stored ledger (`rebuild`), rather than
    /// recorded live: only then does an open attempt keep its input, for recovery.
    rebuilding: bool,
}

impl Projection {
    /// The run a `RunStarted` entry creates.
    /// `shared_policy`, when given, is the entry's policy value already shared by the
    /// caller: the run holds it rather than a copy.
    pub(crate) fn start(
        id: RunId,
        kind: &EntryKind,
        at: Timestamp,
        budget: Budget,
    ) -> Result<Self, ProjectionError> {
        let EntryKind::RunStarted { goal, vars, policy } = kind else {
            return Err(ProjectionError::NotStarted { kind: kind.name() });
        };
        // The run and the entry share the engine's policy value.
        let run = Run::new(id, goal.clone(), vars.clone(), Arc::clone(policy), at);
        Ok(Self {
            run,
            budget,
            call_input: None,
            open: None,
            failed: None,
            unsettled: None,
            applied: 1,
            model: crate::plan_link::ModelProgress::default(),
            batch: None,
            sequence: None,
            tree: crate::children::Tree::default(),
            skills_entered: Vec::new(),
            dialogue: Vec::new(),
            granted: Vec::new(),
            follows: None,
            hooks_recorded: Vec::new(),
            rebuilding: false,
        })
    }

    /// Rebuilds a run from stored entries. `budget_of` reads the budget limits out of the
    /// recorded policy of the first entry.
    pub(crate) fn rebuild(
        entries: &[Entry],
        budget_of: impl FnOnce(&EntryKind) -> Result<Budget, ProjectionError>,
    ) -> Result<Self, (u64, ProjectionError)> {
        let Some(first) = entries.first() else {
            return Err((0, ProjectionError::Empty));
        };
        let budget = budget_of(first.event()).map_err(|e| (first.seq(), e))?;
        let mut projection = Self::start(first.run_id().clone(), first.event(), first.at(), budget)
            .map_err(|e| (first.seq(), e))?;
        projection.rebuilding = true;
        for entry in &entries[1..] {
            if entry.state() != projection.run.state() {
                return Err((
                    entry.seq(),
                    ProjectionError::StateMismatch {
                        recorded: entry.state(),
                        replayed: projection.run.state(),
                    },
                ));
            }
            projection
                .apply(entry.event(), entry.at())
                .map_err(|e| (entry.seq(), e))?;
            projection.sealed(entry.event(), entry.head());
        }
        // From here on the run is recorded live by a driver, which has its calls in hand.
        projection.rebuilding = false;
        Ok(projection)
    }

    /// What `kind`, recorded at `at`, does to the run.
    pub(crate) fn apply(&mut self, kind: &EntryKind, at: Timestamp) -> Result<(), ProjectionError> {
        if !(self.batch.is_some() && self.apply_in_batch(kind, at)?) {
            self.apply_to_run(kind, at)?;
            self.track_step(kind);
            self.model.track(kind);
        }
        SequenceTrack::follow(&mut self.sequence, kind, self.applied);
        self.track_records(kind);
        self.applied += 1;
        Ok(())
    }

    /// What of `kind`'s place in the chain the projection keeps, once it is sealed there
    /// as `head`: where the open child's `child_started` is, for the child's `child_of`.
    pub(crate) fn sealed(&mut self, kind: &EntryKind, head: LedgerHead) {
        if let (EntryKind::ChildStarted { child, .. }, Some(open)) = (kind, &mut self.tree.open)
            && open.child == *child
        {
            open.started = Some(head);
        }
    }

    /// Keeps what the driver looks up later, so it never reads its ledger back: the skills
    /// that entered the context, the approvals granted since the last decision.
    fn track_records(&mut self, kind: &EntryKind) {
        match kind {
            EntryKind::SkillEntered { name, checksum, .. } => {
                self.skills_entered.push((name.clone(), *checksum));
            }
            EntryKind::ApprovalGranted {
                tool, input_hash, ..
            } => self.granted.push((tool.clone(), *input_hash)),
            EntryKind::Decision { .. } => {
                self.granted.clear();
                self.hooks_recorded.clear();
            }
            EntryKind::SequenceMember { .. } | EntryKind::PolicyViolation { .. } => {
                self.hooks_recorded.clear();
            }
            EntryKind::HookVerdicts {
                step,
                point,
                tool,
                input_hash,
                rulings,
            } => self.hooks_recorded.push(crate::progress::RecordedHooks {
                step: *step,
                point: *point,
                tool: tool.clone(),
                input_hash: *input_hash,
                rulings: rulings.clone(),
            }),
            EntryKind::PlannerCall { step, call } => {
                if let Some(reply) = &call.reply {
                    self.dialogue.push(rein_run::Turn {
                        step: *step,
                        state: self.run.state(),
                        after: self.run.evidence().len(),
                        reply: Arc::new(reply.clone()),
                    });
                }
            }
            _ => {}
        }
    }

    /// Follows how far the current decision's application got (see [`Unsettled`]).
    fn track_step(&mut self, kind: &EntryKind) {
        let progress = match kind {
            EntryKind::Decision { .. } => {
                self.unsettled = Some(Unsettled {
                    decision_at: self.applied,
                    member: None,
                    progress: Progress::Started,
                });
                return;
            }
            EntryKind::SequenceMember { index, .. } => {
                self.unsettled = self.sequence.as_ref().map(|track| Unsettled {
                    decision_at: track.decision_at,
                    member: usize::try_from(*index).ok(),
                    progress: Progress::Started,
                });
                return;
            }
            EntryKind::Transition { to, .. } if to.is_terminal() => Progress::Ended(*to),
            EntryKind::BudgetConsumed { name, .. } if *name == BudgetName::TOOL_CALLS => {
                if let Some(unsettled) = &mut self.unsettled {
                    let before = std::mem::replace(&mut unsettled.progress, Progress::Charged);
                    if let Progress::Retrying { failed, error } = before {
                        unsettled.progress = Progress::RetryCharged { failed, error };
                    }
                }
                return;
            }
            EntryKind::ToolError {
                error,
                will_retry: true,
                ..
            } => match self.failed.take() {
                Some(failed) => Progress::Retrying {
                    failed,
                    error: error.clone(),
                },
                None => Progress::Started,
            },
            EntryKind::ToolCall { .. } => Progress::Started,
            EntryKind::ToolError {
                tool,
                error,
                will_retry: false,
                ..
            } => Progress::ToolFailed {
                tool: tool.clone(),
                error: error.clone(),
            },
            EntryKind::PolicyViolation {
                violation,
                message,
                handed_back: false,
            } => Progress::Rejected {
                violation: *violation,
                message: message.clone(),
            },
            EntryKind::ApprovalDenied {
                tool,
                approver,
                reason,
                ..
            } => Progress::Denied {
                tool: tool.clone(),
                approver: approver.clone(),
                reason: reason.clone(),
            },
            // The step is over: the decision took effect, or the run stopped.
            EntryKind::Transition { .. }
            | EntryKind::ToolResult { .. }
            | EntryKind::PolicyViolation { .. }
            | EntryKind::HumanInputRequested { .. }
            | EntryKind::RunPaused { .. }
            | EntryKind::RunInterrupted { .. }
            | EntryKind::RunCompleted { .. }
            | EntryKind::ChildEnded { .. }
            | EntryKind::SequenceStopped { .. }
            | EntryKind::RunFailed { .. } => {
                self.unsettled = None;
                self.batch = None;
                return;
            }
            // Markers a second application repeats harmlessly, and entries between steps.
            _ => return,
        };
        if let Some(unsettled) = &mut self.unsettled {
            unsettled.progress = progress;
        }
    }

    fn apply_to_run(&mut self, kind: &EntryKind, at: Timestamp) -> Result<(), ProjectionError> {
        let run = &mut self.run;
        match kind {
            EntryKind::RunStarted { .. } => return Err(ProjectionError::StartedTwice),
            EntryKind::Decision { step, decision } => {
                if *step != run.steps() {
                    return Err(ProjectionError::StepMismatch {
                        step: *step,
                        at: run.steps(),
                    });
                }
                self.call_input = match decision {
                    rein_run::Decision::CallTool { input, .. } => Some(input.clone()),
                    _ => None,
                };
                self.batch = match decision {
                    rein_run::Decision::CallTools { calls, .. } => Some(BatchTrack::new(calls)),
                    _ => None,
                };
                run.count_step(at)?;
                let usage = run.usage_mut()?;
                self.budget.charge(usage, &BudgetName::STEPS, 1)?;
            }
            EntryKind::SequenceMember { index, .. } => {
                // The member's call, for the evidence its result makes, as for a decision.
                let member = self
                    .sequence
                    .as_ref()
                    .and_then(|track| track.members.get(usize::try_from(*index).ok()?))
                    .ok_or(ProjectionError::DecisionMissing)?;
                self.call_input = match member {
                    rein_run::Decision::CallTool { input, .. } => Some(input.clone()),
                    _ => None,
                };
                self.batch = match member {
                    rein_run::Decision::CallTools { calls, .. } => Some(BatchTrack::new(calls)),
                    _ => None,
                };
            }
            EntryKind::SequenceStopped {
                not_run, reason, ..
            } => {
                // The planner learns which of its decisions never ran, and why.
                let members: Vec<String> = not_run.iter().map(u32::to_string).collect();
                run.add_evidence(
                    EvidenceKind::note(
                        NoteSource::Engine,
                        format!(
                            "the rest of the sequence was not run (members {} of the last \
                             decision, counted from 0): {reason}",
                            members.join(", ")
                        ),
                    ),
                    at,
                )?;
            }
            EntryKind::Transition { from, to, .. } => {
                if *from != run.state() {
                    return Err(ProjectionError::TransitionFrom {
                        from: *from,
                        state: run.state(),
                    });
                }
                // Terminal states are entered by run_completed / run_failed, which follow.
                if !to.is_terminal() {
                    run.enter(*to, at)?;
                }
            }
            EntryKind::BudgetConsumed { name, amount, .. } => {
                let usage = run.usage_mut()?;
                self.budget.charge(usage, name, *amount)?;
            }
            EntryKind::BudgetOverrun { name, amount, .. } => {
                // Past the limit: what a provider reported is charged whole.
                let usage = run.usage_mut()?;
                let spent = usage.reserve(name, *amount, None)?;
                usage.commit(spent);
            }
            EntryKind::ToolCall {
                tool,
                input,
                attempt,
                idempotent,
                ..
            } => {
                self.open = Some(OpenAttempt {
                    tool: tool.clone(),
                    input: self.rebuilding.then(|| input.clone()),
                    attempt: *attempt,
                    idempotent: *idempotent,
                });
            }
            EntryKind::ToolResult {
                tool,
                cached,
                output,
                ..
            } => {
                self.open = None;
                // A call's result ends its step: the input moves into the evidence.
                let input = self
                    .call_input
                    .take()
                    .unwrap_or_else(|| Arc::new(Value::Null));
                run.add_evidence(
                    EvidenceKind::ToolResult {
                        tool: tool.clone(),
                        input,
                        output: output.clone(),
                        cached: *cached,
                    },
                    at,
                )?;
            }
            EntryKind::ToolError {
                tool,
                error,
                will_retry,
                ..
            } => {
                let ended = self.open.take();
                if *will_retry {
                    // Kept for the step's progress: a retry of it is due.
                    self.failed = ended.filter(|open| open.tool == *tool);
                } else {
                    // The last attempt's error ends the call's step, like a result.
                    let input = self
                        .call_input
                        .take()
                        .unwrap_or_else(|| Arc::new(Value::Null));
                    run.add_evidence(
                        EvidenceKind::ToolFailure {
                            tool: tool.clone(),
                            input,
                            error: error.clone(),
                        },
                        at,
                    )?;
                }
            }
            EntryKind::HumanInputRequested { question, options } => {
                run.pause(question.clone(), options.clone(), at)?;
            }
            EntryKind::HumanInputReceived { answer, .. } => run.answer(answer, at)?,
            EntryKind::PolicyViolation {
                message,
                handed_back,
                ..
            } => {
                if *handed_back {
                    let usage = run.usage_mut()?;
                    self.budget.charge(usage, &BudgetName::VIOLATIONS, 1)?;
                    run.add_evidence(
                        EvidenceKind::note(NoteSource::Violation, message.clone()),
                        at,
                    )?;
                }
            }
            EntryKind::PolicyNarrowed { policy, .. } => {
                // From here on the run is charged against the narrowed limits.
                self.budget = rein_policy::PolicySnapshot::from_value(policy)
                    .map_err(|e| ProjectionError::NarrowedPolicy(Arc::new(e)))?
                    .budget;
            }
            EntryKind::Steering { note } => {
                run.add_evidence(EvidenceKind::note(NoteSource::Steering, note.clone()), at)?;
            }
            EntryKind::RunInterrupted { .. } => run.interrupt(at)?,
            EntryKind::RunResumed { note } => {
                if run.status() != rein_run::RunStatus::Paused {
                    run.resume(at)?;
                }
                run.add_evidence(EvidenceKind::note(NoteSource::Engine, note.clone()), at)?;
            }
            EntryKind::Interrupt {
                kind: InterruptKind::Graceful,
            } => {
                run.add_evidence(EvidenceKind::note(NoteSource::Engine, INTERRUPTED_NOTE), at)?;
            }
            EntryKind::RunCompleted { summary, result } => {
                run.complete(summary.clone(), result.clone(), at)?;
            }
            EntryKind::RunFailed { failure } => {
                self.open = None;
                run.fail(failure.clone(), at)?;
            }
            EntryKind::ApprovalPending { pending } => run.await_approval(pending.clone(), at)?,
            // A verdict on a durable approval ends the pause; otherwise a marker.
            EntryKind::ApprovalGranted { .. } | EntryKind::ApprovalDenied { .. }
                if run.pending_approval().is_some() =>
            {
                run.settle_approval(at)?;
            }
            // Markers: recorded for the audit trail, they change nothing in the run.
            EntryKind::RunPaused { .. }
            | EntryKind::ApprovalRequested { .. }
            | EntryKind::ApprovalGranted { .. }
            | EntryKind::ApprovalDenied { .. }
            | EntryKind::BudgetExhausted { .. }
            | EntryKind::PlannerCall { .. }
            | EntryKind::ToolAttachment { .. }
            | EntryKind::PlannerAttempt { .. }
            | EntryKind::PlannerAttemptFailed { .. }
            | EntryKind::SkillEntered { .. }
            | EntryKind::PromptCompacted { .. }
            | EntryKind::StopRequested { .. }
            | EntryKind::HookVerdicts { .. }
            | EntryKind::TraceStarted { .. }
            | EntryKind::Interrupt { .. } => {}
            EntryKind::FollowUpOf { previous, .. } => self.follows = Some(previous.clone()),
            EntryKind::ChildStarted { .. }
            | EntryKind::ChildEnded { .. }
            | EntryKind::ChildOf { .. } => crate::children::apply(&mut self.tree, run, kind, at)?,
            other => {
                return Err(ProjectionError::UnknownKind { kind: other.name() });
            }
        }
        Ok(())
    }

    /// What an entry of a batch's calls does while the batch is not settled (see
    /// [`BatchTrack::apply`]); `false` for any other entry, which applies as usual.
    fn apply_in_batch(&mut self, kind: &EntryKind, at: Timestamp) -> Result<bool, ProjectionError> {
        let Some(track) = self.batch.as_mut() else {
            return Ok(false);
        };
        let Some(settled) = track.apply(kind, at, &mut self.run, &self.budget)? else {
            return Ok(false);
        };
        if !settled {
            if let Some(unsettled) = &mut self.unsettled {
                unsettled.progress = Progress::Batch;
            }
            return Ok(true);
        }
        // Every call is settled: the step is over, unless a call failed.
        match self.batch.take().and_then(|track| track.failed) {
            Some((tool, error)) => {
                if let Some(unsettled) = &mut self.unsettled {
                    unsettled.progress = Progress::ToolFailed { tool, error };
                }
            }
            None => self.unsettled = None,
        }
        Ok(true)
    }

    /// The budget the projection charges against.
    pub(crate) const fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The state the run is in.
    pub(crate) fn state(&self) -> State {
        self.run.state()
    }

    /// A failure for a call the ledger shows in doubt.
    pub(crate) fn in_doubt_failure(open: &OpenAttempt) -> Failure {
        Failure::new(
            rein_run::FailureKind::InDoubtToolCall,
            format!(
                "the process stopped during attempt {} of `{}`, which is not idempotent: it may or may not have run, \
                 so it is not run again; check its effect by hand",
                open.attempt, open.tool
            ),
        )
    }
}

//! The projection: how each ledger entry changes a run.
//!
//! The ledger is the run's source of truth. The engine changes a run only by recording an
//! entry, and this module is the one place that says what each entry does to the [`Run`].
//! Resume after a crash and replay use the same function over a stored ledger, so a live
//! run and a rebuilt one cannot disagree.

use rein_ledger::{Entry, EntryKind};
use rein_policy::Budget;
use rein_run::{
    BudgetName, EvidenceKind, Failure, NoteSource, Run, RunError, RunId, State, Timestamp, ToolName,
};
use serde_json::Value;

/// A tool attempt the ledger shows started and not (yet) finished.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenAttempt {
    pub(crate) tool: ToolName,
    pub(crate) input: Value,
    pub(crate) attempt: u32,
    pub(crate) idempotent: bool,
}

/// A run as its ledger describes it so far.
#[derive(Debug, Clone)]
pub(crate) struct Projection {
    pub(crate) run: Run,
    budget: Budget,
    /// The input of the current `CallTool` decision (for the evidence its result makes).
    call_input: Option<Value>,
    /// An attempt started and not finished: the in-doubt call if the ledger ends here.
    pub(crate) open: Option<OpenAttempt>,
}

/// Why an entry does not fit the run the ledger describes so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProjectionError {
    pub(crate) reason: String,
}

impl From<RunError> for ProjectionError {
    fn from(e: RunError) -> Self {
        Self {
            reason: e.to_string(),
        }
    }
}

fn unfit(reason: impl Into<String>) -> ProjectionError {
    ProjectionError {
        reason: reason.into(),
    }
}

impl Projection {
    /// The run a `RunStarted` entry creates.
    pub(crate) fn start(
        id: RunId,
        kind: &EntryKind,
        at: Timestamp,
        budget: Budget,
    ) -> Result<Self, ProjectionError> {
        let EntryKind::RunStarted { goal, vars, policy } = kind else {
            return Err(unfit(format!(
                "a ledger starts with run_started, not {}",
                kind.name()
            )));
        };
        let run = Run::new(id, goal.clone(), vars.clone(), policy.clone(), at);
        Ok(Self {
            run,
            budget,
            call_input: None,
            open: None,
        })
    }

    /// Rebuilds a run from stored entries. `budget_of` reads the budget limits out of the
    /// recorded policy of the first entry.
    pub(crate) fn rebuild(
        entries: &[Entry],
        budget_of: impl FnOnce(&EntryKind) -> Result<Budget, ProjectionError>,
    ) -> Result<Self, (u64, ProjectionError)> {
        let Some(first) = entries.first() else {
            return Err((0, unfit("the ledger is empty")));
        };
        let budget = budget_of(first.event()).map_err(|e| (first.seq(), e))?;
        let mut projection = Self::start(first.run_id().clone(), first.event(), first.at(), budget)
            .map_err(|e| (first.seq(), e))?;
        for entry in &entries[1..] {
            if entry.state() != projection.run.state() {
                return Err((
                    entry.seq(),
                    unfit(format!(
                        "the entry says the run was in {}, but the entries before put it in {}",
                        entry.state(),
                        projection.run.state()
                    )),
                ));
            }
            projection
                .apply(entry.event(), entry.at())
                .map_err(|e| (entry.seq(), e))?;
        }
        Ok(projection)
    }

    /// What `kind`, recorded at `at`, does to the run.
    pub(crate) fn apply(&mut self, kind: &EntryKind, at: Timestamp) -> Result<(), ProjectionError> {
        let run = &mut self.run;
        match kind {
            EntryKind::RunStarted { .. } => return Err(unfit("run_started appears twice")),
            EntryKind::Decision { step, decision } => {
                if *step != run.steps() {
                    return Err(unfit(format!(
                        "decision for step {step}, but the run is at step {}",
                        run.steps()
                    )));
                }
                self.call_input = match decision {
                    rein_run::Decision::CallTool { input, .. } => Some(input.clone()),
                    _ => None,
                };
                run.count_step(at)?;
                let usage = run.usage_mut()?;
                self.budget
                    .charge(usage, &BudgetName::STEPS, 1)
                    .map_err(|e| unfit(e.to_string()))?;
            }
            EntryKind::Transition { from, to, .. } => {
                if *from != run.state() {
                    return Err(unfit(format!(
                        "transition from {from}, but the run is in {}",
                        run.state()
                    )));
                }
                // Terminal states are entered by run_completed / run_failed, which follow.
                if !to.is_terminal() {
                    run.enter(*to, at)?;
                }
            }
            EntryKind::BudgetConsumed { name, amount, .. } => {
                let usage = run.usage_mut()?;
                self.budget
                    .charge(usage, name, *amount)
                    .map_err(|e| unfit(e.to_string()))?;
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
                    input: input.clone(),
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
                let input = self.call_input.clone().unwrap_or(Value::Null);
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
                self.open = None;
                if !will_retry {
                    let input = self.call_input.clone().unwrap_or(Value::Null);
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
            EntryKind::HumanInputReceived { answer } => run.answer(answer, at)?,
            EntryKind::PolicyViolation {
                message,
                handed_back,
                ..
            } => {
                if *handed_back {
                    let usage = run.usage_mut()?;
                    self.budget
                        .charge(usage, &BudgetName::VIOLATIONS, 1)
                        .map_err(|e| unfit(e.to_string()))?;
                    run.add_evidence(
                        EvidenceKind::note(NoteSource::Violation, message.clone()),
                        at,
                    )?;
                }
            }
            EntryKind::Steering { note } => {
                run.add_evidence(EvidenceKind::note(NoteSource::Steering, note.clone()), at)?;
            }
            EntryKind::RunInterrupted { .. } => run.interrupt(at)?,
            EntryKind::RunResumed { .. } => {
                if run.status() != rein_run::RunStatus::Paused {
                    run.resume(at)?;
                }
            }
            EntryKind::RunCompleted { summary, result } => {
                run.complete(summary.clone(), result.clone(), at)?
            }
            EntryKind::RunFailed { failure } => {
                self.open = None;
                run.fail(failure.clone(), at)?;
            }
            // Markers: recorded for the audit trail, they change nothing in the run.
            EntryKind::RunPaused { .. }
            | EntryKind::ApprovalRequested { .. }
            | EntryKind::ApprovalGranted { .. }
            | EntryKind::ApprovalDenied { .. }
            | EntryKind::BudgetExhausted { .. }
            | EntryKind::Interrupt { .. } => {}
            other => {
                return Err(unfit(format!(
                    "entry kind {} is not known to this engine",
                    other.name()
                )));
            }
        }
        Ok(())
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

//! What the projection tracks of a step in progress: the attempt the ledger shows open, the
//! decision not yet fully applied and how far it got, and a `call_tools` batch's calls — the
//! facts resume needs to finish a step a crash cut short.

use std::sync::Arc;

use rein_ledger::{EntryKind, Violation};
use rein_policy::Budget;
use rein_run::{BudgetName, EvidenceKind, Run, State, Timestamp, ToolError, ToolName};
use serde_json::Value;

use crate::error::ProjectionError;

/// A tool attempt the ledger shows started and not (yet) finished.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenAttempt {
    pub(crate) tool: ToolName,
    /// The call's input, kept only by a projection rebuilt from a ledger (what recovery
    /// retries with); a live driver has the call in hand, and its projection keeps none.
    pub(crate) input: Option<Arc<Value>>,
    pub(crate) attempt: u32,
    pub(crate) idempotent: bool,
}

/// A decision the ledger shows recorded but not fully applied: the process stopped in the
/// middle of its step. Resume finishes the step from where the ledger shows it stopped.
///
/// It names the decision by its place in the ledger rather than holding a copy: a live run
/// passes through here at every decision and never needs it, and a resume reads it back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unsettled {
    /// The index of the `decision` entry in the run's ledger.
    pub(crate) decision_at: usize,
    /// When that decision is a sequence and a member of it was being applied: the member's
    /// index (its `sequence_member` entry is on record). The member is what is unsettled.
    pub(crate) member: Option<usize>,
    pub(crate) progress: Progress,
}

/// A `sequence` decision the ledger shows recorded and not finished: which member comes
/// next, and whether a member already failed to take effect, so the rest are not run.
///
/// The driver reads it between members, live and after a restart alike: one rule decides
/// whether a sequence goes on, and it is a function of the ledger.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SequenceTrack {
    /// The step whose decision the sequence is.
    pub(crate) step: u32,
    /// The index of the `decision` entry in the run's ledger.
    pub(crate) decision_at: usize,
    /// The members, as recorded.
    pub(crate) members: Vec<rein_run::Decision>,
    /// The index of the member to apply next: one past the last `sequence_member`.
    pub(crate) next: usize,
    /// Why a member did not take effect (a refusal, a failed call), when one did not.
    pub(crate) stopped: Option<String>,
}

impl SequenceTrack {
    /// Follows a `sequence` decision member by member through `kind`, recorded at ledger
    /// index `at`: which member is next, and the first that did not take effect.
    pub(crate) fn follow(sequence: &mut Option<Self>, kind: &EntryKind, at: usize) {
        match kind {
            EntryKind::Decision { step, decision } => {
                *sequence = match decision {
                    rein_run::Decision::Sequence { decisions, .. }
                        if rein_run::check_sequence(decisions).is_ok() =>
                    {
                        Some(Self {
                            step: *step,
                            decision_at: at,
                            members: decisions.clone(),
                            next: 0,
                            stopped: None,
                        })
                    }
                    _ => None,
                };
            }
            EntryKind::SequenceStopped { .. }
            | EntryKind::RunCompleted { .. }
            | EntryKind::RunFailed { .. } => *sequence = None,
            _ => {}
        }
        let Some(track) = sequence.as_mut() else {
            return;
        };
        match kind {
            EntryKind::SequenceMember { index, .. } => {
                track.next = usize::try_from(*index).map_or(usize::MAX, |i| i.saturating_add(1));
            }
            EntryKind::PolicyViolation { message, .. } => {
                track.stopped.get_or_insert_with(|| message.clone());
            }
            EntryKind::ToolError {
                tool,
                error,
                will_retry: false,
                ..
            } => {
                track.stopped.get_or_insert_with(|| error.about(tool));
            }
            _ => {}
        }
    }

    /// The indexes of the members not yet started.
    pub(crate) fn not_run(&self) -> Vec<u32> {
        (self.next..self.members.len())
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect()
    }
}

/// How far the application of an [`Unsettled`] decision got, as the ledger shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Progress {
    /// Nothing that a second application would not repeat harmlessly (approval asked or
    /// granted, a budget found exhausted, an attempt that failed and was to be retried).
    Started,
    /// A `tool_calls` unit was charged for an attempt that never started.
    Charged,
    /// The run moved to `done` or `failed`; its `run_completed` / `run_failed` is missing.
    Ended(State),
    /// A rejection that was not handed back; the `run_failed` it causes is missing.
    Rejected {
        violation: Violation,
        message: String,
    },
    /// The approver denied the call; the rejection is missing.
    Denied {
        tool: ToolName,
        approver: String,
        reason: String,
    },
    /// The call's last attempt failed; the run fails unless tool errors are handed back.
    ToolFailed { tool: ToolName, error: ToolError },
    /// An attempt of an idempotent call failed and a retry was to follow; nothing of the
    /// retry is on record. Resume retries it as the next attempt (charged like any attempt).
    Retrying {
        failed: OpenAttempt,
        error: ToolError,
    },
    /// As [`Progress::Retrying`], and the retry's `tool_calls` unit is charged; its
    /// `tool_call` is missing. Resume makes the retry without charging it again.
    RetryCharged {
        failed: OpenAttempt,
        error: ToolError,
    },
    /// A `call_tools` batch has begun to run (a call charged, started or settled) and not
    /// every call is settled: the projection's [`BatchTrack`] says which calls are done,
    /// which are in doubt and which never started.
    Batch,
}

/// A `call_tools` batch the ledger shows begun and not finished. Calls settle in the
/// batch's order, so the first `settled` calls are done and the rest are in doubt (their
/// attempt is open) or never started.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchTrack {
    /// Each call's tool, as proposed, and its input.
    pub(crate) calls: Vec<(Arc<str>, Arc<Value>)>,
    /// How many calls' outcomes are recorded.
    pub(crate) settled: usize,
    /// Per call, its attempt recorded as started and not finished.
    pub(crate) open: Vec<Option<OpenAttempt>>,
    /// `tool_calls` units charged that no `tool_call` entry has used yet.
    pub(crate) paid: u64,
    /// The first call of the batch that failed.
    pub(crate) failed: Option<(ToolName, ToolError)>,
}

impl BatchTrack {
    pub(crate) fn new(calls: &[rein_run::ProposedCall]) -> Self {
        Self {
            calls: calls
                .iter()
                .map(|c| (c.tool.clone(), c.input.clone()))
                .collect(),
            settled: 0,
            open: vec![None; calls.len()],
            paid: 0,
            failed: None,
        }
    }

    /// Settles the next call; its input, for the evidence.
    fn settle(&mut self) -> Arc<Value> {
        let input = self
            .calls
            .get(self.settled)
            .map_or_else(|| Arc::new(Value::Null), |(_, input)| Arc::clone(input));
        if let Some(open) = self.open.get_mut(self.settled) {
            *open = None;
        }
        self.settled += 1;
        input
    }
}

impl BatchTrack {
    /// What `kind`, recorded at `at`, does while the batch is not settled: charges, starts
    /// and outcomes are matched to the batch's calls (outcomes in the batch's order).
    /// `None` for an entry that is not one of the batch's, which applies as usual; else
    /// whether every call is now settled.
    pub(crate) fn apply(
        &mut self,
        kind: &EntryKind,
        at: Timestamp,
        run: &mut Run,
        budget: &Budget,
    ) -> Result<Option<bool>, ProjectionError> {
        match kind {
            EntryKind::BudgetConsumed { name, amount, .. } if *name == BudgetName::TOOL_CALLS => {
                budget.charge(run.usage_mut()?, name, *amount)?;
                self.paid = self.paid.saturating_add(*amount);
            }
            EntryKind::ToolCall {
                tool,
                input,
                attempt,
                idempotent,
                ..
            } => {
                let at_call = (self.settled..self.calls.len())
                    .find(|&j| *self.calls[j].0 == *tool.as_str() && self.calls[j].1 == *input);
                if let Some(j) = at_call {
                    self.open[j] = Some(OpenAttempt {
                        tool: tool.clone(),
                        input: Some(input.clone()),
                        attempt: *attempt,
                        idempotent: *idempotent,
                    });
                }
                self.paid = self.paid.saturating_sub(1);
            }
            EntryKind::ToolResult {
                tool,
                cached,
                output,
                ..
            } => {
                let input = self.settle();
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
                will_retry: false,
                ..
            } => {
                self.failed
                    .get_or_insert_with(|| (tool.clone(), error.clone()));
                let input = self.settle();
                run.add_evidence(
                    EvidenceKind::ToolFailure {
                        tool: tool.clone(),
                        input,
                        error: error.clone(),
                    },
                    at,
                )?;
            }
            // A batch's calls are attempted once; an error that announces a retry changes
            // nothing here.
            EntryKind::ToolError { .. } => {}
            _ => return Ok(None),
        }
        Ok(Some(self.settled >= self.calls.len()))
    }
}

/// The verdicts other than allow recorded at one point of one step (for one call, at the
/// tool points): what a resume rules on instead of asking the hooks again.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecordedHooks {
    pub(crate) step: u32,
    pub(crate) point: rein_ledger::HookPoint,
    pub(crate) tool: Option<rein_run::ToolName>,
    pub(crate) input_hash: Option<rein_run::Digest>,
    pub(crate) rulings: Vec<rein_ledger::HookRuling>,
}

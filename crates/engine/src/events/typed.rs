//! The typed events a UI wants — a step started, a model call started, streamed and ended,
//! a tool started and finished, an approval asked and decided, a transition, the run's
//! end — and the one place the ledger-backed ones are read off the entries as they are
//! recorded.

use std::sync::Arc;

use rein_ledger::{Entry, EntryKind};
use rein_run::{Cost, ModelDelta, PlannerCall, RunId, RunStatus, State, ToolError, ToolName};

use super::RunEvent;

/// A step is about to be planned: the planner is asked for the run's next decision.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepStarted {
    /// The run (a sub-run's events reach its parent's subscribers too).
    pub run: RunId,
    /// The step, from 0.
    pub step: u32,
    /// The state the run is in.
    pub state: State,
}

/// A model call's attempt is about to be sent (on record as `planner_attempt`). A retry is
/// an attempt of its own: the pieces of the reply that follow are the new attempt's, from
/// the start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelCallStarted {
    /// The run.
    pub run: RunId,
    /// The step being decided.
    pub step: u32,
    /// The attempt's number within the step, from 1.
    pub attempt: u32,
    /// The provider (`openai`, `anthropic`, a team's own).
    pub provider: String,
    /// The model.
    pub model: String,
}

/// A piece of the reply of the model call in flight, as it streams in (never recorded: the
/// ledger keeps the whole reply in the call's `planner_call` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelStreamed {
    /// The run.
    pub run: RunId,
    /// The step being decided.
    pub step: u32,
    /// The piece.
    pub delta: ModelDelta,
}

/// A tool in flight told how far it got, or sent a log line (never recorded).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolNoticed {
    /// The run.
    pub run: RunId,
    /// The tool called.
    pub tool: ToolName,
    /// What it told.
    pub notice: rein_tool::ToolNotice,
}

/// A model call's attempt ended (on record as `planner_call` or `planner_attempt_failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelCallEnded {
    /// The run.
    pub run: RunId,
    /// The step being decided.
    pub step: u32,
    /// What it used, or why it failed.
    pub outcome: ModelCallOutcome,
}

/// How a model call's attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelCallOutcome {
    /// The model answered.
    Answered(ModelUsage),
    /// The attempt failed (a server error, a timeout, a broken stream); it may be retried.
    Failed {
        /// The attempt's number within the step.
        attempt: u32,
        /// What went wrong.
        error: String,
    },
}

/// What an answered model call used, as the provider reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelUsage {
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// What the call cost: money in the prices' currency, or unknown for an unpriced model.
    pub cost: Cost,
    /// Wall time of the call, in milliseconds.
    pub latency_ms: u64,
    /// Why the model stopped, as the provider said.
    pub finish_reason: Option<String>,
}

impl From<&PlannerCall> for ModelUsage {
    fn from(call: &PlannerCall) -> Self {
        Self {
            provider: call.provider.clone(),
            model: call.model.clone(),
            input_tokens: call.input_tokens,
            output_tokens: call.output_tokens,
            cache_read_tokens: call.cache_read_tokens,
            cost: call.cost,
            latency_ms: call.latency_ms,
            finish_reason: call.finish_reason.clone(),
        }
    }
}

/// A tool attempt started (on record as `tool_call`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolStarted {
    /// The run.
    pub run: RunId,
    /// The tool.
    pub tool: ToolName,
    /// The attempt number, from 1 (retries of idempotent tools count up).
    pub attempt: u32,
}

/// A tool attempt finished (on record as `tool_result` or `tool_error`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFinished {
    /// The run.
    pub run: RunId,
    /// The tool.
    pub tool: ToolName,
    /// The attempt number, from 1; 0 when the call was refused before any attempt (an
    /// open circuit, a full bulkhead).
    pub attempt: u32,
    /// How long the attempt took, in milliseconds.
    pub duration_ms: u64,
    /// Whether it returned or failed.
    pub outcome: ToolOutcome,
}

/// How a tool attempt finished.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// It returned (its output is in the entry: [`RunEvent::Recorded`]).
    Returned {
        /// Whether the output came from the cache instead of a call.
        cached: bool,
    },
    /// It failed.
    Failed {
        /// Why.
        error: ToolError,
        /// Whether the stack tries again (a transient failure of an idempotent tool).
        will_retry: bool,
    },
}

/// A call needs approval and the approver was asked (on record as `approval_requested`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalAsked {
    /// The run.
    pub run: RunId,
    /// The tool.
    pub tool: ToolName,
    /// Why approval is needed (the approval policy's rule).
    pub reason: String,
}

/// The approver decided (on record as `approval_granted` or `approval_denied`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalDecided {
    /// The run.
    pub run: RunId,
    /// The tool.
    pub tool: ToolName,
    /// Whether the call may go ahead.
    pub granted: bool,
    /// Who decided (the engine, when no approver answered: approvals fail closed).
    pub approver: String,
    /// Why.
    pub reason: String,
}

/// The run moved from one state to another (on record as `transition`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Moved {
    /// The run.
    pub run: RunId,
    /// The state it left.
    pub from: State,
    /// The state it entered.
    pub to: State,
    /// Why.
    pub reason: String,
}

/// The run stopped being driven: completed, failed, interrupted (resumable), or paused
/// for a human's answer or a durable approval (resumable once it comes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunEnded {
    /// The run.
    pub run: RunId,
    /// How it stands now.
    pub status: RunStatus,
}

impl RunEvent {
    /// The typed event `entry` is, when it is one a UI follows (a decision, a budget
    /// charge, a steering note are only [`RunEvent::Recorded`]). The one place typed
    /// events are read off the ledger.
    pub(crate) fn of_entry(entry: &Entry) -> Option<Self> {
        let run = || entry.run_id().clone();
        Some(match entry.event() {
            EntryKind::PlannerAttempt { step, attempt } => {
                Self::ModelCallStarted(Arc::new(ModelCallStarted {
                    run: run(),
                    step: *step,
                    attempt: attempt.attempt,
                    provider: attempt.provider.clone(),
                    model: attempt.model.clone(),
                }))
            }
            EntryKind::PlannerCall { step, call } => {
                Self::ModelCallEnded(Arc::new(ModelCallEnded {
                    run: run(),
                    step: *step,
                    outcome: ModelCallOutcome::Answered(ModelUsage::from(call)),
                }))
            }
            EntryKind::PlannerAttemptFailed {
                step,
                attempt,
                error,
            } => Self::ModelCallEnded(Arc::new(ModelCallEnded {
                run: run(),
                step: *step,
                outcome: ModelCallOutcome::Failed {
                    attempt: *attempt,
                    error: error.clone(),
                },
            })),
            EntryKind::ToolCall { tool, attempt, .. } => Self::ToolStarted(Arc::new(ToolStarted {
                run: run(),
                tool: tool.clone(),
                attempt: *attempt,
            })),
            EntryKind::ToolResult {
                tool,
                attempt,
                duration_ms,
                cached,
                ..
            } => Self::ToolFinished(Arc::new(ToolFinished {
                run: run(),
                tool: tool.clone(),
                attempt: *attempt,
                duration_ms: *duration_ms,
                outcome: ToolOutcome::Returned { cached: *cached },
            })),
            EntryKind::ToolError {
                tool,
                attempt,
                duration_ms,
                error,
                will_retry,
            } => Self::ToolFinished(Arc::new(ToolFinished {
                run: run(),
                tool: tool.clone(),
                attempt: *attempt,
                duration_ms: *duration_ms,
                outcome: ToolOutcome::Failed {
                    error: error.clone(),
                    will_retry: *will_retry,
                },
            })),
            EntryKind::ApprovalRequested { tool, reason, .. } => {
                Self::ApprovalAsked(Arc::new(ApprovalAsked {
                    run: run(),
                    tool: tool.clone(),
                    reason: reason.clone(),
                }))
            }
            EntryKind::ApprovalGranted {
                tool,
                approver,
                reason,
                ..
            }
            | EntryKind::ApprovalDenied {
                tool,
                approver,
                reason,
                ..
            } => Self::ApprovalDecided(Arc::new(ApprovalDecided {
                run: run(),
                tool: tool.clone(),
                granted: matches!(entry.event(), EntryKind::ApprovalGranted { .. }),
                approver: approver.clone(),
                reason: reason.clone(),
            })),
            EntryKind::Transition { from, to, reason } => Self::Transition(Arc::new(Moved {
                run: run(),
                from: *from,
                to: *to,
                reason: reason.to_string(),
            })),
            EntryKind::RunCompleted { .. } => Self::ended(run(), RunStatus::Completed),
            EntryKind::RunFailed { .. } => Self::ended(run(), RunStatus::Failed),
            EntryKind::RunInterrupted { .. } => Self::ended(run(), RunStatus::Interrupted),
            EntryKind::RunPaused { .. } | EntryKind::ApprovalPending { .. } => {
                Self::ended(run(), RunStatus::Paused)
            }
            _ => return None,
        })
    }

    fn ended(run: RunId, status: RunStatus) -> Self {
        Self::RunEnded(Arc::new(RunEnded { run, status }))
    }
}

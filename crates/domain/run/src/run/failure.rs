//! `Failure`: why a run failed — a kind to branch on and a message for people.

use serde::{Deserialize, Serialize};

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

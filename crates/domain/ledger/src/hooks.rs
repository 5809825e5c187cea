//! What the ledger records of hooks: the point a hook was asked at, and each verdict other
//! than allow (a hook may only narrow what the policy allows, so these are all there is).

use std::fmt;

use rein_run::{BudgetName, Digest};
use serde::{Deserialize, Serialize};

/// Where in a run a hook is asked. The `before_*` points, `run_start` and `child_start` may
/// refuse or narrow what follows; the others only observe.
///
/// ```
/// use rein_ledger::HookPoint;
/// assert_eq!(serde_json::to_string(&HookPoint::BeforeTool)?, r#""before_tool""#);
/// assert!(HookPoint::BeforeTool.may_refuse());
/// assert!(!HookPoint::AfterTool.may_refuse());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HookPoint {
    /// The run was created, before its first step.
    RunStart,
    /// The run ended (done or failed).
    RunEnd,
    /// Before a step's planner is asked (where a model call is made).
    BeforeModel,
    /// After the planner proposed the step's decision.
    AfterModel,
    /// Before a tool call runs (a single call, or each call of a batch).
    BeforeTool,
    /// After a tool call ended (its output or its error).
    AfterTool,
    /// Before a child run is started for a delegation.
    ChildStart,
    /// After a child run ended.
    ChildEnd,
    /// The run paused (a question to a human, a durable approval).
    Pause,
}

impl HookPoint {
    /// Every point, in the order a run meets them.
    pub const ALL: [Self; 9] = [
        Self::RunStart,
        Self::BeforeModel,
        Self::AfterModel,
        Self::BeforeTool,
        Self::AfterTool,
        Self::ChildStart,
        Self::ChildEnd,
        Self::Pause,
        Self::RunEnd,
    ];

    /// Whether a verdict at this point can refuse or narrow anything; at the other points
    /// a hook only observes and its verdict is ignored.
    #[must_use]
    pub const fn may_refuse(self) -> bool {
        matches!(
            self,
            Self::RunStart | Self::BeforeModel | Self::BeforeTool | Self::ChildStart
        )
    }

    /// The point's `snake_case` name, as serialized.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RunStart => "run_start",
            Self::RunEnd => "run_end",
            Self::BeforeModel => "before_model",
            Self::AfterModel => "after_model",
            Self::BeforeTool => "before_tool",
            Self::AfterTool => "after_tool",
            Self::ChildStart => "child_start",
            Self::ChildEnd => "child_end",
            Self::Pause => "pause",
        }
    }
}

impl fmt::Display for HookPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hook's verdict other than allow asked for.
///
/// ```
/// use rein_ledger::HookOutcome;
/// assert_eq!(serde_json::to_value(HookOutcome::Deny)?, serde_json::json!({"type": "deny"}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum HookOutcome {
    /// Refuse (a hook that failed, timed out or answered garbage is recorded as this).
    Deny,
    /// Hold this call for approval, whatever the approval policy says of it.
    RequireApproval,
    /// Lower the run's limit of a budget (never raise it).
    Budget {
        /// The budget.
        name: BudgetName,
        /// The limit the hook asked for.
        limit: u64,
    },
}

/// One hook's verdict other than allow, with who gave it and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRuling {
    /// The hook's name, as registered.
    pub hook: String,
    /// For a command hook: the SHA-256 of its command line.
    pub command: Option<Digest>,
    /// For a command hook: the SHA-256 of the script file it runs.
    pub script: Option<Digest>,
    /// What it asked for.
    pub outcome: HookOutcome,
    /// Why, as the hook said (or why the engine denied for it).
    pub reason: String,
}

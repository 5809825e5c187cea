//! `RunSpec`: what to run — a goal, variables, optionally an id of your own; `FollowUp`:
//! a run spec that continues a finished run.

use rein_run::{RunId, Timestamp};
use serde_json::{Map, Value};

/// What to run: a goal, optional variables, optionally a run id of your own.
///
/// ```
/// use rein_engine::RunSpec;
/// use serde_json::json;
/// let spec = RunSpec::new("Summarise the report").with_var("lang", json!("en"));
/// assert_eq!(spec.goal(), "Summarise the report");
/// let from_str: RunSpec = "Say hello".into();
/// # let _ = from_str;
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RunSpec {
    pub(crate) goal: String,
    pub(crate) vars: Map<String, Value>,
    pub(crate) id: Option<RunId>,
    pub(crate) deadline: Option<Timestamp>,
}

impl RunSpec {
    /// A run with `goal`.
    pub fn new(goal: impl Into<String>) -> Self {
        Self {
            goal: goal.into(),
            ..Self::default()
        }
    }

    /// Adds a variable the planner can read.
    pub fn with_var(mut self, name: impl Into<String>, value: Value) -> Self {
        self.vars.insert(name.into(), value);
        self
    }

    /// Uses `id` instead of a generated one. Starting a second run with an id that exists
    /// fails with [`EngineError::AlreadyActive`](crate::EngineError::AlreadyActive) or [`EngineError::RunExists`](crate::EngineError::RunExists); an id whose
    /// ledger is empty or gone while its run snapshot names a later entry fails with
    /// [`EngineError::LedgerBehindSnapshot`](crate::EngineError::LedgerBehindSnapshot) (that snapshot is the proof of a cut ledger, and
    /// is not overwritten).
    pub fn with_id(mut self, id: RunId) -> Self {
        self.id = Some(id);
        self
    }

    /// Gives this run a deadline at the instant `at` on the engine's clock (or the engine's
    /// own deadline, if that is sooner). The run records it in its policy, so it holds
    /// across restarts. Starting fails with
    /// [`EngineError::DeadlinePassed`](crate::EngineError::DeadlinePassed) when `at` is not
    /// in the future, and with
    /// [`EngineError::InvalidDeadline`](crate::EngineError::InvalidDeadline) when it is more
    /// than a year away.
    pub fn with_deadline(mut self, at: Timestamp) -> Self {
        self.deadline = Some(at);
        self
    }

    /// The goal.
    #[must_use]
    pub fn goal(&self) -> &str {
        &self.goal
    }
}

impl From<&str> for RunSpec {
    fn from(goal: &str) -> Self {
        Self::new(goal)
    }
}

impl From<String> for RunSpec {
    fn from(goal: String) -> Self {
        Self::new(goal)
    }
}

/// What a follow-up runs: its goal (and variables, id, deadline, as any [`RunSpec`]), and
/// whether it carries over what the run it continues had left of its budgets.
///
/// By default a follow-up runs under the engine's own budgets, like any new run;
/// [`carry_budgets`](Self::carry_budgets) gives it instead what the previous run left of
/// each limited budget (its limit less what it used).
///
/// ```
/// use rein_engine::{FollowUp, RunSpec};
/// let follow_up = FollowUp::new("And in French?").carry_budgets();
/// assert_eq!(follow_up.spec().goal(), "And in French?");
/// assert!(follow_up.carries_budgets());
/// let plain: FollowUp = RunSpec::new("Thanks, now summarise it").into();
/// assert!(!plain.carries_budgets());
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct FollowUp {
    pub(crate) spec: RunSpec,
    pub(crate) carry_budgets: bool,
}

impl FollowUp {
    /// A follow-up with `goal`: the user's next message.
    pub fn new(goal: impl Into<String>) -> Self {
        Self::from(RunSpec::new(goal))
    }

    /// Gives the follow-up what the previous run had left of each limited budget instead
    /// of the engine's budgets (a budget the previous run had no limit for keeps the
    /// engine's).
    pub const fn carry_budgets(mut self) -> Self {
        self.carry_budgets = true;
        self
    }

    /// The run to start.
    pub const fn spec(&self) -> &RunSpec {
        &self.spec
    }

    /// Whether the budgets carry over from the previous run.
    #[must_use]
    pub const fn carries_budgets(&self) -> bool {
        self.carry_budgets
    }
}

impl From<RunSpec> for FollowUp {
    fn from(spec: RunSpec) -> Self {
        Self {
            spec,
            carry_budgets: false,
        }
    }
}

impl From<&str> for FollowUp {
    fn from(goal: &str) -> Self {
        Self::new(goal)
    }
}

impl From<String> for FollowUp {
    fn from(goal: String) -> Self {
        Self::new(goal)
    }
}

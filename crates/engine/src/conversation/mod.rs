//! Conversations: a follow-up is a new run that continues a finished one (DESIGN.md §7, "a
//! conversation is a chain of runs"). Its second entry, `follow_up_of`, names the run it
//! continues and the head of that run's ledger, so the runs of a conversation form a chain
//! of chains that `verify_conversation` checks; its planner sees the earlier runs (their
//! goals, evidence, model replies and outcomes) through `PlanRequest::conversation`.

mod chain;

pub(crate) use chain::{link_of, read};

use crate::spec::RunSpec;

/// The most runs a conversation holds: a follow-up of a conversation this long is refused
/// ([`ConversationError::TooLong`](crate::ConversationError::TooLong)), so what a planner is shown, and what a verification
/// reads, stays bounded.
pub const MAX_CONVERSATION_RUNS: u32 = 64;

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

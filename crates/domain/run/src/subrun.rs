//! Sub-runs: how a child run ended, as its parent records it and its planner sees it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{BudgetName, Failure};

/// How a child run (a [`Decision::Delegate`](crate::Decision::Delegate)) ended: what its
/// parent's ledger records when the child is settled, and what the parent's planner gets
/// back as evidence.
///
/// ```
/// use rein_run::ChildOutcome;
/// use serde_json::json;
///
/// let done = ChildOutcome::Completed { summary: "found it".into(), result: json!(3) };
/// assert_eq!(serde_json::to_value(&done)?["status"], "completed");
/// assert!(done.is_completed());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum ChildOutcome {
    /// The child ended in `done`.
    Completed {
        /// What the child achieved.
        summary: String,
        /// The child's result.
        result: Value,
    },
    /// The child ended in `failed`.
    Failed {
        /// Why.
        failure: Failure,
    },
}

impl ChildOutcome {
    /// Whether the child completed.
    #[must_use]
    pub const fn is_completed(&self) -> bool {
        matches!(self, Self::Completed { .. })
    }
}

/// What a child run spent, by budget: charged to its parent when the child is settled.
pub type Spend = BTreeMap<BudgetName, u64>;

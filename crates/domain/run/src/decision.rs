//! `Decision`: the one thing a planner proposes per step.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{BudgetName, State};

/// What a planner proposes. The engine checks it against every policy before anything
/// happens; a rejected decision is a typed error recorded in the ledger, never silent.
///
/// A decision's tool names, inputs and reasons are shared (`Arc`), not copied: a planner
/// that proposes the same decision again (a script) hands out the same values, and the
/// engine's ledger entries and the run's evidence hold them without a copy. They
/// serialize as the values themselves.
///
/// Serialized with a `type` tag:
///
/// ```
/// use rein_run::{Decision, State};
/// use serde_json::json;
///
/// let d = Decision::call_tool("search", json!({"q": "rust"}), "need sources");
/// assert_eq!(
///     serde_json::to_value(&d)?,
///     json!({"type": "call_tool", "tool": "search", "input": {"q": "rust"}, "reason": "need sources"})
/// );
/// let back: Decision = serde_json::from_value(json!({"type": "transition", "to": "act", "reason": "ready"}))?;
/// assert_eq!(back, Decision::transition(State::Act, "ready"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Decision {
    /// Call a tool with an input.
    CallTool {
        /// The tool's name, as the planner wrote it. The engine looks it up and rejects an
        /// unknown (or malformed) name with an error listing the tools it knows.
        tool: Arc<str>,
        /// The input, checked against the tool's input schema before the call. Shared, not
        /// copied: the decision, its `tool_call` entry and the run's evidence hold the one
        /// value (it serializes as the value itself).
        input: Arc<Value>,
        /// Why, for the ledger and for humans.
        #[serde(default)]
        reason: Arc<str>,
    },
    /// Move to another working state.
    Transition {
        /// The state to move to.
        to: State,
        /// Why.
        #[serde(default)]
        reason: Arc<str>,
    },
    /// Pause the run and ask a human.
    AskHuman {
        /// The question.
        question: String,
        /// The answers offered; empty means any non-empty answer.
        #[serde(default)]
        options: Vec<String>,
    },
    /// End the run in `done` with a result.
    Finish {
        /// What was achieved, in a sentence.
        summary: String,
        /// The run's result.
        #[serde(default)]
        result: Value,
    },
    /// End the run in `failed`.
    Fail {
        /// Why the planner gives up.
        reason: String,
    },
    /// Call several tools as one batch. The engine checks every call against every policy
    /// before any of them runs and rejects the batch whole if one call fails a check;
    /// consecutive read-only calls run concurrently, any other call runs alone, in order,
    /// and the ledger records the calls in the batch's order.
    CallTools {
        /// The calls, in the order the ledger records them.
        calls: Vec<ProposedCall>,
        /// Why, for the ledger and for humans.
        #[serde(default)]
        reason: Arc<str>,
    },
    /// Delegate a sub-task to a child run: a full governed run with its own id, ledger and
    /// policy snapshot, driven to its end before the parent's next step. Its budget is
    /// carved out of what the parent has left and reserved in the parent's ledger when it
    /// starts; what it spends is charged to the parent when it ends, and its summary and
    /// result come back to the parent as evidence.
    ///
    /// A decision rather than a tool: a delegation is not a side effect the policies could
    /// meter like a call (it is a run, with its own policy and ledger), and the engine must
    /// own it to carve budgets, link ledgers and cascade interrupts through the tree.
    Delegate {
        /// The child's goal.
        goal: String,
        /// How much of each budget to carve out for the child. A budget the parent limits
        /// and this map does not name is carved whole (what the parent has left of it);
        /// asking for more than the parent has left is rejected.
        #[serde(default)]
        budget: BTreeMap<BudgetName, u64>,
        /// The planner that drives the child, by the name it was registered under on the
        /// engine; none: the parent's planner.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        planner: Option<String>,
        /// Why.
        #[serde(default)]
        reason: Arc<str>,
    },
    /// Several decisions from one reply, applied in order as one step: each member is
    /// checked and applied as if it were proposed alone, and the sequence stops at the first
    /// member that does not take effect (refused, or its call failed); the members after it
    /// are recorded as not run. Built with [`Decision::sequence`], which enforces its rules
    /// (see [`SequenceError`]); the engine checks them again for a sequence it deserialized.
    ///
    /// ```
    /// use rein_run::{Decision, State};
    /// use serde_json::json;
    ///
    /// let d = Decision::sequence(
    ///     [
    ///         Decision::transition(State::Act, "ready"),
    ///         Decision::call_tool("fs.write", json!({"path": "a.txt"}), ""),
    ///         Decision::transition(State::Validate, "written"),
    ///     ],
    ///     "write the file",
    /// )?;
    /// assert_eq!(serde_json::to_value(&d)?["type"], "sequence");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    Sequence {
        /// The members, in the order they are applied.
        decisions: Vec<Decision>,
        /// Why, for the ledger and for humans.
        #[serde(default)]
        reason: Arc<str>,
    },
}

/// Why a list of decisions cannot be a [`Decision::Sequence`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceError {
    /// The sequence has no members.
    #[error("a sequence needs at least one member; propose the decisions it should hold")]
    Empty,
    /// A member is itself a sequence.
    #[error(
        "member {index} of the sequence is itself a sequence; a sequence holds plain \
         decisions, so put its members in the outer sequence"
    )]
    Nested {
        /// The member's index, from 0.
        index: usize,
    },
    /// A member that ends or pauses the run (`finish`, `fail`, `ask_human`, a transition to
    /// `done` or `failed`) is not the last: the members after it could never run.
    #[error(
        "member {index} of the sequence ({kind}) ends or pauses the run, so it must be the \
         last member; move it to the end or drop the members after it"
    )]
    NotLast {
        /// The member's index, from 0.
        index: usize,
        /// The member's kind, as in its `type` tag.
        kind: &'static str,
    },
}

/// One call of a [`Decision::CallTools`] batch.
///
/// ```
/// use rein_run::{Decision, ProposedCall};
/// use serde_json::json;
///
/// let batch = Decision::call_tools(
///     [
///         ProposedCall::new("fs.read", json!({"path": "a.rs"}), "read a"),
///         ProposedCall::new("fs.read", json!({"path": "b.rs"}), "read b"),
///     ],
///     "read both files",
/// );
/// assert_eq!(
///     serde_json::to_value(&batch)?,
///     json!({"type": "call_tools", "reason": "read both files", "calls": [
///         {"tool": "fs.read", "input": {"path": "a.rs"}, "reason": "read a"},
///         {"tool": "fs.read", "input": {"path": "b.rs"}, "reason": "read b"},
///     ]})
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposedCall {
    /// The tool's name, as the planner wrote it.
    pub tool: Arc<str>,
    /// The input, checked against the tool's input schema before any call of the batch.
    /// Shared, not copied, as [`Decision::CallTool`]'s.
    pub input: Arc<Value>,
    /// Why this call, for the ledger and for humans.
    #[serde(default)]
    pub reason: Arc<str>,
}

impl ProposedCall {
    /// A call of `tool` with `input`.
    #[must_use]
    pub fn new(
        tool: impl Into<Arc<str>>,
        input: impl Into<Arc<Value>>,
        reason: impl Into<Arc<str>>,
    ) -> Self {
        Self {
            tool: tool.into(),
            input: input.into(),
            reason: reason.into(),
        }
    }
}

impl Decision {
    /// Proposes calling `tool` with `input`.
    #[must_use]
    pub fn call_tool(
        tool: impl Into<Arc<str>>,
        input: impl Into<Arc<Value>>,
        reason: impl Into<Arc<str>>,
    ) -> Self {
        Self::CallTool {
            tool: tool.into(),
            input: input.into(),
            reason: reason.into(),
        }
    }

    /// Proposes calling several tools as one batch (see [`Decision::CallTools`]).
    #[must_use]
    pub fn call_tools(
        calls: impl IntoIterator<Item = ProposedCall>,
        reason: impl Into<Arc<str>>,
    ) -> Self {
        Self::CallTools {
            calls: calls.into_iter().collect(),
            reason: reason.into(),
        }
    }

    /// Proposes `decisions` as one sequence (see [`Decision::Sequence`]).
    ///
    /// # Errors
    /// [`SequenceError`] when the list is empty, holds a sequence, or holds a member that
    /// ends or pauses the run anywhere but last.
    pub fn sequence(
        decisions: impl IntoIterator<Item = Self>,
        reason: impl Into<Arc<str>>,
    ) -> Result<Self, SequenceError> {
        let decisions: Vec<Self> = decisions.into_iter().collect();
        check_sequence(&decisions)?;
        Ok(Self::Sequence {
            decisions,
            reason: reason.into(),
        })
    }

    /// Whether applying this decision ends or pauses the run when it takes effect.
    #[must_use]
    pub fn ends_or_pauses(&self) -> bool {
        matches!(self, Self::AskHuman { .. }) || self.target_state().is_some_and(State::is_terminal)
    }

    /// Proposes moving to `to`.
    #[must_use]
    pub fn transition(to: State, reason: impl Into<Arc<str>>) -> Self {
        Self::Transition {
            to,
            reason: reason.into(),
        }
    }

    /// Proposes asking a human `question`, offering `options` (none: any answer).
    #[must_use]
    pub fn ask_human<I, S>(question: impl Into<String>, options: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::AskHuman {
            question: question.into(),
            options: options.into_iter().map(Into::into).collect(),
        }
    }

    /// Proposes ending in `done`.
    #[must_use]
    pub fn finish(summary: impl Into<String>, result: Value) -> Self {
        Self::Finish {
            summary: summary.into(),
            result,
        }
    }

    /// Proposes ending in `failed`.
    #[must_use]
    pub fn fail(reason: impl Into<String>) -> Self {
        Self::Fail {
            reason: reason.into(),
        }
    }

    /// Proposes delegating `goal` to a child run driven by the parent's planner, carving
    /// `budget` out of the parent's.
    #[must_use]
    pub fn delegate<I>(goal: impl Into<String>, budget: I, reason: impl Into<Arc<str>>) -> Self
    where
        I: IntoIterator<Item = (BudgetName, u64)>,
    {
        Self::Delegate {
            goal: goal.into(),
            budget: budget.into_iter().collect(),
            planner: None,
            reason: reason.into(),
        }
    }

    /// As [`Decision::delegate`], the child driven by the planner registered as `planner`.
    #[must_use]
    pub fn delegate_to<I>(
        planner: impl Into<String>,
        goal: impl Into<String>,
        budget: I,
        reason: impl Into<Arc<str>>,
    ) -> Self
    where
        I: IntoIterator<Item = (BudgetName, u64)>,
    {
        Self::Delegate {
            goal: goal.into(),
            budget: budget.into_iter().collect(),
            planner: Some(planner.into()),
            reason: reason.into(),
        }
    }

    /// The decision's kind, as in its `type` tag.
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::CallTool { .. } => "call_tool",
            Self::Transition { .. } => "transition",
            Self::AskHuman { .. } => "ask_human",
            Self::Finish { .. } => "finish",
            Self::Fail { .. } => "fail",
            Self::CallTools { .. } => "call_tools",
            Self::Delegate { .. } => "delegate",
            Self::Sequence { .. } => "sequence",
        }
    }

    /// The state this decision moves to, if it moves: `Transition`'s target, `done` for
    /// `Finish`, `failed` for `Fail`.
    #[must_use]
    pub const fn target_state(&self) -> Option<State> {
        match self {
            Self::Transition { to, .. } => Some(*to),
            Self::Finish { .. } => Some(State::Done),
            Self::Fail { .. } => Some(State::Failed),
            Self::CallTool { .. }
            | Self::AskHuman { .. }
            | Self::CallTools { .. }
            | Self::Delegate { .. }
            | Self::Sequence { .. } => None,
        }
    }
}

/// Checks the rules of a [`Decision::Sequence`]'s members (see [`SequenceError`]): what
/// [`Decision::sequence`] enforces, and what the engine checks of a sequence it did not
/// build itself.
///
/// # Errors
/// The first rule the members break.
pub fn check_sequence(decisions: &[Decision]) -> Result<(), SequenceError> {
    if decisions.is_empty() {
        return Err(SequenceError::Empty);
    }
    let last = decisions.len() - 1;
    for (index, member) in decisions.iter().enumerate() {
        if matches!(member, Decision::Sequence { .. }) {
            return Err(SequenceError::Nested { index });
        }
        if index < last && member.ends_or_pauses() {
            return Err(SequenceError::NotLast {
                index,
                kind: member.kind(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_round_trips() {
        for d in [
            Decision::call_tool("t", json!({"a": [1, 2]}), "r"),
            Decision::transition(State::Validate, "check"),
            Decision::ask_human("ok?", ["yes", "no"]),
            Decision::finish("done", json!(null)),
            Decision::fail("gave up"),
            Decision::call_tools([ProposedCall::new("t", json!({}), "")], "both"),
            Decision::delegate("sub", [(BudgetName::TOOL_CALLS, 2)], "split"),
            Decision::delegate_to("reader", "sub", [], "split"),
            Decision::sequence(
                [
                    Decision::transition(State::Act, "go"),
                    Decision::call_tool("t", json!({}), ""),
                    Decision::finish("done", json!(1)),
                ],
                "all at once",
            )
            .unwrap(),
        ] {
            let v = serde_json::to_value(&d).unwrap();
            assert_eq!(v["type"], d.kind());
            assert_eq!(serde_json::from_value::<Decision>(v).unwrap(), d);
        }
    }

    #[test]
    fn unknown_fields_and_types_are_errors() {
        let err =
            serde_json::from_value::<Decision>(json!({"type": "fail", "reason": "x", "extra": 1}))
                .unwrap_err();
        assert!(err.to_string().contains("extra"), "{err}");
        let err = serde_json::from_value::<Decision>(json!({"type": "explode"})).unwrap_err();
        assert!(err.to_string().contains("explode"), "{err}");
        let err =
            serde_json::from_value::<Decision>(json!({"type": "transition", "to": "nowhere"}))
                .unwrap_err();
        assert!(err.to_string().contains("nowhere"), "{err}");
    }

    #[test]
    fn finish_and_fail_are_transitions_to_terminal_states() {
        assert_eq!(
            Decision::finish("", json!(1)).target_state(),
            Some(State::Done)
        );
        assert_eq!(Decision::fail("").target_state(), Some(State::Failed));
        assert_eq!(
            Decision::ask_human("q", Vec::<String>::new()).target_state(),
            None
        );
    }

    #[test]
    fn a_sequence_is_flat_non_empty_and_ends_the_run_only_last() {
        assert_eq!(Decision::sequence([], "none"), Err(SequenceError::Empty));
        let inner = Decision::sequence([Decision::fail("x")], "").unwrap();
        assert_eq!(
            Decision::sequence([Decision::transition(State::Act, ""), inner], ""),
            Err(SequenceError::Nested { index: 1 })
        );
        for early in [
            Decision::finish("ok", json!(null)),
            Decision::fail("no"),
            Decision::ask_human("which?", Vec::<String>::new()),
            Decision::transition(State::Done, "over"),
        ] {
            let kind = early.kind();
            let err = Decision::sequence([early, Decision::call_tool("t", json!({}), "")], "")
                .unwrap_err();
            assert_eq!(err, SequenceError::NotLast { index: 0, kind });
            assert!(err.to_string().contains("last member"), "{err}");
        }
        assert!(
            Decision::sequence(
                [
                    Decision::call_tool("t", json!({}), ""),
                    Decision::finish("ok", json!(null))
                ],
                ""
            )
            .is_ok()
        );
    }
}

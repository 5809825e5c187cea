//! `Transitions`: which state may follow which, validated so terminal states have no way out.

use std::collections::BTreeMap;
use std::fmt;

use rein_run::{BudgetName, State};
use serde::{Deserialize, Serialize};

/// A transition table: for each state, the states that may follow it.
///
/// The default is DESIGN.md §2's: `intake→explore`, `explore→decide`, `decide→act|done`,
/// `act→validate`, `validate→explore|decide|done`, and every working state `→failed`.
/// A custom table is validated when it is built: no way out of `done` or `failed`, no state
/// that loops to itself, and every state a run can reach from `intake` can still reach an end.
///
/// ```
/// use rein_policy::{RefusalRule, Transitions};
/// use rein_run::State;
///
/// let table = Transitions::default();
/// let err = table.check(State::Explore, State::Act).unwrap_err();
/// assert!(matches!(err.rule, RefusalRule::NotInTable { .. }));
/// assert_eq!(
///     err.to_string(),
///     "transition explore → act refused: not in the transition table; from explore the run may go to decide, failed"
/// );
///
/// let custom = Transitions::from_edges([(State::Intake, State::Act), (State::Act, State::Done)])?;
/// assert!(custom.allows(State::Intake, State::Act));
/// assert!(Transitions::from_edges([(State::Done, State::Intake)]).is_err());
/// # Ok::<(), rein_policy::TransitionTableError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    try_from = "BTreeMap<State, Vec<State>>",
    into = "BTreeMap<State, Vec<State>>"
)]
pub struct Transitions {
    /// Row `from.index()` has bit `to.index()` set when `from → to` is allowed.
    rows: [u8; 7],
}

/// Why a transition table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransitionTableError {
    /// An edge leaves a terminal state.
    #[error("transition {from} → {to} leaves a terminal state; done and failed have no way out")]
    FromTerminal {
        /// The terminal state.
        from: State,
        /// Where the edge led.
        to: State,
    },
    /// An edge loops to its own state.
    #[error(
        "transition {state} → {state} loops to itself; a run already in {state} stays there without a transition"
    )]
    SelfLoop {
        /// The state.
        state: State,
    },
    /// A state reachable from `intake` from which no terminal state can be reached.
    #[error("from {state} no path leads to done or failed; add an edge such as {state} → failed")]
    Trapped {
        /// The state.
        state: State,
    },
}

/// A refused transition: from where, to where, and the rule that refused it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TransitionRefused {
    /// The run's state.
    pub from: State,
    /// The state asked for.
    pub to: State,
    /// The rule that refused it.
    pub rule: RefusalRule,
}

/// The rule behind a refused transition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalRule {
    /// The run is in a terminal state.
    FromTerminal,
    /// The table has no such edge.
    NotInTable {
        /// Where the run may go from its state.
        allowed: Vec<State>,
    },
    /// Entering `act` with a budget that has nothing left.
    BudgetExhausted {
        /// The exhausted budget.
        name: BudgetName,
    },
}

impl fmt::Display for TransitionRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transition {} → {} refused: ", self.from, self.to)?;
        match &self.rule {
            RefusalRule::FromTerminal => {
                f.write_str("the run has ended; terminal states have no way out")
            }
            RefusalRule::NotInTable { allowed } if allowed.is_empty() => {
                f.write_str("not in the transition table; this state has no way out")
            }
            RefusalRule::NotInTable { allowed } => {
                let names: Vec<&str> = allowed.iter().map(|s| s.as_str()).collect();
                write!(
                    f,
                    "not in the transition table; from {} the run may go to {}",
                    self.from,
                    names.join(", ")
                )
            }
            RefusalRule::BudgetExhausted { name } => {
                write!(
                    f,
                    "budget `{name}` is exhausted, so the run may not enter act"
                )
            }
        }
    }
}

impl Transitions {
    /// A table with no edges at all (build one up with [`Transitions::from_edges`]).
    const EMPTY: Self = Self { rows: [0; 7] };

    /// Builds and validates a table from its edges.
    ///
    /// # Errors
    /// [`TransitionTableError`] for an edge out of a terminal state, a self-loop, or a
    /// working state from which no terminal state can be reached.
    pub fn from_edges(
        edges: impl IntoIterator<Item = (State, State)>,
    ) -> Result<Self, TransitionTableError> {
        let mut table = Self::EMPTY;
        for (from, to) in edges {
            if from.is_terminal() {
                return Err(TransitionTableError::FromTerminal { from, to });
            }
            if from == to {
                return Err(TransitionTableError::SelfLoop { state: from });
            }
            table.rows[from.index()] |= 1 << to.index();
        }
        let reachable = table.reachable_from(State::Intake);
        for state in State::ALL.into_iter().filter(|s| !s.is_terminal()) {
            if reachable & (1 << state.index()) != 0 && !table.reaches_an_end(state) {
                return Err(TransitionTableError::Trapped { state });
            }
        }
        Ok(table)
    }

    /// Whether `from → to` is in the table.
    #[must_use]
    pub const fn allows(&self, from: State, to: State) -> bool {
        self.rows[from.index()] & (1 << to.index()) != 0
    }

    /// Checks `from → to`.
    ///
    /// # Errors
    /// [`TransitionRefused`] naming from, to and the rule: [`RefusalRule::FromTerminal`] or
    /// [`RefusalRule::NotInTable`] with the states allowed from `from`.
    pub fn check(&self, from: State, to: State) -> Result<(), TransitionRefused> {
        if from.is_terminal() {
            return Err(TransitionRefused {
                from,
                to,
                rule: RefusalRule::FromTerminal,
            });
        }
        if self.allows(from, to) {
            return Ok(());
        }
        Err(TransitionRefused {
            from,
            to,
            rule: RefusalRule::NotInTable {
                allowed: self.targets(from).collect(),
            },
        })
    }

    /// The states that may follow `from`, in lifecycle order.
    pub fn targets(&self, from: State) -> impl Iterator<Item = State> + '_ {
        State::ALL
            .into_iter()
            .filter(move |&to| self.allows(from, to))
    }

    /// Every edge, in lifecycle order.
    pub fn edges(&self) -> impl Iterator<Item = (State, State)> + '_ {
        State::ALL
            .into_iter()
            .flat_map(move |from| self.targets(from).map(move |to| (from, to)))
    }

    /// The states reachable from `start` (itself included), as a bit set.
    fn reachable_from(self, start: State) -> u8 {
        let mut seen = 1u8 << start.index();
        let mut frontier = seen;
        while frontier != 0 {
            let mut next = 0u8;
            for state in State::ALL {
                if frontier & (1 << state.index()) != 0 {
                    next |= self.rows[state.index()];
                }
            }
            frontier = next & !seen;
            seen |= next;
        }
        seen
    }

    fn reaches_an_end(self, start: State) -> bool {
        let ends = (1 << State::Done.index()) | (1 << State::Failed.index());
        self.reachable_from(start) & ends != 0
    }
}

impl Default for Transitions {
    fn default() -> Self {
        use State::{Act, Decide, Done, Explore, Failed, Intake, Validate};
        let mut table = Self::EMPTY;
        for (from, to) in [
            (Intake, Explore),
            (Explore, Decide),
            (Decide, Act),
            (Decide, Done),
            (Act, Validate),
            (Validate, Explore),
            (Validate, Decide),
            (Validate, Done),
            (Intake, Failed),
            (Explore, Failed),
            (Decide, Failed),
            (Act, Failed),
            (Validate, Failed),
        ] {
            table.rows[from.index()] |= 1 << to.index();
        }
        table
    }
}

impl fmt::Debug for Transitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                State::ALL
                    .into_iter()
                    .map(|from| (from, self.targets(from).collect::<Vec<_>>())),
            )
            .finish()
    }
}

impl TryFrom<BTreeMap<State, Vec<State>>> for Transitions {
    type Error = TransitionTableError;
    fn try_from(map: BTreeMap<State, Vec<State>>) -> Result<Self, Self::Error> {
        Self::from_edges(
            map.into_iter()
                .flat_map(|(from, tos)| tos.into_iter().map(move |to| (from, to))),
        )
    }
}

impl From<Transitions> for BTreeMap<State, Vec<State>> {
    fn from(t: Transitions) -> Self {
        State::ALL
            .into_iter()
            .filter(|s| !s.is_terminal())
            .map(|from| (from, t.targets(from).collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_table_is_the_design_table_and_valid() {
        let t = Transitions::default();
        assert_eq!(Transitions::from_edges(t.edges()).unwrap(), t);
        assert_eq!(t.edges().count(), 13);
        for s in State::ALL.into_iter().filter(|s| !s.is_terminal()) {
            assert!(t.allows(s, State::Failed), "{s} → failed");
        }
        assert!(t.allows(State::Decide, State::Done));
        assert!(!t.allows(State::Explore, State::Act));
    }

    #[test]
    fn refusals_name_from_to_and_rule() {
        let t = Transitions::default();
        let err = t.check(State::Failed, State::Intake).unwrap_err();
        assert_eq!(err.rule, RefusalRule::FromTerminal);
        assert_eq!(
            err.to_string(),
            "transition failed → intake refused: the run has ended; terminal states have no way out"
        );
    }

    #[test]
    fn validation_refuses_loops_and_traps() {
        assert_eq!(
            Transitions::from_edges([(State::Act, State::Act)]),
            Err(TransitionTableError::SelfLoop { state: State::Act })
        );
        assert!(matches!(
            Transitions::from_edges([
                (State::Intake, State::Explore),
                (State::Explore, State::Intake)
            ]),
            Err(TransitionTableError::Trapped { .. })
        ));
    }

    #[test]
    fn serde_round_trips_and_validates() {
        let t = Transitions::default();
        let json = serde_json::to_value(t).unwrap();
        assert_eq!(json["decide"], serde_json::json!(["act", "done", "failed"]));
        assert_eq!(serde_json::from_value::<Transitions>(json).unwrap(), t);
        let err = serde_json::from_str::<Transitions>(r#"{"done": ["intake"]}"#).unwrap_err();
        assert!(err.to_string().contains("leaves a terminal state"), "{err}");
    }

    fn state() -> impl Strategy<Value = State> {
        proptest::sample::select(State::ALL.to_vec())
    }

    proptest! {
        /// No table accepted by validation leaves a terminal state, and every accepted table
        /// answers `check` exactly as its edges say.
        #[test]
        fn accepted_tables_never_leave_a_terminal_state(edges in proptest::collection::vec((state(), state()), 0..30)) {
            if let Ok(table) = Transitions::from_edges(edges.clone()) {
                for to in State::ALL {
                    prop_assert!(table.check(State::Done, to).is_err());
                    prop_assert!(table.check(State::Failed, to).is_err());
                }
                for (from, to) in edges {
                    prop_assert!(table.check(from, to).is_ok());
                }
                let round: Transitions = serde_json::from_value(serde_json::to_value(table).unwrap()).unwrap();
                prop_assert_eq!(round, table);
            }
        }
    }
}

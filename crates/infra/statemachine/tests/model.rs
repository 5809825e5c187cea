//! Model test: random request sequences against random valid transition tables. The
//! lifecycle must accept exactly what the rules allow, follow the model's state, report every
//! accepted move, and never leave a terminal state.

use proptest::prelude::*;
use rein_policy::{Budget, RefusalRule, TransitionRefused, Transitions};
use rein_run::{BudgetName, BudgetUsage, State};
use rein_statemachine::{Lifecycle, LifecycleError, Transition, TransitionError};

const WORKING: [State; 5] = [
    State::Intake,
    State::Explore,
    State::Decide,
    State::Act,
    State::Validate,
];

#[derive(Debug, Clone)]
enum Op {
    /// Ask to move to `to`, with the tool-call budget spent or not.
    Request { to: State, exhausted: bool },
    /// End the run in failed, as the engine does when its policy stops it.
    Fail,
}

/// A table from random rows over the working states; may be invalid (trapped), which the
/// test skips.
fn table() -> impl Strategy<Value = Result<Transitions, rein_policy::TransitionTableError>> {
    proptest::array::uniform5(0u8..128).prop_map(|rows| {
        Transitions::from_edges(WORKING.into_iter().zip(rows).flat_map(|(from, row)| {
            State::ALL
                .into_iter()
                .filter(move |to| *to != from && row & (1 << to.index()) != 0)
                .map(move |to| (from, to))
        }))
    })
}

fn state() -> impl Strategy<Value = State> {
    proptest::sample::select(State::ALL.to_vec())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (state(), any::<bool>()).prop_map(|(to, exhausted)| Op::Request { to, exhausted }),
        1 => Just(Op::Fail),
    ]
}

/// The tool-call budget, spent (`exhausted`) or untouched.
fn budget(exhausted: bool) -> (Budget, BudgetUsage) {
    let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 1);
    let mut usage = BudgetUsage::default();
    if exhausted {
        budget
            .charge(&mut usage, &BudgetName::TOOL_CALLS, 1)
            .unwrap();
    }
    (budget, usage)
}

/// The rules, written out independently of the implementation.
fn model(
    table: Transitions,
    from: State,
    to: State,
    exhausted: bool,
) -> Result<Transition, TransitionError> {
    let refuse = |rule| {
        Err(TransitionError::Refused(TransitionRefused {
            from,
            to,
            rule,
        }))
    };
    if matches!(from, State::Done | State::Failed) {
        return refuse(RefusalRule::FromTerminal);
    }
    if !table.allows(from, to) {
        let allowed = State::ALL
            .into_iter()
            .filter(|s| table.allows(from, *s))
            .collect();
        return refuse(RefusalRule::NotInTable { allowed });
    }
    if to == State::Act && exhausted {
        return refuse(RefusalRule::BudgetExhausted {
            name: BudgetName::TOOL_CALLS,
        });
    }
    Ok(Transition { from, to })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every answer equals the model's, the state follows the model, a refusal never moves
    /// the run, a terminal state is never left, and the accepted moves rebuild the same
    /// lifecycle.
    #[test]
    fn the_lifecycle_follows_the_model(
        table in table(),
        start in proptest::sample::select(WORKING.to_vec()),
        ops in proptest::collection::vec(op(), 0..64),
    ) {
        let Ok(table) = table else { return Ok(()) };
        let mut lifecycle = Lifecycle::new(start, table).unwrap();
        let mut expected_state = start;
        let mut moves = Vec::new();
        for op in ops {
            match op {
                Op::Fail => {
                    let expected = if expected_state.is_terminal() {
                        Err(TransitionError::Refused(TransitionRefused {
                            from: expected_state,
                            to: State::Failed,
                            rule: RefusalRule::FromTerminal,
                        }))
                    } else {
                        Ok(Transition { from: expected_state, to: State::Failed })
                    };
                    let got = lifecycle.fail();
                    prop_assert_eq!(&got, &expected);
                    if let Ok(moved) = got {
                        expected_state = State::Failed;
                        moves.push(moved);
                    }
                }
                Op::Request { to, exhausted } => {
                    let (budget, usage) = budget(exhausted);
                    let expected = model(table, expected_state, to, exhausted);
                    let got = lifecycle.transition(to, &budget, &usage);
                    prop_assert_eq!(&got, &expected);
                    if let Ok(moved) = got {
                        prop_assert!(!moved.from.is_terminal(), "left a terminal state: {:?}", moved);
                        expected_state = to;
                        moves.push(moved);
                    }
                }
            }
            prop_assert_eq!(lifecycle.state(), expected_state);
        }
        // The accepted moves chain: each starts where the previous one ended.
        for pair in moves.windows(2) {
            prop_assert_eq!(pair[0].to, pair[1].from);
        }
        // A run's record starts in intake: from there, its moves rebuild where it is.
        if start == State::Intake {
            let rebuilt = Lifecycle::rebuild(moves, table).unwrap();
            prop_assert_eq!(rebuilt.state(), expected_state);
        }
    }

    /// From every working state, a single request is accepted exactly when the table has the
    /// edge (and, into act, the budget has room).
    #[test]
    fn one_step_acceptance_is_the_table(
        table in table(),
        exhausted in any::<bool>(),
    ) {
        let Ok(table) = table else { return Ok(()) };
        let (budget, usage) = budget(exhausted);
        for from in WORKING {
            for to in State::ALL {
                let mut lifecycle = Lifecycle::new(from, table).unwrap();
                let accepted = lifecycle.transition(to, &budget, &usage).is_ok();
                prop_assert_eq!(accepted, table.allows(from, to) && !(to == State::Act && exhausted));
                prop_assert_eq!(lifecycle.state(), if accepted { to } else { from });
            }
        }
    }
}

/// The generator above yields enough valid tables for the model test to mean something.
#[test]
fn the_table_generator_yields_valid_tables_often() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = table();
    let valid = (0..1000)
        .filter(|_| strategy.new_tree(&mut runner).unwrap().current().is_ok())
        .count();
    assert!(
        valid > 300,
        "only {valid} of 1000 generated tables are valid"
    );
}

/// A run persisted in any working state resumes there, under any valid table; a terminal
/// one does not resume.
#[test]
fn resume_in_every_state() {
    for start in WORKING {
        let lifecycle = Lifecycle::new(start, Transitions::default()).unwrap();
        assert_eq!(lifecycle.state(), start);
    }
    for end in [State::Done, State::Failed] {
        assert_eq!(
            Lifecycle::new(end, Transitions::default()).unwrap_err(),
            LifecycleError::TerminalStart { state: end }
        );
    }
}

//! Transition validity: the table decides which state may follow which; a refused transition
//! is a typed, recorded policy violation that fails the run (or is handed back) and never
//! moves the run.

mod support;

use proptest::prelude::*;
use rein::ledger::{EntryKind, Violation};
use rein::policy::{OnViolation, Transitions};
use rein::run::FailureKind;
use rein::{Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, json};
use support::{assert_chain, count, violations, walk_to};

const WORKING: [State; 5] = [
    State::Intake,
    State::Explore,
    State::Decide,
    State::Act,
    State::Validate,
];

/// The default table of DESIGN.md §2.
fn allowed_by_default(from: State, to: State) -> bool {
    use State::{Act, Decide, Done, Explore, Failed, Intake, Validate};
    matches!(
        (from, to),
        (Intake, Explore)
            | (Explore, Decide)
            | (Decide, Act | Done)
            | (Act, Validate)
            | (Validate, Explore | Decide | Done)
    ) || (to == Failed && !from.is_terminal())
}

/// Walks to `from`, proposes a transition to `to`, and checks the outcome against `allowed`.
async fn check(from: State, to: State, allowed: bool) {
    let mut steps = walk_to(from);
    steps.push(ScriptStep::expect(from, Decision::transition(to, "try")));
    steps.push(ScriptStep::expect(to, Decision::fail("stop")));
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("transitions").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    let moved = ledger.entries().iter().any(|e| {
        matches!(e.event(), EntryKind::Transition { from: f, to: t, .. } if (*f, *t) == (from, to))
    });
    let what = format!("{from} → {to}");
    if allowed {
        assert!(moved, "{what} is recorded");
        assert_eq!(violations(&ledger), [], "{what}");
        let expected = if to == State::Done {
            RunStatus::Completed
        } else {
            RunStatus::Failed
        };
        assert_eq!(run.status(), expected, "{what}");
        if to != State::Done {
            assert_eq!(
                run.failure().map(|f| f.kind),
                Some(FailureKind::PlannerGaveUp),
                "{what}"
            );
        }
    } else {
        assert!(!moved, "{what} did not happen");
        assert_eq!(
            violations(&ledger),
            [(Violation::TransitionRefused, false)],
            "{what}"
        );
        assert_eq!(
            run.failure().map(|f| f.kind),
            Some(FailureKind::PolicyViolation),
            "{what}"
        );
        // The refusal and the failure are recorded while the run is still where it was.
        let tail: Vec<_> = ledger.entries().iter().rev().take(2).collect();
        assert!(
            matches!(tail[0].event(), EntryKind::RunFailed { .. }),
            "{what}"
        );
        assert!(
            matches!(tail[1].event(), EntryKind::PolicyViolation { .. }),
            "{what}"
        );
        assert!(tail.iter().all(|e| e.state() == from), "{what}");
        let last_transition = ledger.entries().iter().rev().find_map(|e| match e.event() {
            EntryKind::Transition { to, .. } => Some(*to),
            _ => None,
        });
        assert_eq!(last_transition.unwrap_or(State::Intake), from, "{what}");
    }
}

#[tokio::test]
async fn every_proposed_transition_follows_the_default_table() {
    for from in WORKING {
        for to in State::ALL {
            check(from, to, allowed_by_default(from, to)).await;
        }
    }
}

#[tokio::test]
async fn finish_and_fail_obey_the_table() {
    // Finish is a transition to done: from explore it is refused.
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::finish("too early", json!(1)),
    ));
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("finish early").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.result(), None);
    assert_eq!(violations(&ledger), [(Violation::TransitionRefused, false)]);
    assert_eq!(count(&ledger, "run_completed"), 0);
}

#[tokio::test]
async fn a_refused_transition_handed_back_leaves_the_run_in_its_state() {
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Act, "skip ahead"),
            ),
            // Still in explore: the refusal changed nothing but the evidence.
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Decide, "properly"),
            ),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
        ]))
        .on_violation(OnViolation::HandBack { limit: 1 })
        .build()
        .expect("engine builds");
    let run = engine.run("hand back").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::TransitionRefused, true)]);
    let notes: Vec<_> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            rein::run::EvidenceKind::SystemNote { source, note } => Some((*source, note.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].0, rein::run::NoteSource::Violation);
    assert!(notes[0].1.contains("explore → act"), "{}", notes[0].1);
}

#[tokio::test]
async fn a_custom_table_replaces_the_default() {
    let table = Transitions::from_edges([
        (State::Intake, State::Act),
        (State::Act, State::Done),
        (State::Intake, State::Failed),
        (State::Act, State::Failed),
    ])
    .expect("a valid table");
    let engine = Engine::builder()
        .transitions(table)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(
                State::Intake,
                Decision::transition(State::Act, "straight in"),
            ),
            ScriptStep::expect(State::Act, Decision::finish("done", json!(true))),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("custom").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed);

    // The default edge intake → explore is not in this table.
    let engine = Engine::builder()
        .transitions(table)
        .planner(ScriptedPlanner::new([ScriptStep::expect(
            State::Intake,
            Decision::transition(State::Explore, "the old way"),
        )]))
        .build()
        .expect("engine builds");
    let run = engine.run("custom").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::TransitionRefused, false)]);
}

#[test]
fn tables_that_leave_a_terminal_state_or_trap_a_run_are_refused() {
    for (from, to) in [
        (State::Done, State::Explore),
        (State::Failed, State::Intake),
        (State::Done, State::Failed),
    ] {
        let table = Transitions::from_edges([(State::Intake, State::Done), (from, to)]);
        assert!(table.is_err(), "{from} → {to}: {table:?}");
    }
    // Self-loops and states with no way to an end are refused too.
    assert!(Transitions::from_edges([(State::Intake, State::Intake)]).is_err());
    assert!(
        Transitions::from_edges([
            (State::Intake, State::Explore),
            (State::Explore, State::Decide)
        ])
        .is_err()
    );
    // The same rules hold for a table read from JSON (a scenario file).
    let from_json: Result<Transitions, _> =
        serde_json::from_value(json!({"intake": ["done"], "done": ["explore"]}));
    assert!(from_json.is_err());
}

proptest! {
    /// Whatever edges a table is built from, a table that builds never leaves a terminal state.
    #[test]
    fn transition_tables_never_leave_a_terminal_state(
        edges in proptest::collection::vec((0..7usize, 0..7usize), 0..20)
    ) {
        let edges: Vec<(State, State)> =
            edges.into_iter().map(|(a, b)| (State::ALL[a], State::ALL[b])).collect();
        if let Ok(table) = Transitions::from_edges(edges) {
            for (from, to) in table.edges() {
                prop_assert!(!from.is_terminal(), "{from} → {to}");
            }
            for terminal in [State::Done, State::Failed] {
                for to in State::ALL {
                    prop_assert!(table.check(terminal, to).is_err());
                }
            }
        }
    }
}

//! Structured results: a `finish` whose result does not match the engine's result schema is a
//! rejected decision — handed back within the `violations` budget, or failing the run — and a
//! run resumed later keeps the schema it started under.

mod support;

use std::sync::{Arc, Mutex};

use rein::ledger::Violation;
use rein::policy::OnViolation;
use rein::run::FailureKind;
use rein::{
    BuildError, Decision, Engine, PlanRequest, Planner, PlannerError, RunStatus, ScriptStep,
    ScriptedPlanner, State, json,
};
use support::{count, violations, walk_to};

fn schema() -> rein::Value {
    json!({
        "type": "object",
        "required": ["answer"],
        "properties": {"answer": {"type": "integer"}}
    })
}

/// Walks to decide, then proposes each of `results` as a finish, in decide.
fn finishing(results: &[rein::Value]) -> ScriptedPlanner {
    let mut steps = walk_to(State::Decide);
    steps.extend(
        results
            .iter()
            .map(|r| ScriptStep::expect(State::Decide, Decision::finish("done", r.clone()))),
    );
    ScriptedPlanner::new(steps)
}

#[tokio::test]
async fn a_result_that_does_not_match_is_handed_back_and_the_next_one_completes_the_run() {
    let engine = Engine::builder()
        .planner(finishing(&[
            json!({"answer": "forty-two"}),
            json!({"answer": 42}),
        ]))
        .result_schema(schema())
        .on_violation(OnViolation::HandBack { limit: 2 })
        .build()
        .expect("engine builds");
    let run = engine.run("answer").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(run.result(), Some(&json!({"answer": 42})));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::InvalidInput, true)]);
    assert_eq!(count(&ledger, "run_completed"), 1);
    let notes: Vec<String> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            rein::run::EvidenceKind::SystemNote { note, .. } => Some(note.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("result schema"), "{}", notes[0]);
    assert!(notes[0].contains("/answer"), "{}", notes[0]);
}

#[tokio::test]
async fn a_result_that_does_not_match_fails_the_run_under_fail_run() {
    let engine = Engine::builder()
        .planner(finishing(&[json!({"answer": "forty-two"})]))
        .result_schema(schema())
        .on_violation(OnViolation::FailRun)
        .build()
        .expect("engine builds");
    let run = engine.run("answer").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.result(), None);
    let failure = run.failure().expect("a failure");
    assert_eq!(failure.kind, FailureKind::PolicyViolation);
    assert!(failure.message.contains("/answer"), "{}", failure.message);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::InvalidInput, false)]);
    assert_eq!(count(&ledger, "run_completed"), 0);
}

#[tokio::test]
async fn a_run_out_of_violations_fails_rather_than_completing_with_a_bad_result() {
    let engine = Engine::builder()
        .planner(finishing(&[json!({}), json!({"answer": null})]))
        .result_schema(schema())
        .on_violation(OnViolation::HandBack { limit: 1 })
        .build()
        .expect("engine builds");
    let run = engine.run("answer").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.result(), None);
    let failure = run.failure().expect("a failure");
    assert_eq!(failure.kind, FailureKind::PolicyViolation);
    assert!(
        failure.message.contains("violations budget is exhausted"),
        "{}",
        failure.message
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(
        violations(&ledger),
        [
            (Violation::InvalidInput, true),
            (Violation::InvalidInput, false)
        ]
    );
}

#[tokio::test]
async fn a_transition_to_done_is_a_finish_with_a_null_result_and_is_checked_too() {
    let mut steps = walk_to(State::Decide);
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::transition(State::Done, "done"),
    ));
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .result_schema(schema())
        .build()
        .expect("engine builds");
    let run = engine.run("answer").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PolicyViolation)
    );
}

#[test]
fn a_schema_that_does_not_compile_is_a_build_error() {
    let err = Engine::builder()
        .planner(ScriptedPlanner::new([]))
        .result_schema(json!({"type": 12}))
        .build()
        .expect_err("an invalid schema");
    assert!(
        matches!(err, BuildError::InvalidResultSchema { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("result schema"), "{err}");
}

#[tokio::test]
async fn a_resumed_run_keeps_the_schema_it_started_under() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut steps = walk_to(State::Decide);
    steps.extend([
        ScriptStep::expect(State::Decide, Decision::ask_human("Which?", ["a"])),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("free text"))),
    ]);
    let first = Engine::builder()
        .planner(ScriptedPlanner::new(steps.clone()))
        .result_schema(schema())
        .filesystem(dir.path())
        .build()
        .expect("engine builds");
    let run = first.run("answer").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    // The first engine holds its ledgers' write locks until it is gone.
    drop(first);
    // Restarted without a schema: the recorded one still holds.
    let second = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .filesystem(dir.path())
        .build()
        .expect("engine builds");
    let run = second
        .resume_with_input(run.id(), "a")
        .await
        .expect("resume");
    assert_eq!(run.status(), RunStatus::Failed);
    assert!(
        run.failure()
            .is_some_and(|f| f.message.contains("result schema")),
        "{:?}",
        run.failure()
    );
}

/// Finishes at once (from intake), recording the result schema each request carried.
struct Seeing {
    seen: Arc<Mutex<Vec<Option<rein::Value>>>>,
}

impl Planner for Seeing {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        self.seen
            .lock()
            .unwrap()
            .push(request.result_schema().cloned());
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "start"),
            State::Explore => Decision::transition(State::Decide, "known"),
            _ => Decision::finish("done", json!({"answer": 1})),
        })
    }
}

#[tokio::test]
async fn every_plan_request_carries_the_result_schema() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let engine = Engine::builder()
        .planner(Seeing {
            seen: Arc::clone(&seen),
        })
        .result_schema(schema())
        .build()
        .expect("engine builds");
    let run = engine.run("answer").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, vec![Some(schema()); 3]);
}

#[test]
fn adding_a_result_schema_narrows_a_policy_and_dropping_or_changing_one_does_not() {
    let none = rein::policy::PolicySnapshot::default();
    let with = rein::policy::PolicySnapshot {
        result_schema: Some(schema()),
        ..rein::policy::PolicySnapshot::default()
    };
    let other = rein::policy::PolicySnapshot {
        result_schema: Some(json!({"type": "string"})),
        ..rein::policy::PolicySnapshot::default()
    };
    assert!(with.is_within(&none, &[]));
    assert!(with.is_within(&with, &[]));
    assert!(!none.is_within(&with, &[]));
    assert!(!other.is_within(&with, &[]));
    // Recorded only when set: a snapshot without one reads and writes as before.
    assert!(none.to_value().get("result_schema").is_none());
    assert_eq!(
        rein::policy::PolicySnapshot::from_value(&with.to_value()).unwrap(),
        with
    );
}

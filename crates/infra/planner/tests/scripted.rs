//! `ScriptedPlanner`: position from the request, expectations, conditions, exhaustion,
//! concurrent runs, resume, and scripts as JSON.

mod support;

use std::sync::Arc;

use rein_planner::{Condition, ScriptStep, ScriptedPlanner};
use rein_run::{Decision, EvidenceKind, PlannerError, Run, State, ToolError, ToolName};
use serde_json::json;
use support::{plan, run_at};

/// The greeting script of DESIGN.md §4.
fn greeting() -> ScriptedPlanner {
    ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("greet", json!({"name": "World"}), "greet"),
        ),
        ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "have it"),
        ),
        ScriptStep::expect(
            State::Decide,
            Decision::finish("greeted", json!({"status": "done"})),
        ),
    ])
}

/// Asks `planner` for the decision of a run in `state` at `step` and compares it with
/// `expect`.
async fn check(planner: &ScriptedPlanner, state: State, step: u32, expect: &Decision) {
    let run = run_at("run-1", state, step, vec![]);
    let got = plan(planner, &run).await.expect("a decision");
    assert_eq!(&got, expect, "step {step} in {state}");
}

#[tokio::test]
async fn the_position_is_the_requests_step_number() {
    let planner = greeting();
    // Out of order, and twice: the planner keeps no cursor.
    for step in [2, 0, 3, 1, 2, 0] {
        let script_step = &planner.steps()[step as usize];
        let state = script_step.expected_state().unwrap();
        check(&planner, state, step, script_step.decision()).await;
    }
}

#[tokio::test]
async fn a_state_mismatch_names_the_step_and_both_states() {
    let planner = greeting();
    let run = run_at("run-1", State::Decide, 1, vec![]);
    let err = plan(&planner, &run).await.unwrap_err();
    assert!(
        matches!(
            err,
            PlannerError::StateMismatch {
                step: 1,
                expected: State::Explore,
                actual: State::Decide
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "script step 1 expects state explore, but the run is in decide"
    );
}

#[tokio::test]
async fn a_step_without_expectation_accepts_any_state() {
    let planner = ScriptedPlanner::new([ScriptStep::any(Decision::fail("stop"))]);
    for state in [
        State::Intake,
        State::Explore,
        State::Decide,
        State::Act,
        State::Validate,
    ] {
        check(&planner, state, 0, &Decision::fail("stop")).await;
    }
}

#[tokio::test]
async fn past_the_end_the_script_fails_the_run_saying_where_it_ended() {
    let planner = greeting();
    for step in [4, 9] {
        let run = run_at("run-1", State::Decide, step, vec![]);
        let Decision::Fail { reason } = plan(&planner, &run).await.unwrap() else {
            panic!("expected a fail decision at step {step}");
        };
        assert!(
            reason.starts_with("the script ended at step 4:"),
            "{reason}"
        );
        assert!(
            reason.contains(&format!("asked for step {step}")),
            "{reason}"
        );
    }
    let empty = ScriptedPlanner::new([]);
    let run = run_at("run-1", State::Intake, 0, vec![]);
    let decision = plan(&empty, &run).await.unwrap();
    assert_eq!(decision.kind(), "fail");
}

#[tokio::test]
async fn a_condition_chooses_between_decision_and_otherwise() {
    let planner = ScriptedPlanner::new([ScriptStep::expect(
        State::Validate,
        Decision::transition(State::Decide, "retry"),
    )
    .when(
        Condition::LastToolFailed,
        Decision::finish("checked", json!({"ok": true})),
    )]);
    let tool = ToolName::new("check").unwrap();
    let failed = EvidenceKind::ToolFailure {
        tool: tool.clone(),
        input: json!({}).into(),
        error: ToolError::failed("red"),
    };
    let run = run_at("run-1", State::Validate, 0, vec![failed]);
    assert_eq!(
        plan(&planner, &run).await.unwrap(),
        Decision::transition(State::Decide, "retry")
    );
    let run = run_at("run-1", State::Validate, 0, vec![]);
    assert_eq!(
        plan(&planner, &run).await.unwrap(),
        Decision::finish("checked", json!({"ok": true}))
    );
    // The expectation holds on both branches.
    let run = run_at("run-1", State::Act, 0, vec![]);
    assert!(matches!(
        plan(&planner, &run).await,
        Err(PlannerError::StateMismatch { step: 0, .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_planner_serves_many_concurrent_runs_each_at_its_own_step() {
    let planner = Arc::new(greeting());
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..64u32 {
        let planner = Arc::clone(&planner);
        tasks.spawn(async move {
            let step = i % 4;
            let state = planner.steps()[step as usize].expected_state().unwrap();
            let run = run_at(&format!("run-{i}"), state, step, vec![]);
            tokio::task::yield_now().await;
            let decision = plan(&*planner, &run).await.unwrap();
            (step, decision)
        });
    }
    let mut answered = 0;
    while let Some(joined) = tasks.join_next().await {
        let (step, decision) = joined.unwrap();
        assert_eq!(&decision, planner.steps()[step as usize].decision());
        answered += 1;
    }
    assert_eq!(answered, 64);
}

#[tokio::test]
async fn a_resumed_run_continues_where_it_stopped() {
    let planner = greeting();
    let run = run_at("run-1", State::Explore, 2, vec![]);
    let persisted = serde_json::to_string(&run).unwrap();
    // The process restarts; a new planner instance with the same script picks it up.
    let resumed: Run = serde_json::from_str(&persisted).unwrap();
    let fresh = greeting();
    assert_eq!(
        plan(&fresh, &resumed).await.unwrap(),
        Decision::transition(State::Decide, "have it")
    );
    assert_eq!(
        plan(&planner, &resumed).await.unwrap(),
        plan(&fresh, &run).await.unwrap()
    );
}

#[test]
fn a_script_round_trips_through_json() {
    let script = vec![
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
        ScriptStep::any(Decision::ask_human("deploy?", ["yes", "no"])),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "go")).when(
            Condition::LastAnswerIs("yes".into()),
            Decision::fail("declined"),
        ),
        ScriptStep::any(Decision::finish("done", json!(null))).when(
            Condition::EvidenceContains("deployed".into()),
            Decision::fail("not deployed"),
        ),
    ];
    let json = serde_json::to_value(&script).unwrap();
    assert_eq!(
        json[1],
        json!({"decision": {"type": "ask_human", "question": "deploy?", "options": ["yes", "no"]}})
    );
    assert_eq!(json[2]["when"], json!({"last_answer_is": "yes"}));
    assert_eq!(
        json[2]["otherwise"],
        json!({"type": "fail", "reason": "declined"})
    );
    let back: Vec<ScriptStep> = serde_json::from_value(json).unwrap();
    assert_eq!(back, script);
    assert_eq!(ScriptedPlanner::new(back), ScriptedPlanner::new(script));
}

#[test]
fn malformed_steps_are_refused_with_the_reason() {
    for (step, needle) in [
        (
            json!({"decision": {"type": "fail", "reason": "x"}, "extra": 1}),
            "unknown field `extra`",
        ),
        (json!({"expect": "act"}), "missing field `decision`"),
        (
            json!({"expect": "nowhere", "decision": {"type": "fail", "reason": "x"}}),
            "nowhere",
        ),
        (
            json!({"decision": {"type": "fail", "reason": "x"}, "when": "last_tool_failed"}),
            "has `when` but no `otherwise`",
        ),
        (
            json!({"decision": {"type": "fail", "reason": "x"}, "otherwise": {"type": "fail", "reason": "y"}}),
            "has `otherwise` but no `when`",
        ),
    ] {
        let err = serde_json::from_value::<ScriptStep>(step).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
}

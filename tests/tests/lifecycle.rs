//! Run lifecycle and statuses: how a run ends (completed, failed for each reason, paused), what
//! its ledger says about it, and that the run the engine returns is exactly the projection of
//! that ledger. With an injected clock and id generator, runs are reproducible byte for byte.

mod support;

use std::sync::{Arc, Mutex};

use rein::clock::{ManualClock, SequentialIds};
use rein::ledger::EntryKind;
use rein::planner::MockPlanner;
use rein::run::FailureKind;
use rein::{
    Decision, Engine, PlannerError, RunSpec, RunStatus, ScriptStep, ScriptedPlanner, State, Value,
    json,
};
use support::{assert_chain, walk_to};

/// What a run must end as.
#[derive(Debug)]
struct Expect {
    status: RunStatus,
    state: State,
    failure: Option<FailureKind>,
    last_entry: &'static str,
}

async fn check(planner: impl rein::Planner, expect: Expect) {
    let engine = Engine::builder()
        .planner(planner)
        .build()
        .expect("engine builds");
    let run = engine.run("lifecycle").await.expect("run");
    assert_eq!(
        run.status(),
        expect.status,
        "{expect:?}: {:?}",
        run.failure()
    );
    assert_eq!(run.state(), expect.state, "{expect:?}");
    assert_eq!(run.failure().map(|f| f.kind), expect.failure, "{expect:?}");
    assert_eq!(run.is_finished(), expect.status.is_terminal());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert!(matches!(
        ledger.entries()[0].event(),
        EntryKind::RunStarted { goal, .. } if goal == "lifecycle"
    ));
    let last = ledger.entries().last().expect("entries").event().name();
    assert_eq!(last, expect.last_entry, "{expect:?}");
    // The run is a projection of its ledger.
    assert_eq!(engine.load_run(run.id()).await.expect("load"), run);
    assert_eq!(engine.list_runs().await.expect("list"), [run.id().clone()]);
}

#[tokio::test]
async fn a_finished_script_completes_with_its_result() {
    let mut steps = walk_to(State::Decide);
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("answered", json!({"answer": 42})),
    ));
    let expect = Expect {
        status: RunStatus::Completed,
        state: State::Done,
        failure: None,
        last_entry: "run_completed",
    };
    check(ScriptedPlanner::new(steps.clone()), expect).await;

    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("answer").await.expect("run");
    assert_eq!(run.result(), Some(&json!({"answer": 42})));
    assert_eq!(run.summary(), Some("answered"));
    assert_eq!(run.steps(), 3);
}

#[tokio::test]
async fn a_run_fails_for_each_kind_of_reason() {
    let failed = |kind, last_entry| Expect {
        status: RunStatus::Failed,
        state: State::Failed,
        failure: Some(kind),
        last_entry,
    };
    // The planner gives up.
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(State::Explore, Decision::fail("no way")));
    check(
        ScriptedPlanner::new(steps),
        failed(FailureKind::PlannerGaveUp, "run_failed"),
    )
    .await;
    // The script ends without finishing: the scripted planner gives up, and says why.
    check(
        ScriptedPlanner::new(walk_to(State::Explore)),
        failed(FailureKind::PlannerGaveUp, "run_failed"),
    )
    .await;
    // The planner errs.
    check(
        MockPlanner::new(|_| Err(PlannerError::failed("model unavailable"))),
        failed(FailureKind::PlannerError, "run_failed"),
    )
    .await;
    // The script expected another state.
    check(
        ScriptedPlanner::new([ScriptStep::expect(
            State::Explore,
            Decision::fail("unreachable"),
        )]),
        failed(FailureKind::PlannerError, "run_failed"),
    )
    .await;
    // A policy refused a decision.
    check(
        ScriptedPlanner::new([ScriptStep::expect(
            State::Intake,
            Decision::transition(State::Act, "hurry"),
        )]),
        failed(FailureKind::PolicyViolation, "run_failed"),
    )
    .await;
}

#[tokio::test]
async fn a_question_pauses_the_run() {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::ask_human("Which region?", ["eu", "us"]),
    ));
    let expect = Expect {
        status: RunStatus::Paused,
        state: State::Explore,
        failure: None,
        last_entry: "run_paused",
    };
    check(ScriptedPlanner::new(steps), expect).await;
}

#[tokio::test]
async fn the_planner_sees_the_goal_vars_and_step() {
    let seen: Arc<Mutex<Vec<(String, Value, u32)>>> = Arc::default();
    let log = Arc::clone(&seen);
    let planner = MockPlanner::new(move |request| {
        log.lock().expect("lock").push((
            request.goal().to_owned(),
            request.vars()["lang"].clone(),
            request.step(),
        ));
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "go"),
            State::Explore => Decision::transition(State::Decide, "go"),
            _ => Decision::finish("done", json!(null)),
        })
    });
    let engine = Engine::builder()
        .planner(planner)
        .build()
        .expect("engine builds");
    let spec = RunSpec::new("Summarise").with_var("lang", json!("en"));
    let run = engine.run(spec).await.expect("run");
    assert_eq!(run.goal(), "Summarise");
    assert_eq!(run.vars()["lang"], json!("en"));
    let seen = seen.lock().expect("lock").clone();
    let expected: Vec<_> = (0..3)
        .map(|step| ("Summarise".to_owned(), json!("en"), step))
        .collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn with_a_fixed_clock_and_ids_runs_are_reproducible_byte_for_byte() {
    let record = || async {
        let mut steps = walk_to(State::Decide);
        steps.push(ScriptStep::expect(
            State::Decide,
            Decision::finish("done", json!([1, 2, 3])),
        ));
        let engine = Engine::builder()
            .planner(ScriptedPlanner::new(steps))
            .clock(ManualClock::starting_at(1_700_000_000_000).with_step(5))
            .ids(SequentialIds::new("repro"))
            .build()
            .expect("engine builds");
        let first = engine.run("reproduce").await.expect("run");
        let second = engine.run("reproduce").await.expect("run");
        assert_eq!(first.id().as_str(), "repro-1");
        assert_eq!(second.id().as_str(), "repro-2");
        assert_eq!(
            engine.list_runs().await.expect("list"),
            [first.id().clone(), second.id().clone()]
        );
        let ledger = engine.ledger(first.id()).await.expect("ledger");
        let at: Vec<u64> = ledger
            .entries()
            .iter()
            .map(|e| e.at().as_unix_millis())
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        assert_eq!(first.created_at().as_unix_millis(), at[0]);
        let lines: Vec<String> = ledger
            .entries()
            .iter()
            .map(rein::ledger::Entry::to_json_line)
            .collect();
        (first, lines)
    };
    let (run_a, lines_a) = record().await;
    let (run_b, lines_b) = record().await;
    assert_eq!(run_a, run_b);
    assert_eq!(lines_a, lines_b);
}

#[tokio::test(start_paused = true)]
async fn tool_durations_come_from_the_engine_clock() {
    // Ten seconds of tokio time pass inside the tool; the engine's clock never moves.
    let slow = rein::FnTool::builder("slow")
        .annotations(rein::Annotations::read_only())
        .handler(|_: Value| async {
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
            Ok(json!("late"))
        })
        .build()
        .expect("a valid tool");
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("slow", json!({}), "wait"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ]);
    let engine = Engine::builder()
        .tool(slow)
        .planner(ScriptedPlanner::new(steps))
        .clock(ManualClock::starting_at(1_700_000_000_000))
        .build()
        .expect("engine builds");
    let run = engine.run("time it").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let durations: Vec<u64> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolResult { duration_ms, .. } => Some(*duration_ms),
            _ => None,
        })
        .collect();
    assert_eq!(durations, [0]);
}

//! Concurrency: one scripted planner serves many runs at once (its position is each run's own
//! step), one engine drives many runs on a multi-thread runtime, and a run id is never driven
//! twice at once nor reused.

mod support;

use std::sync::Arc;

use rein::planner::DynPlanner;
use rein::run::{EvidenceKind, Payload};
use rein::{
    Annotations, Decision, Engine, EngineError, FnTool, RunId, RunSpec, RunStatus, ScriptStep,
    ScriptedPlanner, State, Value, json,
};
use support::{gated, walk_to};
use tokio::sync::Barrier;

const RUNS: usize = 32;

/// A tool every run must enter before any may leave: proof that the runs are in flight
/// together, each at its own step of the same script.
fn rendezvous(barrier: Arc<Barrier>) -> FnTool {
    FnTool::builder("meet")
        .annotations(Annotations::read_only())
        .handler(move |input: Value| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok(input)
            }
        })
        .build()
        .expect("a valid tool")
}

fn script() -> ScriptedPlanner {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("meet", json!({"at": "noon"}), "meet"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "met")),
        ScriptStep::expect(State::Decide, Decision::finish("met", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_scripted_planner_serves_concurrent_runs() {
    let barrier = Arc::new(Barrier::new(RUNS));
    // Two engines share one planner instance; each engine drives half the runs.
    let planner: Arc<dyn DynPlanner> = Arc::new(script());
    let engines: Vec<Engine> = (0..2)
        .map(|_| {
            Engine::builder()
                .tool(rendezvous(Arc::clone(&barrier)))
                .shared_planner(Arc::clone(&planner))
                .build()
                .expect("engine builds")
        })
        .collect();
    let mut handles = Vec::new();
    for i in 0..RUNS {
        let engine = &engines[i % 2];
        let spec = RunSpec::new(format!("meet {i}")).with_var("i", json!(i));
        handles.push((engine.clone(), engine.start(spec).await.expect("start")));
    }
    let mut decisions = Vec::new();
    for (i, (engine, handle)) in handles.into_iter().enumerate() {
        let run = handle.await.expect("run");
        assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
        assert_eq!(run.goal(), format!("meet {i}"));
        assert_eq!(run.vars()["i"], json!(i));
        let results: Vec<_> = run
            .evidence()
            .iter()
            .filter_map(|e| match &e.kind {
                EvidenceKind::ToolResult { output, .. } => Some(output.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(results, [Payload::Inline(json!({"at": "noon"}))]);
        let ledger = engine.ledger(run.id()).await.expect("ledger");
        ledger.verify().expect("verifies");
        decisions.push(support::kinds(&ledger));
    }
    assert!(
        decisions.windows(2).all(|w| w[0] == w[1]),
        "every run took the same path"
    );
}

#[tokio::test]
async fn a_run_id_is_never_driven_twice_at_once_nor_reused() {
    let (slow, gate, probe) = gated("slow", Annotations::read_only());
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("slow", json!({}), "wait"),
        ),
        ScriptStep::expect(State::Explore, Decision::ask_human("More?", ["no"])),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]);
    let engine = Engine::builder()
        .tool(slow)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let id: RunId = "my-run".parse().expect("run id");
    let spec = |goal: &str| RunSpec::new(goal).with_id(id.clone());

    let handle = engine.start(spec("first")).await.expect("start");
    assert_eq!(handle.id(), &id);
    gate.entered().await;
    let before = engine.ledger(&id).await.expect("ledger").len();

    // While it is being driven, nothing else may drive it.
    let active = |r: Result<_, EngineError>| matches!(r, Err(EngineError::AlreadyActive { id: ref i }) if *i == id);
    assert!(active(engine.run(spec("second")).await.map(|_| ())));
    assert!(active(engine.start(spec("third")).await.map(|_| ())));
    assert!(active(engine.resume(&id).await.map(|_| ())));
    assert!(active(
        engine.resume_with_input(&id, "no").await.map(|_| ())
    ));
    assert_eq!(
        engine.ledger(&id).await.expect("ledger").len(),
        before,
        "the refused attempts recorded nothing"
    );

    gate.release();
    let paused = handle.await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    assert_eq!(probe.calls(), 1);

    // A paused run, or a finished one, keeps its id: start may not reuse it.
    let exists = |r: Result<_, EngineError>| matches!(r, Err(EngineError::RunExists { id: ref i }) if *i == id);
    assert!(exists(engine.run(spec("again")).await.map(|_| ())));
    let done = engine.resume_with_input(&id, "no").await.expect("resume");
    assert_eq!(done.status(), RunStatus::Completed, "{:?}", done.failure());
    assert!(exists(engine.run(spec("again")).await.map(|_| ())));
    assert!(exists(engine.start(spec("again")).await.map(|_| ())));
    assert_eq!(done.goal(), "first");
    assert_eq!(
        engine.list_runs().await.expect("list"),
        std::slice::from_ref(&id)
    );
}

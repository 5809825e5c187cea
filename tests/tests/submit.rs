//! `Engine::submit`: a run recorded without being driven — its first entry, its policy and
//! its snapshot on the stores — which another engine on the same stores resumes and drives
//! to its end, as after a restart; an id taken is refused. (With filesystem stores the
//! submitting engine keeps the ledger file's write lock while it lives, as after any run it
//! wrote: here it is dropped first, as a submitting process that exits.)

mod support;

use rein::ledger::EntryKind;
use rein::{
    Annotations, Decision, Engine, EngineError, RunSpec, RunStatus, ScriptStep, ScriptedPlanner,
    State, json,
};
use support::{echo, walk_to};

fn engine(dir: &std::path::Path) -> (Engine, support::Probe) {
    let (tool, probe) = echo("write", Annotations::side_effecting());
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(State::Act, Decision::call_tool("write", json!({}), "write")),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("written", json!("ok"))),
    ]);
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .tool(tool)
        .budget("tool_calls", 3)
        .filesystem(dir)
        .build()
        .unwrap();
    (engine, probe)
}

#[tokio::test]
async fn a_submitted_run_is_recorded_undriven_and_another_engine_drives_it() {
    let dir = tempfile::tempdir().unwrap();
    let (front, front_calls) = engine(dir.path());
    let id = front.submit("write once").await.unwrap();

    let run = front.load_run(&id).await.unwrap();
    assert_eq!(
        (run.status(), run.state()),
        (RunStatus::Running, State::Intake)
    );
    let ledger = front.ledger(&id).await.unwrap();
    assert_eq!(ledger.len(), 1, "only run_started: nothing was driven");
    assert!(matches!(
        ledger.entries()[0].event(),
        EntryKind::RunStarted { .. }
    ));

    drop(front);
    let (worker, worker_calls) = engine(dir.path());
    let done = worker.resume(&id).await.unwrap();
    assert_eq!(done.status(), RunStatus::Completed);
    assert_eq!((front_calls.calls(), worker_calls.calls()), (0, 1));
    worker.ledger(&id).await.unwrap().verify().unwrap();

    let taken = worker
        .submit(RunSpec::new("again").with_id(id.clone()))
        .await;
    assert!(
        matches!(taken, Err(EngineError::RunExists { .. })),
        "{taken:?}"
    );
}

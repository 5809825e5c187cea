//! The hooks asked at a point share one payload: it is built once per point, and every
//! closure hook asked there gets the same one (an `Arc`), never a copy of its own.

mod support;

use std::sync::{Arc, Mutex};

use rein::hook::{HookPayload, HookPoint, HookSpec, HookVerdict};
use rein::{Annotations, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, json};
use support::echo;

/// What one hook was shown, in order.
type Seen = Arc<Mutex<Vec<Arc<HookPayload>>>>;

fn keeping(name: &str, seen: &Seen) -> HookSpec {
    let seen = Arc::clone(seen);
    HookSpec::from_fn(name, HookPoint::ALL, move |payload| {
        seen.lock().expect("not poisoned").push(payload);
        async { HookVerdict::Allow }
    })
}

#[tokio::test]
async fn every_hook_at_a_point_gets_the_same_payload() {
    let (look, _) = echo("look", Annotations::read_only());
    let planner = ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("look", json!({"q": 1}), "look"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ]);
    let (first, second) = (Seen::default(), Seen::default());
    let engine = Engine::builder()
        .tool(look)
        .planner(planner)
        .hook(keeping("first", &first))
        .hook(keeping("second", &second))
        .build()
        .expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());

    let (first, second) = (first.lock().unwrap(), second.lock().unwrap());
    let points: Vec<HookPoint> = first.iter().map(|p| p.point).collect();
    for point in [
        HookPoint::RunStart,
        HookPoint::BeforeModel,
        HookPoint::AfterModel,
        HookPoint::BeforeTool,
        HookPoint::AfterTool,
        HookPoint::RunEnd,
    ] {
        assert!(points.contains(&point), "{point} not asked: {points:?}");
    }
    assert_eq!(first.len(), second.len());
    for (a, b) in first.iter().zip(second.iter()) {
        assert!(Arc::ptr_eq(a, b), "{} was copied per hook", a.point);
    }
    // The tool points carry the call.
    let before_tool = first.iter().find(|p| p.point == HookPoint::BeforeTool);
    assert_eq!(
        before_tool.and_then(|p| p.input.clone()),
        Some(json!({"q": 1}))
    );
}

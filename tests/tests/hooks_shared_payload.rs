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

/// A run that calls `look` once with `{"q": 1}`, then finishes.
fn look_once() -> ScriptedPlanner {
    ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("look", json!({"q": 1}), "look"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ])
}

#[tokio::test]
async fn every_hook_at_a_point_gets_the_same_payload() {
    let (look, _) = echo("look", Annotations::read_only());
    let planner = look_once();
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
        before_tool.and_then(|p| p.input.as_deref().cloned()),
        Some(json!({"q": 1}))
    );
    // A payload a hook kept is never reused for a later point.
    let end = first.last().expect("asked");
    assert_eq!(end.point, HookPoint::RunEnd);
    assert_eq!(end.status, Some(RunStatus::Completed));
    assert!(end.tool.is_none() && end.input.is_none());
}

/// What a check saw at one point, taken while it was asked.
#[derive(Debug, PartialEq)]
struct Sight {
    point: HookPoint,
    step: u32,
    tool: Option<String>,
    input: Option<rein::Value>,
    output: Option<rein::Value>,
    decided: bool,
    used_tool_calls: Option<u64>,
}

#[tokio::test]
async fn a_payload_reused_point_after_point_shows_each_point_only_its_own_fields() {
    let (look, _) = echo("look", Annotations::read_only());
    let planner = look_once();
    let seen: Arc<Mutex<Vec<Sight>>> = Arc::default();
    let log = Arc::clone(&seen);
    let engine = Engine::builder()
        .tool(look)
        .planner(planner)
        .hook(HookSpec::from_check("watch", HookPoint::ALL, move |p| {
            log.lock().expect("not poisoned").push(Sight {
                point: p.point,
                step: p.step,
                tool: p.tool.as_ref().map(|t| t.as_str().to_owned()),
                input: p.input.as_deref().cloned(),
                output: p.output.clone(),
                decided: p.decision.is_some(),
                used_tool_calls: p.used.get(&rein::run::BudgetName::TOOL_CALLS).copied(),
            });
            HookVerdict::Allow
        }))
        .build()
        .expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());

    let seen = seen.lock().unwrap();
    let at = |point: HookPoint| seen.iter().filter(move |s| s.point == point);
    // The tool points carry the call; no other point carries anything of it.
    let before = at(HookPoint::BeforeTool)
        .next()
        .expect("asked before the call");
    assert_eq!(before.tool.as_deref(), Some("look"));
    assert_eq!(before.input, Some(json!({"q": 1})));
    let after = at(HookPoint::AfterTool)
        .next()
        .expect("asked after the call");
    assert_eq!(after.input, Some(json!({"q": 1})));
    assert!(after.output.is_some(), "{after:?}");
    assert_eq!(after.used_tool_calls, Some(1));
    for sight in seen
        .iter()
        .filter(|s| !matches!(s.point, HookPoint::BeforeTool | HookPoint::AfterTool))
    {
        assert!(
            sight.tool.is_none() && sight.input.is_none() && sight.output.is_none(),
            "{sight:?} kept a field of an earlier point"
        );
        assert_eq!(
            sight.decided,
            sight.point == HookPoint::AfterModel,
            "{sight:?}"
        );
    }
    // The budgets used grow as the run goes.
    let model_points: Vec<(u32, Option<u64>)> = at(HookPoint::BeforeModel)
        .map(|s| (s.step, s.used_tool_calls))
        .collect();
    assert_eq!(
        model_points,
        [(0, None), (1, None), (2, Some(1)), (3, Some(1))]
    );
}

#[tokio::test]
async fn a_check_that_panics_before_a_call_denies_it_and_says_so() {
    let (look, calls) = echo("look", Annotations::read_only());
    let planner = look_once();
    let engine = Engine::builder()
        .tool(look)
        .planner(planner)
        .hook(HookSpec::from_check(
            "broken",
            [HookPoint::BeforeTool],
            |_| panic!("a bug in the check"),
        ))
        .build()
        .expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(calls.calls(), 0, "a call went out past a panicking check");
    let ledger = engine.ledger(run.id()).await.expect("a ledger");
    let verdicts: Vec<String> = ledger
        .entries()
        .iter()
        .filter(|e| matches!(e.event(), rein::ledger::EntryKind::HookVerdicts { .. }))
        .map(|e| String::from_utf8_lossy(e.json_line()).into_owned())
        .collect();
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert!(
        verdicts[0].contains("it panicked: a bug in the check"),
        "{}",
        verdicts[0]
    );
}

/// Which tool each hook was asked about, at which point, in order.
type Asked = Arc<Mutex<Vec<(HookPoint, String)>>>;

fn note(asked: &Asked, payload: &HookPayload) {
    let tool = payload.tool.as_ref().map(|t| t.as_str().to_owned());
    asked
        .lock()
        .expect("not poisoned")
        .push((payload.point, tool.unwrap_or_default()));
}

#[tokio::test]
async fn a_hook_asked_about_some_tools_sees_only_their_calls_next_to_hooks_that_wait() {
    let (look, _) = echo("look", Annotations::read_only());
    let (read, _) = echo("fs.read", Annotations::read_only());
    let planner = ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("look", json!({"q": 1}), "a"),
        ),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("fs.read", json!({"q": 2}), "b"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ]);
    let (files, waits, every) = (Asked::default(), Asked::default(), Asked::default());
    let tool_points = [HookPoint::BeforeTool, HookPoint::AfterTool];
    let seen = Arc::clone(&files);
    let files_only = HookSpec::from_check("files", tool_points, move |p| {
        note(&seen, p);
        HookVerdict::Allow
    })
    .tools("fs.*".parse().expect("a glob"));
    // Asked through a future, about `look` only: the points about `fs.read` are still
    // answered at once by the checks.
    let seen = Arc::clone(&waits);
    let look_only = HookSpec::from_fn("waits", tool_points, move |p| {
        note(&seen, &p);
        async { HookVerdict::Allow }
    })
    .tools("lo?k".parse().expect("a glob"));
    let seen = Arc::clone(&every);
    let every_tool = HookSpec::from_check("every", [HookPoint::BeforeTool], move |p| {
        note(&seen, p);
        HookVerdict::Allow
    });
    let engine = Engine::builder()
        .tool(look)
        .tool(read)
        .planner(planner)
        .hook(files_only)
        .hook(look_only)
        .hook(every_tool)
        .build()
        .expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());

    let asked = |asked: &Asked| asked.lock().expect("not poisoned").clone();
    let at = |point, tool: &str| (point, tool.to_owned());
    assert_eq!(
        asked(&files),
        [
            at(HookPoint::BeforeTool, "fs.read"),
            at(HookPoint::AfterTool, "fs.read")
        ]
    );
    assert_eq!(
        asked(&waits),
        [
            at(HookPoint::BeforeTool, "look"),
            at(HookPoint::AfterTool, "look")
        ]
    );
    assert_eq!(
        asked(&every),
        [
            at(HookPoint::BeforeTool, "look"),
            at(HookPoint::BeforeTool, "fs.read")
        ]
    );
}

/// An array nested `levels` deep, built (and taken apart by the engine) without recursion.
fn nested(levels: usize) -> rein::Value {
    (0..levels).fold(json!(0), |inner, _| rein::Value::Array(vec![inner]))
}

#[tokio::test]
async fn a_decision_too_deep_to_record_is_refused_before_the_after_model_hooks_see_it() {
    let (look, calls) = echo("look", Annotations::read_only());
    // Far deeper than the engine records; copying it for a hook would recurse once a level.
    let planner = rein::planner::MockPlanner::new(|request| {
        Ok(match (request.step(), request.state()) {
            (0, _) => Decision::transition(State::Explore, "go"),
            (1, _) => {
                // Not `json!`, which would copy the value, once a level.
                let input =
                    rein::Value::Object([("q".to_owned(), nested(200_000))].into_iter().collect());
                Decision::call_tool("look", input, "deep")
            }
            (_, State::Explore) => Decision::transition(State::Decide, "enough"),
            _ => Decision::finish("done", json!(1)),
        })
    });
    let shown: Arc<Mutex<Vec<bool>>> = Arc::default();
    let log = Arc::clone(&shown);
    let engine = Engine::builder()
        .tool(look)
        .planner(planner)
        .hook(HookSpec::from_check(
            "watch",
            [HookPoint::AfterModel],
            move |p| {
                let call = matches!(p.decision, Some(Decision::CallTool { .. }));
                log.lock().expect("not poisoned").push(call);
                HookVerdict::Allow
            },
        ))
        .build()
        .expect("builds");
    let run = engine.run("deep").await.expect("runs");
    assert_eq!(calls.calls(), 0, "the deep call ran");
    let ledger = engine.ledger(run.id()).await.expect("a ledger");
    let refused = ledger
        .entries()
        .iter()
        .map(|e| String::from_utf8_lossy(e.json_line()).into_owned())
        .any(|line| line.contains("nested more than 100 levels deep"));
    assert!(refused, "{:?}", run.failure());
    // The hooks saw the decisions around it, never the deep call.
    let shown = shown.lock().expect("not poisoned");
    assert!(!shown.is_empty() && !shown.contains(&true), "{shown:?}");
}

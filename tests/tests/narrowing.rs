//! Narrowing a live run's policy (DESIGN.md §2): an explicit act, recorded in the ledger
//! before it takes effect, that may only make the run stricter, and that a restart keeps.

mod support;

use rein::ledger::{EntryKind, Violation};
use rein::planner::MockPlanner;
use rein::policy::{NarrowingError, PolicyNarrowing};
use rein::run::{BudgetName, FailureKind};
use rein::{Annotations, Decision, Engine, EngineError, RunStatus, State, ToolName, json};
use support::{count, echo, gated, violations};

fn name(tool: &str) -> ToolName {
    tool.parse().expect("a valid name")
}

/// Asks a human first (so the run pauses), then calls `slow` and `read` once each in
/// explore, then finishes.
fn planner() -> MockPlanner {
    MockPlanner::new(|request| {
        let done = |tool: &str| {
            request.evidence().iter().any(|e| {
                matches!(&e.kind, rein::run::EvidenceKind::ToolResult { tool: t, .. } if t.as_str() == tool)
            })
        };
        Ok(match request.state() {
            State::Intake if request.step() == 0 => {
                Decision::ask_human("go?", vec!["yes".to_owned()])
            }
            State::Intake => Decision::transition(State::Explore, "start"),
            State::Explore if !done("slow") => Decision::call_tool("slow", json!({}), "first"),
            State::Explore if !done("read") => Decision::call_tool("read", json!({}), "second"),
            State::Explore => Decision::transition(State::Decide, "seen"),
            _ => Decision::finish("done", json!("ok")),
        })
    })
}

#[tokio::test]
async fn a_live_run_is_narrowed_at_its_next_step_and_held_to_it() {
    let (slow, gate, _) = gated("slow", Annotations::read_only());
    let (read, read_probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(slow)
        .tool(read)
        .planner(planner())
        .budget("tool_calls", 10)
        .build()
        .expect("engine builds");
    let paused = engine.run("narrow").await.expect("run");
    let handle = engine
        .start_resume(paused.id(), Some("yes"))
        .await
        .expect("resume");
    gate.entered().await;
    let control = handle.control();
    let narrowed = tokio::spawn(async move {
        control
            .narrow(PolicyNarrowing::new("one call is enough").budget(BudgetName::TOOL_CALLS, 1))
            .await
    });
    gate.release();
    narrowed.await.expect("task").expect("narrowed");
    let run = handle.await.expect("run");
    // The second call needed a unit the narrowed budget no longer has.
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::BudgetExhausted)
    );
    assert_eq!(read_probe.calls(), 0);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(count(&ledger, "policy_narrowed"), 1);
    // The narrowing is on record before the refusal it caused.
    let kinds = support::kinds(&ledger);
    let at = kinds.iter().position(|k| *k == "policy_narrowed");
    let refused = kinds.iter().position(|k| *k == "budget_exhausted");
    assert!(at < refused, "{kinds:?}");
    assert_eq!(engine.load_run(run.id()).await.expect("load"), run);
}

#[tokio::test]
async fn a_widening_request_is_refused_naming_what_would_widen_and_records_nothing() {
    let (slow, _, _) = gated("slow", Annotations::read_only());
    let engine = Engine::builder()
        .tool(slow)
        .planner(planner())
        .budget("tool_calls", 10)
        .max_steps(30)
        .build()
        .expect("engine builds");
    let paused = engine.run("widen").await.expect("run");
    let before = engine.ledger(paused.id()).await.expect("ledger").len();
    let wider = [
        (
            PolicyNarrowing::new("more").budget(BudgetName::TOOL_CALLS, 11),
            NarrowingError::BudgetWouldRise {
                name: BudgetName::TOOL_CALLS,
                current: 10,
                requested: 11,
            },
        ),
        (
            PolicyNarrowing::new("longer").max_steps(31),
            NarrowingError::MaxStepsWouldRise {
                current: 30,
                requested: 31,
            },
        ),
        (
            PolicyNarrowing::new("typo").forbid(name("slwo")),
            NarrowingError::UnknownTool(name("slwo")),
        ),
    ];
    for (narrowing, expected) in wider {
        match engine.narrow(paused.id(), narrowing).await {
            Err(EngineError::Narrowing { source, .. }) => assert_eq!(source, expected),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(
        engine.ledger(paused.id()).await.expect("ledger").len(),
        before
    );
}

#[tokio::test]
async fn a_narrowed_policy_survives_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = || {
        let (slow, gate, _) = gated("slow", Annotations::read_only());
        gate.release();
        let (read, probe) = echo("read", Annotations::read_only());
        let engine = Engine::builder()
            .tool(slow)
            .tool(read)
            .planner(planner())
            .filesystem(dir.path())
            .build()
            .expect("engine builds");
        (engine, probe)
    };
    let (a, _) = engine();
    let paused = a.run("narrow, then restart").await.expect("run");
    let narrowed = a
        .narrow(
            paused.id(),
            PolicyNarrowing::new("no reading").forbid(name("read")),
        )
        .await
        .expect("narrowed");
    assert_eq!(narrowed.status(), RunStatus::Paused);
    drop(a);
    // A new process, configured as before: the run keeps its narrowed policy.
    let (b, read) = engine();
    let run = b
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(run.status(), RunStatus::Failed, "{:?}", run.failure());
    assert_eq!(read.calls(), 0);
    let ledger = b.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::IneligibleTool, false)]);
    let Some(EntryKind::PolicyNarrowed { reason, .. }) = ledger
        .entries()
        .iter()
        .map(rein::ledger::Entry::event)
        .find(|e| matches!(e, EntryKind::PolicyNarrowed { .. }))
    else {
        panic!("no policy_narrowed entry");
    };
    assert_eq!(reason, "no reading");
}

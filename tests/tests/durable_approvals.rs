//! Durable approvals: a call that needs approval pauses the run (the pending approval on
//! record, nothing held open), and a verdict given later — from another engine on the same
//! directory, after the first is gone — settles it. The verdict binds run, step, tool and
//! input hash; the timeout runs on the engine's clock across restarts; budgets and the
//! ledger go on unchanged.

mod support;

use std::path::Path;
use std::time::Duration;

use rein::clock::ManualClock;
use rein::ledger::EntryKind;
use rein::policy::{ApprovalMode, OnViolation};
use rein::run::{FailureKind, PendingApproval};
use rein::tool::Digest;
use rein::{
    Annotations, ApprovalPolicy, ApprovalResponse, Decision, Engine, EngineError, RunId, RunStatus,
    ScriptStep, ScriptedPlanner, State, Value, Verdict, json,
};
use support::{Probe, count, echo, entries, walk_to};

/// The clock every engine of a test starts at (milliseconds since the epoch).
const T0: u64 = 1_700_000_000_000;
/// The approval timeout of every test policy: one hour.
const TIMEOUT_MS: u64 = 3_600_000;

fn deploy(env: &str) -> Value {
    json!({ "env": env })
}

/// Walks to `act`, calls `deploy` once per input in `inputs` (a denial handed back lets the
/// planner propose the next), then validates and finishes.
fn script(inputs: &[&str]) -> ScriptedPlanner {
    let mut steps = walk_to(State::Act);
    for env in inputs {
        steps.push(ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", deploy(env), "ship it"),
        ));
    }
    steps.extend([
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("shipped", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

/// An engine on `dir` ("a process") whose clock reads `now`, under a durable approval
/// policy, with a fresh destructive `deploy` tool.
fn engine(dir: &Path, now: u64, inputs: &[&str], on_violation: OnViolation) -> (Engine, Probe) {
    let (tool, probe) = echo("deploy", Annotations::destructive());
    let engine = Engine::builder()
        .tool(tool)
        .planner(script(inputs))
        .approvals(
            ApprovalPolicy::default()
                .with_mode(ApprovalMode::Durable)
                .with_timeout(Duration::from_millis(TIMEOUT_MS)),
        )
        .on_violation(on_violation)
        .budget("tool_calls", 5)
        .clock(ManualClock::starting_at(now))
        .filesystem(dir)
        .build()
        .expect("engine builds");
    (engine, probe)
}

/// Starts a run that pauses for approval of `deploy` with `env`; returns its id and the
/// pending approval, the first engine dropped ("the process exited").
async fn paused(dir: &Path, env: &str, on_violation: OnViolation) -> (RunId, PendingApproval) {
    let (first, probe) = engine(dir, T0, &[env], on_violation);
    let run = first.run("ship").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused, "{:?}", run.failure());
    assert_eq!(probe.calls(), 0, "nothing runs before the verdict");
    let pending = run.pending_approval().expect("a pending approval").clone();
    assert_eq!(pending.tool.as_str(), "deploy");
    assert_eq!(pending.input_hash, Digest::of_json(&deploy(env)));
    assert_eq!(pending.requested_at.as_unix_millis(), T0);
    assert_eq!(pending.run, *run.id());
    assert!(
        run.waiting_for()
            .expect("paused")
            .contains("waiting for approval of `deploy`"),
    );
    let ledger = first.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    assert_eq!(count(&ledger, "approval_pending"), 1);
    assert_eq!(count(&ledger, "tool_call"), 0);
    (run.id().clone(), pending)
}

#[tokio::test]
async fn a_verdict_from_a_second_engine_runs_exactly_the_recorded_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (id, pending) = paused(dir.path(), "prod", OnViolation::FailRun).await;

    let (second, probe) = engine(dir.path(), T0 + 60_000, &["prod"], OnViolation::FailRun);
    let before = second.load_run(&id).await.expect("load");
    assert_eq!(
        second.pending_approval(&id).await.expect("look"),
        Some(pending.clone())
    );
    // Resuming without a verdict is refused, and writes nothing.
    let len = second.ledger(&id).await.expect("ledger").len();
    assert!(matches!(
        second.resume(&id).await,
        Err(EngineError::AwaitingApproval { .. })
    ));
    assert_eq!(second.ledger(&id).await.expect("ledger").len(), len);

    let verdict = ApprovalResponse::answer(&pending, Verdict::Granted, "alice", "ticket 42");
    let run = second.approve(&id, &verdict).await.expect("approve");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 1);

    let ledger = second.ledger(&id).await.expect("ledger");
    ledger.verify().expect("verifies");
    let granted = entries(&ledger, "approval_granted");
    assert!(matches!(
        granted[..],
        [e] if matches!(e.event(), EntryKind::ApprovalGranted { approver, reason, input_hash, .. }
            if approver == "alice" && reason == "ticket 42" && *input_hash == pending.input_hash)
    ));
    let calls = entries(&ledger, "tool_call");
    assert!(matches!(
        calls[..],
        [e] if matches!(e.event(), EntryKind::ToolCall { input, input_hash, .. }
            if **input == deploy("prod") && *input_hash == pending.input_hash)
    ));
    // The pause spent nothing: the budgets after it continue from where they were.
    assert_eq!(before.usage().used(&"tool_calls".parse().expect("name")), 0);
    assert_eq!(
        run.usage().used(&"steps".parse().expect("name")),
        before.usage().used(&"steps".parse().expect("name")) + 2
    );
    assert_eq!(run.usage().used(&"tool_calls".parse().expect("name")), 1);

    // Replay serves the recorded verdict and reaches the same end.
    let report = second.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());

    // A second verdict, and one for a run that does not exist, are typed errors.
    assert!(matches!(
        second.approve(&id, &verdict).await,
        Err(EngineError::RunFinished { .. })
    ));
    let nobody: RunId = "no-such-run".parse().expect("id");
    assert!(matches!(
        second.approve(&nobody, &verdict).await,
        Err(EngineError::RunNotFound { .. })
    ));
}

#[tokio::test]
async fn a_denial_fails_the_run_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (id, pending) = paused(dir.path(), "prod", OnViolation::FailRun).await;
    let (second, probe) = engine(dir.path(), T0 + 1, &["prod"], OnViolation::FailRun);
    let verdict = ApprovalResponse::answer(&pending, Verdict::Denied, "bob", "not on a friday");
    let run = second.approve(&id, &verdict).await.expect("approve");
    assert_eq!(run.status(), RunStatus::Failed);
    let failure = run.failure().expect("failure");
    assert_eq!(failure.kind, FailureKind::PolicyViolation);
    assert!(failure.message.contains("not on a friday"), "{failure:?}");
    assert_eq!(probe.calls(), 0);
    let ledger = second.ledger(&id).await.expect("ledger");
    ledger.verify().expect("verifies");
    assert_eq!(count(&ledger, "approval_denied"), 1);
    // A denied call is never charged: no attempt, no `tool_calls` unit.
    assert_eq!(count(&ledger, "budget_consumed"), 0);
    assert_eq!(count(&ledger, "tool_call"), 0);
}

#[tokio::test]
async fn an_approval_past_its_timeout_is_denied_when_the_run_is_next_touched() {
    // Touched by resume, after a restart: the clock says the hour is over.
    let dir = tempfile::tempdir().expect("tempdir");
    let (id, _) = paused(dir.path(), "prod", OnViolation::FailRun).await;
    let (early, _) = engine(dir.path(), T0 + TIMEOUT_MS, &["prod"], OnViolation::FailRun);
    assert!(matches!(
        early.resume(&id).await,
        Err(EngineError::AwaitingApproval { .. })
    ));
    drop(early);
    let (late, probe) = engine(
        dir.path(),
        T0 + TIMEOUT_MS + 1,
        &["prod"],
        OnViolation::FailRun,
    );
    let run = late.resume(&id).await.expect("resume");
    assert_eq!(run.status(), RunStatus::Failed);
    assert!(
        run.failure()
            .expect("failure")
            .message
            .contains("no verdict within 3600000 ms"),
        "{:?}",
        run.failure()
    );
    assert_eq!(probe.calls(), 0);
    let ledger = late.ledger(&id).await.expect("ledger");
    ledger.verify().expect("verifies");
    assert!(matches!(
        entries(&ledger, "approval_denied")[..],
        [e] if matches!(e.event(), EntryKind::ApprovalDenied { approver, .. } if approver == "engine")
    ));

    // Touched by a verdict that comes too late: denied, the verdict not applied.
    let dir = tempfile::tempdir().expect("tempdir");
    let (id, pending) = paused(dir.path(), "prod", OnViolation::FailRun).await;
    let (late, probe) = engine(
        dir.path(),
        T0 + TIMEOUT_MS + 1,
        &["prod"],
        OnViolation::FailRun,
    );
    let verdict = ApprovalResponse::answer(&pending, Verdict::Granted, "alice", "sorry, lunch");
    assert!(matches!(
        late.approve(&id, &verdict).await,
        Err(EngineError::ApprovalExpired { .. })
    ));
    let run = late.load_run(&id).await.expect("load");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(probe.calls(), 0);
    late.ledger(&id)
        .await
        .expect("ledger")
        .verify()
        .expect("verifies");

    // Touched by a look at its status.
    let dir = tempfile::tempdir().expect("tempdir");
    let (id, _) = paused(dir.path(), "prod", OnViolation::FailRun).await;
    let (late, _) = engine(
        dir.path(),
        T0 + TIMEOUT_MS + 1,
        &["prod"],
        OnViolation::FailRun,
    );
    assert_eq!(late.pending_approval(&id).await.expect("look"), None);
    assert_eq!(
        late.load_run(&id).await.expect("load").status(),
        RunStatus::Failed
    );
}

#[tokio::test]
async fn a_verdict_on_an_input_the_planner_since_changed_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hand_back = OnViolation::HandBack { limit: 3 };
    let inputs = ["prod", "staging"];
    let (first, _) = engine(dir.path(), T0, &inputs, hand_back);
    let run = first.run("ship").await.expect("run");
    let stale = run.pending_approval().expect("pending").clone();
    drop(first);

    // The first approval times out; the planner is told and proposes another input.
    let (second, _) = engine(dir.path(), T0 + TIMEOUT_MS + 1, &inputs, hand_back);
    let run = second.resume(run.id()).await.expect("resume");
    assert_eq!(run.status(), RunStatus::Paused, "{:?}", run.failure());
    let current = run.pending_approval().expect("pending").clone();
    assert_eq!(current.input_hash, Digest::of_json(&deploy("staging")));
    assert_ne!(current.step, stale.step);
    drop(second);

    // A grant given for the first call does not carry over to the second: refused, and
    // nothing recorded.
    let (third, probe) = engine(dir.path(), T0 + TIMEOUT_MS + 2, &inputs, hand_back);
    let len = third.ledger(run.id()).await.expect("ledger").len();
    let old = ApprovalResponse::answer(&stale, Verdict::Granted, "alice", "for prod");
    assert!(matches!(
        third.approve(run.id(), &old).await,
        Err(EngineError::ApprovalMismatch { .. })
    ));
    assert_eq!(third.ledger(run.id()).await.expect("ledger").len(), len);
    assert_eq!(probe.calls(), 0);

    let new = ApprovalResponse::answer(&current, Verdict::Granted, "alice", "staging is fine");
    let done = third.approve(run.id(), &new).await.expect("approve");
    assert_eq!(done.status(), RunStatus::Completed, "{:?}", done.failure());
    assert_eq!(probe.calls(), 1);
    let ledger = third.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    assert_eq!(count(&ledger, "approval_pending"), 2);
    assert!(matches!(
        entries(&ledger, "tool_call")[..],
        [e] if matches!(e.event(), EntryKind::ToolCall { input, .. } if **input == deploy("staging"))
    ));
}

#[tokio::test]
async fn a_run_that_waits_for_no_approval_takes_no_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (tool, _) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(tool)
        .planner(ScriptedPlanner::new([ScriptStep::expect(
            State::Intake,
            Decision::ask_human("go on?", ["yes"]),
        )]))
        .approvals(ApprovalPolicy::default().with_mode(ApprovalMode::Durable))
        .filesystem(dir.path())
        .build()
        .expect("engine builds");
    let run = engine.run("ask").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    assert_eq!(engine.pending_approval(run.id()).await.expect("look"), None);
    let pending = PendingApproval {
        run: run.id().clone(),
        step: 1,
        tool: "read".parse().expect("name"),
        input_hash: Digest::of_json(&json!({})),
        risk: rein::RiskLevel::Low,
        reason: "made up".into(),
        requested_at: rein::run::Timestamp::from_unix_millis(0),
    };
    let verdict = ApprovalResponse::answer(&pending, Verdict::Granted, "alice", "why not");
    assert!(matches!(
        engine.approve(run.id(), &verdict).await,
        Err(EngineError::NotAwaitingApproval {
            status: RunStatus::Paused,
            ..
        })
    ));
}

/// A batch is one decision: under durable approvals it pauses at the first call that needs
/// a verdict, and after each verdict the whole batch is checked again, so nothing of it runs
/// until every call in it that needs approval is granted — then all of it runs, in order.
#[tokio::test]
async fn a_batch_waits_for_a_verdict_on_each_call_that_needs_one_then_runs_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let batch = || {
        let mut steps = walk_to(State::Act);
        steps.push(ScriptStep::expect(
            State::Act,
            Decision::call_tools(
                [
                    rein::planner::ProposedCall::new("deploy", deploy("eu"), "ship eu"),
                    rein::planner::ProposedCall::new("deploy", deploy("us"), "ship us"),
                ],
                "ship both",
            ),
        ));
        steps.extend([
            ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
            ScriptStep::expect(State::Validate, Decision::finish("shipped", json!("ok"))),
        ]);
        ScriptedPlanner::new(steps)
    };
    let engine = |now: u64| {
        let (tool, probe) = echo("deploy", Annotations::destructive());
        let engine = Engine::builder()
            .tool(tool)
            .planner(batch())
            .approvals(ApprovalPolicy::default().with_mode(ApprovalMode::Durable))
            .budget("tool_calls", 5)
            .clock(ManualClock::starting_at(now))
            .filesystem(dir.path())
            .build()
            .expect("engine builds");
        (engine, probe)
    };
    let (first, probe) = engine(T0);
    let run = first.run("ship").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused, "{:?}", run.failure());
    let id = run.id().clone();
    let eu = run.pending_approval().expect("pending").clone();
    assert_eq!(eu.input_hash, Digest::of_json(&deploy("eu")));
    drop(first);
    assert_eq!(probe.calls(), 0);

    let (second, probe) = engine(T0 + 1_000);
    let verdict = ApprovalResponse::answer(&eu, Verdict::Granted, "alice", "eu is fine");
    let run = second.approve(&id, &verdict).await.expect("approve eu");
    assert_eq!(run.status(), RunStatus::Paused, "the second call waits");
    let us = run.pending_approval().expect("pending").clone();
    assert_eq!(us.input_hash, Digest::of_json(&deploy("us")));
    assert_eq!(probe.calls(), 0, "nothing of the batch ran yet");

    let verdict = ApprovalResponse::answer(&us, Verdict::Granted, "bob", "us too");
    let run = second.approve(&id, &verdict).await.expect("approve us");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 2);
    let ledger = second.ledger(&id).await.expect("ledger");
    ledger.verify().expect("verifies");
    let inputs: Vec<Value> = entries(&ledger, "tool_call")
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolCall { input, .. } => Some(Value::clone(input)),
            _ => None,
        })
        .collect();
    assert_eq!(inputs, [deploy("eu"), deploy("us")], "in batch order");
    assert_eq!(run.usage().used(&"tool_calls".parse().expect("name")), 2);
}

//! Replay determinism: a recorded ledger fed back through the engine — decisions, tool outcomes,
//! approvals and answers from the ledger, no tool executed — reaches the same states, status
//! and result; and a replay that cannot follow the record says where it diverged.

mod support;

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rein::policy::{OnToolError, OnViolation};
use rein::resilience::{ResilienceConfig, RetryConfig};
use rein::{
    Annotations, Decision, Engine, EngineBuilder, FnTool, Run, RunStatus, ScriptStep,
    ScriptedPlanner, State, ToolError, Value, json,
};
use support::{Probe, StagingOnly, echo, failing, walk_to};

/// Fails transiently on every first attempt, succeeds on the retry.
fn flaky() -> FnTool {
    let calls = Arc::new(AtomicUsize::new(0));
    FnTool::builder("flaky")
        .annotations(Annotations::read_only())
        .handler(move |input: Value| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n.is_multiple_of(2) {
                    Err(ToolError::transient("try again"))
                } else {
                    Ok(json!({ "got": input }))
                }
            }
        })
        .build()
        .expect("a valid tool")
}

/// Every tool the scenarios use, with probes counting real executions.
fn builder(steps: Vec<ScriptStep>) -> (EngineBuilder, Vec<Probe>) {
    let (read, p1) = echo("read", Annotations::read_only());
    let (broken, p2) = failing(
        "broken",
        Annotations::read_only(),
        ToolError::failed("nope"),
    );
    let (deploy, p3) = echo("deploy", Annotations::destructive());
    let flaky = flaky();
    let builder = Engine::builder()
        .tool(read)
        .tool(broken)
        .tool(deploy)
        .tool(flaky)
        .approver(StagingOnly)
        .resilience(ResilienceConfig {
            retry: RetryConfig {
                max_attempts: NonZeroU32::new(3).expect("non-zero"),
                min_backoff: Duration::ZERO,
                max_backoff: Duration::ZERO,
                ..RetryConfig::default()
            },
            ..ResilienceConfig::default()
        })
        .planner(ScriptedPlanner::new(steps));
    (builder, vec![p1, p2, p3])
}

/// Runs `steps` on an engine `configure`d from the common builder (answering every question
/// with "go"), replays the ledger, and checks the replay matches, ran no tool, and ended as
/// `status`.
async fn check(
    steps: Vec<ScriptStep>,
    configure: fn(EngineBuilder) -> EngineBuilder,
    status: RunStatus,
) {
    let (builder, probes) = builder(steps);
    let engine = configure(builder).build().expect("engine builds");
    let mut run: Run = engine.run("replay me").await.expect("run");
    while run.status() == RunStatus::Paused {
        run = engine
            .resume_with_input(run.id(), "go")
            .await
            .expect("resume");
    }
    assert_eq!(run.status(), status, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let executed: Vec<usize> = probes.iter().map(Probe::calls).collect();

    let report = engine.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
    assert_eq!(report.divergence(), None);
    assert_eq!(report.recorded.status, status);
    assert_eq!(report.recorded.decisions, run.steps());
    assert_eq!(report.recorded.result, run.result().cloned());
    assert_eq!(report.recorded.failure, run.failure().cloned());
    let after: Vec<usize> = probes.iter().map(Probe::calls).collect();
    assert_eq!(after, executed, "replay runs no tool");
}

fn call(tool: &str, input: Value) -> Decision {
    Decision::call_tool(tool, input, "because")
}

fn same(builder: EngineBuilder) -> EngineBuilder {
    builder
}

fn forgiving(builder: EngineBuilder) -> EngineBuilder {
    builder
        .on_violation(OnViolation::HandBack { limit: 3 })
        .on_tool_error(OnToolError::HandBack)
}

#[tokio::test]
async fn a_completed_run_replays_to_the_same_states_and_result() {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, call("read", json!({"page": 1}))),
        ScriptStep::expect(State::Explore, call("flaky", json!({"page": 2}))),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("read", json!({"pages": 2}))),
    ]);
    check(steps, same, RunStatus::Completed).await;
}

#[tokio::test]
async fn a_failed_run_replays_to_the_same_failure() {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(State::Explore, call("rm", json!({}))));
    check(steps.clone(), same, RunStatus::Failed).await;
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        call("broken", json!({})),
    ));
    check(steps, same, RunStatus::Failed).await;
}

#[tokio::test]
async fn approvals_answers_and_handed_back_failures_replay() {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, call("broken", json!({}))),
        ScriptStep::expect(
            State::Explore,
            Decision::ask_human("Deploy?", ["go", "stop"]),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "go")),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "go")),
        ScriptStep::expect(State::Act, call("deploy", json!({"env": "staging"}))),
        ScriptStep::expect(State::Act, call("deploy", json!({"env": "prod"}))),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::ask_human("Done?", ["go"])),
        ScriptStep::expect(
            State::Validate,
            Decision::finish("deployed", json!("staging")),
        ),
    ]);
    check(steps, forgiving, RunStatus::Completed).await;
}

#[tokio::test]
async fn a_replay_that_cannot_follow_the_record_reports_where_it_diverged() {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, call("read", json!({}))),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ]);
    let (builder, _) = builder(steps);
    let engine = builder.build().expect("engine builds");
    let run = engine.run("diverge").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");

    // An engine without the `read` tool cannot make the recorded call.
    let stranger = Engine::builder()
        .planner(ScriptedPlanner::new([]))
        .build()
        .expect("engine builds");
    let report = stranger.replay(&ledger).await.expect("replay");
    assert!(!report.matches());
    assert_eq!(report.replayed.status, RunStatus::Failed);
    let divergence = report.divergence().expect("a divergence");
    assert!(divergence.contains("replayed failed"), "{divergence}");
}

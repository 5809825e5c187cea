//! Failures that must never take the engine down: a panicking tool, a hanging tool (timed out
//! by the resilience stack), an open circuit, a failing store, a panicking planner. Each is a
//! typed error on the run — recorded in its ledger — or on the call, and the engine goes on
//! serving runs.

mod support;

use std::num::NonZeroU32;
use std::time::Duration;

use rein::ledger::{Entry, EntryKind};
use rein::planner::MockPlanner;
use rein::resilience::{BreakerConfig, ResilienceConfig};
use rein::run::FailureKind;
use rein::store::LedgerStoreError;
use rein::{
    Annotations, Decision, Engine, EngineBuilder, EngineError, FnTool, Ledger, PlanRequest,
    Planner, PlannerError, RunStatus, ScriptStep, ScriptedPlanner, State, ToolError, Value, json,
};
use support::{echo, walk_to};

/// Explore, call `tool` once, then finish.
fn call_once(tool: &str) -> ScriptedPlanner {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, Decision::call_tool(tool, json!({}), "try")),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

fn tool_errors(ledger: &Ledger) -> Vec<ToolError> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolError { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect()
}

/// Follows the `broken` script for the run whose goal is "broken", `healthy` otherwise.
#[derive(Debug)]
struct ByGoal {
    broken: ScriptedPlanner,
    healthy: ScriptedPlanner,
}

impl Planner for ByGoal {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        if request.goal() == "broken" {
            self.broken.plan(request).await
        } else {
            self.healthy.plan(request).await
        }
    }
}

/// Runs `call_once(tool)` on `builder` and checks the run failed with the tool errors
/// `expected`; then checks the same engine still completes a run of a healthy tool.
async fn check(builder: EngineBuilder, tool: &str, expected: &[ToolError]) {
    let (healthy, _) = echo("healthy", Annotations::read_only());
    let engine = builder
        .tool(healthy)
        .planner(ByGoal {
            broken: call_once(tool),
            healthy: call_once("healthy"),
        })
        .build()
        .expect("engine builds");
    let run = engine.run("broken").await.expect("the engine survives");
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::ToolFailed));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("ledger verifies");
    assert_eq!(tool_errors(&ledger), expected);

    let run = engine.run("healthy").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
}

fn panicking() -> FnTool {
    FnTool::builder("boom")
        .annotations(Annotations::read_only())
        .handler(|input: Value| async move {
            if input.is_object() {
                panic!("kaboom");
            }
            Ok(input)
        })
        .build()
        .expect("a valid tool")
}

fn hanging(annotations: Annotations) -> FnTool {
    FnTool::builder("hang")
        .annotations(annotations)
        .handler(|_: Value| std::future::pending::<Result<Value, ToolError>>())
        .build()
        .expect("a valid tool")
}

#[tokio::test]
async fn a_panicking_tool_is_a_recorded_tool_error() {
    let builder = Engine::builder()
        .tool(panicking())
        .resilience(ResilienceConfig {
            retry: rein::resilience::RetryConfig::disabled(),
            ..ResilienceConfig::default()
        });
    let expected = ToolError::Panicked {
        message: "kaboom".into(),
    };
    check(builder, "boom", &[expected]).await;
}

#[tokio::test(start_paused = true)]
async fn a_hanging_tool_times_out_under_the_default_timeout() {
    let builder = Engine::builder()
        .tool(hanging(Annotations::side_effecting()))
        .resilience(ResilienceConfig {
            default_timeout: Duration::from_secs(5),
            ..ResilienceConfig::default()
        });
    // Side effects are not retried: one attempt, timed out. The tool runs in act only, so
    // call it from there.
    let mut steps = walk_to(State::Act);
    steps.push(ScriptStep::expect(
        State::Act,
        Decision::call_tool("hang", json!({}), "try"),
    ));
    let engine = builder
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("hang").await.expect("run");
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::ToolFailed));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(
        tool_errors(&ledger),
        [ToolError::TimedOut {
            after: Duration::from_secs(5)
        }]
    );
}

#[tokio::test(start_paused = true)]
async fn a_hanging_tool_times_out_under_its_annotated_timeout_and_retries_if_idempotent() {
    let builder = Engine::builder()
        .tool(hanging(
            Annotations::read_only().with_timeout(Duration::from_millis(250)),
        ))
        .resilience(ResilienceConfig {
            retry: rein::resilience::RetryConfig {
                max_attempts: NonZeroU32::new(2).expect("non-zero"),
                ..rein::resilience::RetryConfig::default()
            },
            ..ResilienceConfig::default()
        });
    let timed_out = ToolError::TimedOut {
        after: Duration::from_millis(250),
    };
    check(builder, "hang", &[timed_out.clone(), timed_out]).await;
}

#[tokio::test(start_paused = true)]
async fn an_open_circuit_refuses_calls_without_running_the_tool() {
    // Only signs of an unwell tool count: transient failures, timeouts, panics.
    let (flaky, probe) = support::failing(
        "flaky",
        Annotations::read_only(),
        ToolError::transient("upstream down"),
    );
    let engine = Engine::builder()
        .tool(flaky)
        .resilience(ResilienceConfig {
            retry: rein::resilience::RetryConfig::disabled(),
            breaker: BreakerConfig {
                consecutive_failures: NonZeroU32::new(2).expect("non-zero"),
                open_for: Duration::from_secs(60),
            },
            ..ResilienceConfig::default()
        })
        .planner(call_once("flaky"))
        .build()
        .expect("engine builds");
    for _ in 0..2 {
        engine.run("trip the breaker").await.expect("run");
    }
    assert_eq!(probe.calls(), 2);
    let run = engine.run("refused").await.expect("run");
    assert_eq!(probe.calls(), 2, "the open circuit did not call the tool");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let errors = tool_errors(&ledger);
    assert!(
        matches!(errors.as_slice(), [ToolError::CircuitOpen { .. }]),
        "{errors:?}"
    );
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::ToolFailed));
    // Refused before any attempt: nothing charged, no tool_call entry, nobody asked.
    assert_eq!(run.usage().used(&rein::run::BudgetName::TOOL_CALLS), 0);
    assert!(
        !ledger
            .entries()
            .iter()
            .any(|e| matches!(e.event(), rein::ledger::EntryKind::ToolCall { .. })),
        "no attempt was recorded"
    );

    // After the open period, the circuit lets a trial call through.
    tokio::time::advance(Duration::from_secs(61)).await;
    engine.run("trial").await.expect("run");
    assert_eq!(probe.calls(), 3);
}

/// A ledger store whose disk is full.
#[derive(Debug)]
struct DiskFull;

impl rein::store::LedgerStore for DiskFull {
    async fn append(&self, _: &Entry) -> Result<(), LedgerStoreError> {
        Err(LedgerStoreError::Io {
            context: "appending".into(),
            source: std::io::Error::other("no space left on device"),
        })
    }
    async fn sync(&self, _: &rein::RunId) -> Result<(), LedgerStoreError> {
        Ok(())
    }
    async fn load(
        &self,
        run_id: &rein::RunId,
    ) -> Result<rein::ledger::LoadedLedger, LedgerStoreError> {
        Err(LedgerStoreError::NotFound {
            run_id: run_id.clone(),
        })
    }
    async fn list(&self) -> Result<Vec<rein::RunId>, LedgerStoreError> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn a_failing_ledger_store_is_a_typed_error_and_no_tool_runs_unrecorded() {
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .ledger_store(DiskFull)
        .planner(call_once("read"))
        .build()
        .expect("engine builds");
    let refused = engine.run("no disk").await;
    assert!(
        matches!(
            refused,
            Err(EngineError::LedgerStore(LedgerStoreError::Io { .. }))
        ),
        "{refused:?}"
    );
    assert_eq!(probe.calls(), 0);

    // A store that fails mid-run — here, on the tool call entry — stops the run before the
    // call it could not record.
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .ledger_store(FailsOn(|e| matches!(e.event(), EntryKind::ToolCall { .. })))
        .planner(call_once("read"))
        .build()
        .expect("engine builds");
    let refused = engine.run("disk fills up").await;
    assert!(
        matches!(
            refused,
            Err(EngineError::LedgerStore(LedgerStoreError::Io { .. }))
        ),
        "{refused:?}"
    );
    assert_eq!(probe.calls(), 0, "no tool runs unrecorded");
}

/// A memory ledger store that fails to append the entries `fails` picks.
struct FailsOn(fn(&Entry) -> bool);

impl std::fmt::Debug for FailsOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FailsOn")
    }
}

impl rein::store::LedgerStore for FailsOn {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        if (self.0)(entry) {
            return DiskFull.append(entry).await;
        }
        Ok(())
    }
    async fn sync(&self, _: &rein::RunId) -> Result<(), LedgerStoreError> {
        Ok(())
    }
    async fn load(
        &self,
        run_id: &rein::RunId,
    ) -> Result<rein::ledger::LoadedLedger, LedgerStoreError> {
        DiskFull.load(run_id).await
    }
    async fn list(&self) -> Result<Vec<rein::RunId>, LedgerStoreError> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn a_panicking_planner_fails_the_run_not_the_engine() {
    let planner = MockPlanner::new(move |request| {
        if request.step() == 1 {
            panic!("planner bug");
        }
        Ok(Decision::transition(State::Explore, "go"))
    });
    let engine = Engine::builder()
        .planner(planner)
        .build()
        .expect("engine builds");
    let handle = engine.start("panic").await.expect("start");
    let run = handle.await.expect("the task survives the panic");
    assert_eq!(run.status(), RunStatus::Failed);
    let failure = run.failure().expect("a failure");
    assert_eq!(failure.kind, FailureKind::PlannerError);
    assert!(
        failure
            .message
            .contains("the planner panicked: planner bug"),
        "{failure:?}"
    );
    // Recorded like any other failure; the engine drives the next run as before.
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    assert_eq!(engine.load_run(run.id()).await.expect("rebuilt"), run);
    let second = engine.run("again").await.expect("the engine still runs");
    assert_eq!(
        second.failure().map(|f| f.kind),
        Some(FailureKind::PlannerError)
    );
}

#[tokio::test(start_paused = true)]
async fn every_retry_runs_on_the_input_the_call_was_proposed_with() {
    // A read-only tool that fails twice, transiently, then answers; it keeps every input it
    // is given. The retries' inputs come from their recorded `tool_call` entries, handed to
    // the stack (which keeps no copy of its own).
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let kept = std::sync::Arc::clone(&seen);
    let flaky = FnTool::builder("flaky")
        .annotations(Annotations::read_only())
        .handler(move |input: Value| {
            let kept = std::sync::Arc::clone(&kept);
            async move {
                let mut inputs = kept.lock().expect("not poisoned");
                inputs.push(input);
                if inputs.len() < 3 {
                    Err(ToolError::transient("upstream busy"))
                } else {
                    Ok(json!("ok"))
                }
            }
        })
        .build()
        .expect("a valid tool");
    let input = json!({"query": "rust", "page": 2, "tags": ["a", "b"]});
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("flaky", input.clone(), "try"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]);
    let engine = Engine::builder()
        .tool(flaky)
        .planner(ScriptedPlanner::new(steps))
        .resilience(ResilienceConfig {
            retry: rein::resilience::RetryConfig {
                max_attempts: NonZeroU32::new(3).expect("non-zero"),
                ..rein::resilience::RetryConfig::default()
            },
            ..ResilienceConfig::default()
        })
        .build()
        .expect("engine builds");
    let run = engine.run("retry").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed);
    assert_eq!(
        *seen.lock().expect("not poisoned"),
        vec![input.clone(), input.clone(), input.clone()]
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let recorded: Vec<(u32, &Value)> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolCall { attempt, input, .. } => Some((*attempt, &**input)),
            _ => None,
        })
        .collect();
    assert_eq!(recorded, vec![(1, &input), (2, &input), (3, &input)]);
}

//! Budget enforcement: a tool attempt is charged when attempted, the exact limit is reachable,
//! the next attempt is refused and recorded, retries are each charged, and no run ever goes
//! over its limit — also with 64 runs at once on a multi-thread runtime.

mod support;

use std::num::NonZeroU32;
use std::time::Duration;

use proptest::prelude::*;
use rein::ledger::{EntryKind, Violation};
use rein::policy::OnViolation;
use rein::resilience::{ResilienceConfig, RetryConfig};
use rein::run::{BudgetName, FailureKind};
use rein::{
    Annotations, Decision, Engine, Run, RunStatus, ScriptStep, ScriptedPlanner, State, ToolError,
    json,
};
use support::{Probe, count, echo, entries, failing, violations, walk_to};

/// A script that calls `read` `calls` times in explore, then finishes.
fn calls_then_finish(calls: usize) -> ScriptedPlanner {
    let mut steps = walk_to(State::Explore);
    steps.extend((0..calls).map(|i| {
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("read", json!({ "i": i }), "read"),
        )
    }));
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "enough"),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("done", json!(calls)),
    ));
    ScriptedPlanner::new(steps)
}

fn engine_with_limit(limit: u64, calls: usize) -> (Engine, Probe) {
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(calls_then_finish(calls))
        .budget("tool_calls", limit)
        .build()
        .expect("engine builds");
    (engine, probe)
}

fn used(run: &Run) -> u64 {
    run.usage().used(&BudgetName::TOOL_CALLS)
}

/// Runs `calls` calls against a limit of `limit` and checks what happened.
async fn check(limit: u64, calls: usize) {
    let (engine, probe) = engine_with_limit(limit, calls);
    let run = engine.run("budget").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let within = calls as u64 <= limit;
    let what = format!("{calls} calls, limit {limit}");
    assert_eq!(used(&run), (calls as u64).min(limit), "{what}");
    assert_eq!(probe.calls() as u64, (calls as u64).min(limit), "{what}");
    assert_eq!(
        count(&ledger, "budget_consumed") as u64,
        used(&run),
        "{what}"
    );
    if within {
        assert_eq!(run.status(), RunStatus::Completed, "{what}");
        assert_eq!(count(&ledger, "budget_exhausted"), 0, "{what}");
    } else {
        assert_eq!(
            run.failure().map(|f| f.kind),
            Some(FailureKind::BudgetExhausted),
            "{what}"
        );
        assert_eq!(violations(&ledger), [(Violation::BudgetExhausted, false)]);
        let exhausted = entries(&ledger, "budget_exhausted");
        assert_eq!(exhausted.len(), 1, "{what}");
        assert_eq!(
            exhausted[0].event(),
            &EntryKind::BudgetExhausted {
                name: BudgetName::TOOL_CALLS,
                limit,
                used: limit,
                requested: 1,
            },
            "{what}"
        );
    }
}

#[tokio::test]
async fn the_exact_limit_is_reachable_and_the_next_attempt_is_refused() {
    check(3, 3).await;
    check(3, 4).await;
    check(0, 1).await;
    check(1, 0).await;
}

#[tokio::test]
async fn usage_is_recorded_with_every_charge() {
    let (engine, _) = engine_with_limit(2, 2);
    let run = engine.run("budget").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let charges: Vec<_> = entries(&ledger, "budget_consumed")
        .into_iter()
        .map(|e| e.event().clone())
        .collect();
    let charge = |used| EntryKind::BudgetConsumed {
        name: BudgetName::TOOL_CALLS,
        amount: 1,
        used,
        limit: Some(2),
    };
    assert_eq!(charges, [charge(1), charge(2)]);
    // Each charge comes before the attempt it pays for.
    let kinds = support::kinds(&ledger);
    let first_charge = kinds.iter().position(|k| *k == "budget_consumed");
    let first_call = kinds.iter().position(|k| *k == "tool_call");
    assert!(first_charge < first_call, "{kinds:?}");
}

fn fast_retries(max_attempts: u32) -> ResilienceConfig {
    ResilienceConfig {
        retry: RetryConfig {
            max_attempts: NonZeroU32::new(max_attempts).expect("non-zero"),
            min_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            ..RetryConfig::default()
        },
        ..ResilienceConfig::default()
    }
}

/// An idempotent tool that always fails transiently, called once under `limit`.
async fn failing_idempotent(limit: u64) -> (Run, rein::Ledger, Probe) {
    let (flaky, probe) = failing(
        "flaky",
        Annotations::read_only(),
        ToolError::transient("upstream 503"),
    );
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool("flaky", json!({}), "try"),
    ));
    let engine = Engine::builder()
        .tool(flaky)
        .resilience(fast_retries(3))
        .budget("tool_calls", limit)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("flaky").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("ledger verifies");
    (run, ledger, probe)
}

#[tokio::test]
async fn every_attempt_of_a_failing_idempotent_tool_is_charged() {
    let (run, ledger, probe) = failing_idempotent(10).await;
    assert_eq!(probe.calls(), 3, "three attempts");
    assert_eq!(used(&run), 3, "each attempt charged");
    assert_eq!(count(&ledger, "budget_consumed"), 3);
    let calls: Vec<u32> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolCall { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(calls, [1, 2, 3]);
    let retries: Vec<bool> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolError { will_retry, .. } => Some(*will_retry),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [true, true, false]);
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::ToolFailed));
}

#[tokio::test]
async fn retries_stop_where_the_budget_ends() {
    let (run, ledger, probe) = failing_idempotent(2).await;
    assert_eq!(probe.calls(), 2, "the third attempt was not affordable");
    assert_eq!(used(&run), 2);
    assert_eq!(count(&ledger, "tool_call"), 2);
    assert_eq!(count(&ledger, "budget_exhausted"), 1);
    assert_eq!(run.status(), RunStatus::Failed);
}

#[tokio::test]
async fn the_steps_budget_and_max_steps_end_the_run_even_when_violations_are_handed_back() {
    for hand_back in [false, true] {
        let planner = || calls_then_finish(0); // three decisions
        let mut builder = Engine::builder().planner(planner()).budget("steps", 2);
        if hand_back {
            builder = builder.on_violation(OnViolation::HandBack { limit: 5 });
        }
        let engine = builder.build().expect("engine builds");
        let run = engine.run("steps").await.expect("run");
        assert_eq!(
            run.failure().map(|f| f.kind),
            Some(FailureKind::BudgetExhausted),
            "hand back: {hand_back}"
        );
        assert_eq!(run.steps(), 2);

        let mut builder = Engine::builder().planner(planner()).max_steps(2);
        if hand_back {
            builder = builder.on_violation(OnViolation::HandBack { limit: 5 });
        }
        let engine = builder.build().expect("engine builds");
        let run = engine.run("steps").await.expect("run");
        assert_eq!(
            run.failure().map(|f| f.kind),
            Some(FailureKind::MaxSteps),
            "hand back: {hand_back}"
        );
        assert_eq!(run.steps(), 2);
        let ledger = engine.ledger(run.id()).await.expect("ledger");
        assert_eq!(violations(&ledger), [(Violation::MaxSteps, false)]);
    }
}

#[tokio::test]
async fn an_exhausted_budget_closes_the_way_into_act() {
    let (read, _) = echo("read", Annotations::read_only());
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("read", json!({}), "look"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "think")),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "act")),
    ]);
    let engine = Engine::builder()
        .tool(read)
        .budget("tool_calls", 1)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("no budget left").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::TransitionRefused, false)]);
    let failure = run.failure().expect("failed");
    assert!(failure.message.contains("tool_calls"), "{failure:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_run_exceeds_its_budget_with_64_concurrent_runs() {
    const RUNS: usize = 64;
    const LIMIT: u64 = 5;
    let (engine, probe) = engine_with_limit(LIMIT, 7);
    let mut tasks = Vec::new();
    for i in 0..RUNS {
        let engine = engine.clone();
        tasks.push(tokio::spawn(
            async move { engine.run(format!("run {i}")).await },
        ));
    }
    for task in tasks {
        let run = task.await.expect("task").expect("run");
        assert_eq!(used(&run), LIMIT);
        assert_eq!(
            run.failure().map(|f| f.kind),
            Some(FailureKind::BudgetExhausted)
        );
        let ledger = engine.ledger(run.id()).await.expect("ledger");
        assert_eq!(count(&ledger, "budget_consumed") as u64, LIMIT);
        assert_eq!(count(&ledger, "tool_call") as u64, LIMIT);
    }
    assert_eq!(probe.calls(), RUNS * LIMIT as usize);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the limit and however many calls a planner attempts, usage never exceeds the
    /// limit, the limit is reached exactly when enough calls are attempted, and the run
    /// completes exactly when it stays within the limit.
    #[test]
    fn budgets_are_never_exceeded(limit in 0u64..6, calls in 0usize..9) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (run, executed) = runtime.block_on(async {
            let (engine, probe) = engine_with_limit(limit, calls);
            let run = engine.run("prop").await.expect("run");
            (run, probe.calls())
        });
        prop_assert!(used(&run) <= limit);
        prop_assert_eq!(used(&run), (calls as u64).min(limit));
        prop_assert_eq!(executed as u64, used(&run));
        prop_assert_eq!(run.status() == RunStatus::Completed, calls as u64 <= limit);
    }
}

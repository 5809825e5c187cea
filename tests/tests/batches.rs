//! Batches: a `call_tools` decision is checked whole before any call runs, its read-only
//! calls overlap (bounded), its other calls run alone and in order, the ledger holds the
//! calls in the batch's order whatever order they finished in, bad batches are typed and
//! ledgered rejections, no budget is ever exceeded, and a crash mid-batch settles each call
//! by the in-doubt rule on its own.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use rein::ledger::{Entry, EntryKind, Violation};
use rein::planner::ProposedCall;
use rein::policy::{InDoubtPolicy, OnToolError, OnViolation};
use rein::run::{BudgetName, EvidenceKind, FailureKind};
use rein::{
    Annotations, Decision, Engine, EngineBuilder, FnTool, RunStatus, ScriptStep, ScriptedPlanner,
    State, ToolError, Value, json,
};
use support::{
    CrashingLedgers, Probe, StagingOnly, assert_chain, count, echo, entries, violations, walk_to,
};

/// What the timed tools saw: how many ran at once, at most, and each start and end in order.
#[derive(Debug, Default)]
struct Log {
    running: AtomicUsize,
    max: AtomicUsize,
    events: Mutex<Vec<String>>,
}

impl Log {
    fn events(&self) -> Vec<String> {
        self.events.lock().expect("log").clone()
    }
    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

/// A tool that sleeps (on tokio's clock) `input["ms"]` milliseconds, logging its start and
/// end as `start NAME/I` and `end NAME/I` (I is `input["i"]`).
fn timed(name: &str, annotations: Annotations, log: &Arc<Log>) -> FnTool {
    let log = Arc::clone(log);
    let label = name.to_owned();
    FnTool::builder(name)
        .description("sleeps, then echoes")
        .annotations(annotations)
        .handler(move |input: Value| {
            let log = Arc::clone(&log);
            let label = format!("{label}/{}", input["i"]);
            async move {
                let now = log.running.fetch_add(1, Ordering::SeqCst) + 1;
                log.max.fetch_max(now, Ordering::SeqCst);
                log.events
                    .lock()
                    .expect("log")
                    .push(format!("start {label}"));
                let ms = input["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                log.events.lock().expect("log").push(format!("end {label}"));
                log.running.fetch_sub(1, Ordering::SeqCst);
                Ok(json!({ "done": input["i"] }))
            }
        })
        .build()
        .expect("a valid tool")
}

fn call(tool: &str, i: u64, ms: u64) -> ProposedCall {
    ProposedCall::new(tool, json!({ "i": i, "ms": ms }), "part of the batch")
}

/// A script that walks to `state`, proposes `batch`, then finishes from there.
fn script(state: State, batch: Decision) -> ScriptedPlanner {
    let mut steps = walk_to(state);
    steps.push(ScriptStep::expect(state, batch));
    let finish = match state {
        State::Act => vec![
            ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
            ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
        ],
        _ => vec![
            ScriptStep::expect(state, Decision::transition(State::Decide, "enough")),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
        ],
    };
    steps.extend(finish);
    ScriptedPlanner::new(steps)
}

/// The `i` of each entry of `kind` (`tool_call`, `tool_result`), in ledger order.
fn order(ledger: &rein::Ledger, kind: &str) -> Vec<u64> {
    entries(ledger, kind)
        .into_iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolCall { input, .. } => input["i"].as_u64(),
            EntryKind::ToolResult {
                output: rein::run::Payload::Inline(v),
                ..
            } => v["done"].as_u64(),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn eight_read_only_calls_take_about_one_calls_time() {
    for (concurrency, max, took) in [(8, 8, 50), (3, 3, 150), (1, 1, 400)] {
        let log = Arc::new(Log::default());
        let batch = Decision::call_tools((0..8).map(|i| call("read", i, 50)), "all at once");
        let engine = Engine::builder()
            .tool(timed("read", Annotations::read_only(), &log))
            .planner(script(State::Explore, batch))
            .batch_concurrency(concurrency)
            .build()
            .expect("engine builds");
        let start = tokio::time::Instant::now();
        let run = engine.run("batch").await.expect("run");
        let elapsed = start.elapsed();
        assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
        assert_eq!(log.max(), max, "concurrency {concurrency}");
        // On tokio's paused clock: 8 calls of 50 ms in waves of `concurrency`.
        assert_eq!(
            elapsed.as_millis() / 10 * 10,
            took,
            "concurrency {concurrency}: {elapsed:?}"
        );
        assert_eq!(run.usage().used(&BudgetName::TOOL_CALLS), 8);
    }
}

#[tokio::test(start_paused = true)]
async fn the_ledger_holds_the_batch_order_when_later_calls_finish_first() {
    let log = Arc::new(Log::default());
    // Call i sleeps (8 - i) * 10 ms: they finish in reverse order.
    let batch = Decision::call_tools((0..8).map(|i| call("read", i, (8 - i) * 10)), "reverse");
    let engine = Engine::builder()
        .tool(timed("read", Annotations::read_only(), &log))
        .planner(script(State::Explore, batch))
        .build()
        .expect("engine builds");
    let run = engine.run("order").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ends: Vec<_> = log
        .events()
        .into_iter()
        .filter(|e| e.starts_with("end"))
        .collect();
    assert_eq!(ends.first().map(String::as_str), Some("end read/7"));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    let expected: Vec<u64> = (0..8).collect();
    assert_eq!(order(&ledger, "tool_call"), expected);
    assert_eq!(order(&ledger, "tool_result"), expected);
    // All calls start before any result is recorded.
    let kinds = support::kinds(&ledger);
    let last_call = kinds
        .iter()
        .rposition(|k| *k == "tool_call")
        .expect("calls");
    let first_result = kinds
        .iter()
        .position(|k| *k == "tool_result")
        .expect("results");
    assert!(last_call < first_result, "{kinds:?}");
    // The evidence pairs each result with its own call's input.
    let pairs: Vec<(u64, u64)> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::ToolResult {
                input,
                output: rein::run::Payload::Inline(out),
                ..
            } => Some((input["i"].as_u64()?, out["done"].as_u64()?)),
            _ => None,
        })
        .collect();
    assert_eq!(pairs, (0..8).map(|i| (i, i)).collect::<Vec<_>>());

    // Replay reaches the same end, and the live ledger verifies: twice, the same.
    let report = engine.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
    let again = engine.replay(&ledger).await.expect("replay");
    assert_eq!(report, again);
}

#[tokio::test(start_paused = true)]
async fn a_mixed_batch_runs_its_writes_alone_and_in_order() {
    let log = Arc::new(Log::default());
    let batch = Decision::call_tools(
        [
            call("read", 0, 30),
            call("read", 1, 10),
            call("write", 2, 5),
            call("read", 3, 10),
            call("read", 4, 20),
            call("write", 5, 5),
            call("write", 6, 5),
        ],
        "mixed",
    );
    let engine = Engine::builder()
        .tool(timed("read", Annotations::read_only(), &log))
        .tool(timed("write", Annotations::side_effecting(), &log))
        .planner(script(State::Act, batch))
        .build()
        .expect("engine builds");
    let run = engine.run("mixed").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(
        log.events(),
        [
            "start read/0",
            "start read/1",
            "end read/1",
            "end read/0",
            "start write/2",
            "end write/2",
            "start read/3",
            "start read/4",
            "end read/3",
            "end read/4",
            "start write/5",
            "end write/5",
            "start write/6",
            "end write/6",
        ]
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(order(&ledger, "tool_result"), (0..7).collect::<Vec<_>>());
}

/// Runs a script that proposes `batch` in explore against an `echo` tool `read`; returns
/// the run, its ledger and how often the tool ran.
async fn rejected(
    batch: Decision,
    configure: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> (rein::Run, rein::Ledger, Probe) {
    let (read, probe) = echo("read", Annotations::read_only());
    let (write, write_probe) = echo("write", Annotations::side_effecting());
    let engine = configure(
        Engine::builder()
            .tool(read)
            .tool(write)
            .planner(script(State::Explore, batch)),
    )
    .build()
    .expect("engine builds");
    let run = engine.run("bad batch").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(write_probe.calls(), 0);
    assert_eq!(count(&ledger, "tool_call"), 0, "nothing ran");
    assert_eq!(count(&ledger, "budget_consumed"), 0, "nothing was charged");
    (run, ledger, probe)
}

fn reads(n: u64) -> Decision {
    Decision::call_tools(
        (0..n).map(|i| ProposedCall::new("read", json!({ "i": i }), "")),
        "",
    )
}

#[tokio::test]
async fn a_batch_over_the_budget_is_rejected_before_any_call() {
    let (run, ledger, probe) = rejected(reads(8), |b| b.budget("tool_calls", 5)).await;
    assert_eq!(probe.calls(), 0);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::BudgetExhausted)
    );
    assert_eq!(violations(&ledger), [(Violation::BudgetExhausted, false)]);
    assert_eq!(
        entries(&ledger, "budget_exhausted")[0].event(),
        &EntryKind::BudgetExhausted {
            name: BudgetName::TOOL_CALLS,
            limit: 5,
            used: 0,
            requested: 8,
        }
    );
}

/// The message of the run's one policy violation.
fn violation_message(ledger: &rein::Ledger) -> String {
    entries(ledger, "policy_violation")
        .iter()
        .find_map(|e| match e.event() {
            EntryKind::PolicyViolation { message, .. } => Some(message.clone()),
            _ => None,
        })
        .expect("a violation")
}

#[tokio::test]
async fn bad_batches_are_typed_ledgered_rejections() {
    let duplicate = Decision::call_tools(
        [
            ProposedCall::new("read", json!({"i": 1}), ""),
            ProposedCall::new("read", json!({"i": 2}), ""),
            ProposedCall::new("read", json!({"i": 1}), "again"),
        ],
        "",
    );
    let unknown = Decision::call_tools(
        [
            ProposedCall::new("read", json!({"i": 1}), ""),
            ProposedCall::new("nope", json!({}), ""),
        ],
        "",
    );
    // `write` is not read-only: not eligible in explore, so the read before it never runs.
    let ineligible = Decision::call_tools(
        [
            ProposedCall::new("read", json!({"i": 1}), ""),
            ProposedCall::new("write", json!({"i": 2}), ""),
        ],
        "",
    );
    for (batch, violation, needle) in [
        (reads(0), Violation::InvalidInput, "holds no calls"),
        (
            reads(10_000),
            Violation::InvalidInput,
            "holds 10000 calls, more than the limit of 64",
        ),
        (
            duplicate,
            Violation::InvalidInput,
            "calls 0 and 2 of the batch are the same call of `read`",
        ),
        (
            unknown,
            Violation::UnknownTool,
            "call 1 of the batch was refused, so no call of the batch ran",
        ),
        (ineligible, Violation::IneligibleTool, "call 1 of the batch"),
    ] {
        let (run, ledger, probe) = rejected(batch, |b| b).await;
        assert_eq!(probe.calls(), 0, "{needle}");
        assert_eq!(run.status(), RunStatus::Failed, "{needle}");
        assert_eq!(violations(&ledger), [(violation, false)], "{needle}");
        let message = violation_message(&ledger);
        assert!(message.contains(needle), "{message}");
    }
}

#[tokio::test]
async fn a_handed_back_bad_batch_lets_the_planner_correct_itself() {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, reads(0)),
        ScriptStep::expect(State::Explore, reads(2)),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(null))),
    ]);
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(ScriptedPlanner::new(steps))
        .on_violation(OnViolation::HandBack { limit: 3 })
        .build()
        .expect("engine builds");
    let run = engine.run("correct").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 2);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::InvalidInput, true)]);
}

#[tokio::test]
async fn a_denied_call_rejects_the_batch_whole() {
    let (deploy, probe) = echo("deploy", Annotations::destructive());
    let batch = Decision::call_tools(
        [
            ProposedCall::new("deploy", json!({"env": "staging"}), ""),
            ProposedCall::new("deploy", json!({"env": "prod"}), ""),
        ],
        "ship",
    );
    let engine = Engine::builder()
        .tool(deploy)
        .planner(script(State::Act, batch))
        .approver(StagingOnly)
        .build()
        .expect("engine builds");
    let run = engine.run("deploy").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(
        probe.calls(),
        0,
        "nothing ran: the approved call waits for the batch"
    );
    assert_eq!(count(&ledger, "approval_granted"), 1);
    assert_eq!(count(&ledger, "approval_denied"), 1);
    assert_eq!(count(&ledger, "tool_call"), 0);
    assert_eq!(violations(&ledger), [(Violation::ApprovalDenied, false)]);
    assert_eq!(run.status(), RunStatus::Failed);
}

#[tokio::test]
async fn one_failure_does_not_cancel_its_siblings_and_the_planner_sees_every_result() {
    let (read, probe) = support::counting("read", "", Annotations::read_only(), |input| {
        if input["i"] == 1 {
            Err(ToolError::failed("file not found"))
        } else {
            Ok(json!({ "done": input["i"] }))
        }
    });
    let engine = Engine::builder()
        .tool(read)
        .planner(script(State::Explore, reads(3)))
        .on_tool_error(OnToolError::HandBack)
        .build()
        .expect("engine builds");
    let run = engine.run("siblings").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 3);
    let seen: Vec<(u64, bool)> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::ToolResult { input, .. } => Some((input["i"].as_u64()?, true)),
            EvidenceKind::ToolFailure { input, .. } => Some((input["i"].as_u64()?, false)),
            _ => None,
        })
        .collect();
    assert_eq!(seen, [(0, true), (1, false), (2, true)]);
}

#[tokio::test]
async fn a_failed_call_of_a_batch_fails_the_run_in_the_words_of_a_single_call() {
    let (read, probe) = support::counting("read", "", Annotations::read_only(), |input| {
        if input["i"] == 1 {
            Err(ToolError::failed("file not found"))
        } else {
            Ok(json!({ "done": input["i"] }))
        }
    });
    let engine = Engine::builder()
        .tool(read)
        .planner(script(State::Explore, reads(3)))
        .on_tool_error(OnToolError::FailRun)
        .build()
        .expect("engine builds");
    let run = engine.run("one fails").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(probe.calls(), 3, "the failure cancels no sibling");
    let failure = run.failure().expect("a failure");
    assert_eq!(failure.kind, FailureKind::ToolFailed);
    // The tool's error said once, as for a single call, never "failed: tool failed:".
    assert_eq!(failure.message, "tool `read` failed: file not found");
}

#[tokio::test]
async fn an_abort_mid_group_records_every_call_cancelled_in_order() {
    let (read, gate, probe) = support::gated("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(script(State::Explore, reads(3)))
        .build()
        .expect("engine builds");
    let handle = engine.start("abort a batch").await.expect("start");
    gate.entered().await;
    handle.abort();
    let run = handle.await.expect("run");
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert!(probe.calls() >= 1);
    let kinds = support::kinds(&ledger);
    let first_call = kinds.iter().position(|k| *k == "tool_call").expect("calls");
    assert_eq!(
        kinds[first_call..],
        [
            "tool_call",
            "budget_consumed",
            "tool_call",
            "budget_consumed",
            "tool_call",
            "tool_error",
            "tool_error",
            "tool_error",
            "interrupt",
            "run_failed"
        ]
    );
    let cancelled = entries(&ledger, "tool_error")
        .iter()
        .filter(|e| {
            matches!(
                e.event(),
                EntryKind::ToolError {
                    error: ToolError::Cancelled,
                    ..
                }
            )
        })
        .count();
    assert_eq!(cancelled, 3);
    // The run, rebuilt from its ledger, holds all three failures as evidence.
    let failures = run
        .evidence()
        .iter()
        .filter(|e| matches!(e.kind, EvidenceKind::ToolFailure { .. }))
        .count();
    assert_eq!(failures, 3);
}

#[tokio::test(start_paused = true)]
async fn a_call_of_a_batch_is_attempted_once_even_when_it_could_be_retried() {
    let (read, probe) = support::failing(
        "read",
        Annotations::read_only(),
        ToolError::transient("connection reset"),
    );
    let engine = Engine::builder()
        .tool(read)
        .planner(script(State::Explore, reads(2)))
        .on_tool_error(OnToolError::HandBack)
        .build()
        .expect("engine builds");
    let start = tokio::time::Instant::now();
    let run = engine.run("no retries").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 2, "one attempt per call");
    assert_eq!(start.elapsed(), Duration::ZERO, "no backoff waited for");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(count(&ledger, "tool_call"), 2);
    assert_eq!(run.usage().used(&BudgetName::TOOL_CALLS), 2);
}

fn is_tool_call_of_1(entry: &Entry) -> bool {
    matches!(entry.event(), EntryKind::ToolCall { input, .. } if input["i"] == 1)
}

fn is_tool_call_of_3(entry: &Entry) -> bool {
    matches!(entry.event(), EntryKind::ToolCall { input, .. } if input["i"] == 3)
}

/// A batch of three reads (one group) then two writes, run until the simulated crash, then
/// resumed on a fresh engine; the probes of the reads and of the writes, and the run.
async fn crash_mid_batch(
    crash_after: fn(&Entry) -> bool,
) -> (Probe, Probe, rein::Run, rein::Ledger) {
    let batch = Decision::call_tools(
        (0..5).map(|i| {
            let tool = if i < 3 { "read" } else { "write" };
            ProposedCall::new(tool, json!({ "i": i }), "")
        }),
        "",
    );
    let build = |ledgers: CrashingLedgers| {
        let (read, reads) = echo("read", Annotations::read_only());
        let (write, writes) = echo("write", Annotations::side_effecting());
        let engine = Engine::builder()
            .tool(read)
            .tool(write)
            .planner(script(State::Act, batch.clone()))
            .ledger_store(ledgers)
            .in_doubt(InDoubtPolicy::RetryIdempotentOnly)
            .budget("tool_calls", 10)
            .build()
            .expect("engine builds");
        (engine, reads, writes)
    };
    let ledgers = CrashingLedgers::crashing_after(crash_after);
    let (first, first_reads, first_writes) = build(ledgers.clone());
    let run = first.run("crash").await.expect("run");
    assert!(ledgers.has_crashed());
    let before = first_reads.calls() + first_writes.calls();
    drop(first);
    let (second, reads, writes) = build(ledgers.restarted());
    let stored = second.ledger(run.id()).await.expect("ledger");
    let resumed = second.resume(run.id()).await.expect("resume");
    let ledger = second.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(
        &ledger.entries()[..stored.len()],
        stored.entries(),
        "nothing lost"
    );
    assert!(before > 0);
    (reads, writes, resumed, ledger)
}

#[tokio::test]
async fn a_crash_mid_group_retries_its_idempotent_calls_and_runs_the_rest() {
    let (reads, writes, run, ledger) = crash_mid_batch(is_tool_call_of_1).await;
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    // Calls 0 and 1 were in doubt (retried as attempt 2), call 2 never started.
    assert_eq!(reads.calls(), 3);
    assert_eq!(writes.calls(), 2);
    let calls: Vec<(u64, u32)> = entries(&ledger, "tool_call")
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolCall { input, attempt, .. } => Some((input["i"].as_u64()?, *attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [(0, 1), (1, 1), (0, 2), (1, 2), (2, 1), (3, 1), (4, 1)]
    );
    let results: Vec<u64> = entries(&ledger, "tool_result")
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolResult {
                output: rein::run::Payload::Inline(v),
                ..
            } => v["echo"]["i"].as_u64(),
            _ => None,
        })
        .collect();
    assert_eq!(results, [0, 1, 2, 3, 4], "the batch order");
    assert_eq!(
        run.usage().used(&BudgetName::TOOL_CALLS),
        count(&ledger, "tool_call") as u64,
        "every attempt is charged once"
    );
}

#[tokio::test]
async fn a_crash_during_a_write_fails_the_run_without_running_it_again() {
    let (reads, writes, run, ledger) = crash_mid_batch(is_tool_call_of_3).await;
    assert_eq!(reads.calls(), 0, "the reads were settled before the crash");
    assert_eq!(
        writes.calls(),
        0,
        "the write in doubt is not run again, nor the next one"
    );
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::InDoubtToolCall)
    );
    assert_eq!(count(&ledger, "tool_result"), 3);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// 64 runs at once, each proposing batches of random sizes against a random
    /// `tool_calls` limit: no run is ever charged past its limit, nor runs more calls.
    #[test]
    fn concurrent_runs_issuing_batches_never_exceed_a_budget(
        limit in 0u64..12,
        sizes in proptest::collection::vec(1u64..6, 1..4),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let mut steps = walk_to(State::Explore);
            let mut next = 0;
            for &size in &sizes {
                steps.push(ScriptStep::expect(
                    State::Explore,
                    Decision::call_tools(
                        (next..next + size).map(|i| ProposedCall::new("read", json!({ "i": i }), "")),
                        "",
                    ),
                ));
                next += size;
            }
            steps.push(ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")));
            steps.push(ScriptStep::expect(State::Decide, Decision::finish("done", json!(null))));
            let (read, probe) = echo("read", Annotations::read_only());
            let engine = Engine::builder()
                .tool(read)
                .planner(ScriptedPlanner::new(steps))
                .budget("tool_calls", limit)
                .on_violation(OnViolation::HandBack { limit: 10 })
                .batch_concurrency(4)
                .build()
                .expect("engine builds");
            let runs: Vec<_> = (0..64)
                .map(|_| {
                    let engine = engine.clone();
                    tokio::spawn(async move { engine.run("budget").await })
                })
                .collect();
            let mut charged = 0;
            for run in runs {
                let run = run.await.expect("task").expect("run");
                let used = run.usage().used(&BudgetName::TOOL_CALLS);
                assert!(used <= limit, "used {used} of {limit}");
                let ledger = engine.ledger(run.id()).await.expect("ledger");
                assert!(count(&ledger, "tool_call") as u64 <= limit);
                // A batch either runs whole or not at all.
                let expected: u64 = {
                    let mut left = limit;
                    sizes.iter().filter(|&&s| {
                        let fits = s <= left;
                        if fits { left -= s; }
                        fits
                    }).sum()
                };
                assert_eq!(used, expected, "sizes {sizes:?}, limit {limit}");
                charged += used;
            }
            assert_eq!(probe.calls() as u64, charged);
        });
    }
}

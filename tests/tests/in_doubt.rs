//! In-doubt tool calls: when the process dies after a tool call was recorded and before its
//! result was, resume retries an idempotent tool and fails the run with `InDoubtToolCall` for
//! any other — tools run at most once unless idempotent. The crash is simulated with a ledger
//! store that stops persisting right after the call entry.

mod support;

use rein::ledger::{Entry, EntryKind};
use rein::policy::InDoubtPolicy;
use rein::run::{BudgetName, FailureKind};
use rein::{Annotations, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, json};
use support::{CrashingLedgers, Probe, assert_chain, count, echo, walk_to};

fn is_tool_call(entry: &Entry) -> bool {
    matches!(entry.event(), EntryKind::ToolCall { .. })
}

/// Walks to act, calls `task` once, then validates and finishes.
fn script() -> ScriptedPlanner {
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("task", json!({"n": 1}), "do it"),
        ),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

fn engine(
    ledgers: CrashingLedgers,
    annotations: Option<Annotations>,
    policy: InDoubtPolicy,
) -> (Engine, Probe) {
    let mut builder = Engine::builder()
        .planner(script())
        .ledger_store(ledgers)
        .in_doubt(policy)
        .budget("tool_calls", 5);
    let mut probe = Probe::default();
    if let Some(annotations) = annotations {
        let (task, p) = echo("task", annotations);
        builder = builder.tool(task);
        probe = p;
    }
    (builder.build().expect("engine builds"), probe)
}

/// What resume must do with the call left in doubt.
#[derive(Debug)]
struct Expect {
    retried: bool,
    status: RunStatus,
}

/// Runs until the simulated crash, resumes on a fresh engine (with the tool annotated
/// `annotations`, or without it), and checks what happened to the call in doubt.
async fn check(annotations: Annotations, registered: bool, policy: InDoubtPolicy, expect: Expect) {
    let ledgers = CrashingLedgers::crashing_after(is_tool_call);
    let (first, first_probe) = engine(ledgers.clone(), Some(annotations), policy);
    // The first process goes on in memory, but nothing after the call entry reaches the store.
    let run = first.run("in doubt").await.expect("run");
    assert!(ledgers.has_crashed());
    assert_eq!(first_probe.calls(), 1);
    drop(first);

    let (second, second_probe) = engine(
        ledgers.restarted(),
        registered.then_some(annotations),
        policy,
    );
    let stored = second.ledger(run.id()).await.expect("ledger");
    assert!(
        is_tool_call(stored.entries().last().expect("entries")),
        "the ledger ends in doubt"
    );
    let resumed = second.resume(run.id()).await.expect("resume");
    let ledger = second.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(&ledger.entries()[..stored.len()], stored.entries());
    assert_eq!(
        resumed.status(),
        expect.status,
        "{expect:?}: {:?}",
        resumed.failure()
    );
    let attempts: Vec<u32> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolCall { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    if expect.retried {
        assert_eq!(second_probe.calls(), 1, "{expect:?}");
        assert_eq!(attempts, [1, 2], "the retry is attempt 2");
        assert_eq!(count(&ledger, "tool_result"), 1);
        assert_eq!(
            resumed.usage().used(&BudgetName::TOOL_CALLS),
            2,
            "both attempts are charged"
        );
    } else {
        assert_eq!(second_probe.calls(), 0, "{expect:?}");
        assert_eq!(attempts, [1]);
        let failure = resumed.failure().expect("failed");
        assert_eq!(failure.kind, FailureKind::InDoubtToolCall);
        assert!(failure.message.contains("task"), "{failure:?}");
    }
}

#[tokio::test]
async fn an_idempotent_call_in_doubt_is_retried() {
    let idempotent = Annotations::side_effecting().with_idempotent(true);
    let expect = Expect {
        retried: true,
        status: RunStatus::Completed,
    };
    check(idempotent, true, InDoubtPolicy::RetryIdempotentOnly, expect).await;
}

#[tokio::test]
async fn a_non_idempotent_call_in_doubt_fails_the_run() {
    let expect = Expect {
        retried: false,
        status: RunStatus::Failed,
    };
    check(
        Annotations::side_effecting(),
        true,
        InDoubtPolicy::RetryIdempotentOnly,
        expect,
    )
    .await;
}

#[tokio::test]
async fn retry_all_retries_a_non_idempotent_call_in_doubt() {
    let expect = Expect {
        retried: true,
        status: RunStatus::Completed,
    };
    check(
        Annotations::side_effecting(),
        true,
        InDoubtPolicy::RetryAll,
        expect,
    )
    .await;
}

#[tokio::test]
async fn a_call_in_doubt_whose_tool_is_gone_fails_the_run() {
    let idempotent = Annotations::side_effecting().with_idempotent(true);
    let expect = Expect {
        retried: false,
        status: RunStatus::Failed,
    };
    check(
        idempotent,
        false,
        InDoubtPolicy::RetryIdempotentOnly,
        expect,
    )
    .await;
}

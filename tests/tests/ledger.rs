//! Ledger completeness and integrity: every decision, transition, call, result, error,
//! approval, budget event, human input, violation, steering note and interrupt is recorded,
//! in a hash chain that verifies untouched and fails on any edit, drop, reorder or insertion.

mod support;

use std::collections::BTreeSet;

use proptest::prelude::*;
use rein::{
    Annotations, Decision, Engine, EngineError, Entry, EntryKind, Ledger, LedgerStoreError,
    OnToolError, OnViolation, Problem, RunStatus, ScriptStep, ScriptedPlanner, State, ToolError,
    Value, json,
};
use support::{StagingOnly, assert_chain, count, echo, failing, walk_to};

fn engine(script: Vec<ScriptStep>) -> Engine {
    let (read, _) = echo("read", Annotations::read_only());
    let (broken, _) = failing(
        "broken",
        Annotations::read_only(),
        ToolError::failed("nope"),
    );
    let (deploy, _) = echo("deploy", Annotations::destructive());
    Engine::builder()
        .tool(read)
        .tool(broken)
        .tool(deploy)
        .approver(StagingOnly)
        .budget("tool_calls", 3)
        .on_violation(OnViolation::HandBack { limit: 5 })
        .on_tool_error(OnToolError::HandBack)
        .planner(ScriptedPlanner::new(script))
        .build()
        .expect("engine builds")
}

/// A run that does a bit of everything: reads, fails a call, asks a human, is steered, gets
/// one approval and one denial, runs out of budget, and completes.
async fn eventful_ledger() -> Ledger {
    let call = |tool: &str, input: Value| Decision::call_tool(tool, input, "because");
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, call("read", json!({}))),
        ScriptStep::expect(State::Explore, call("broken", json!({}))),
        ScriptStep::expect(
            State::Explore,
            Decision::ask_human("Deploy?", ["go", "stop"]),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "go")),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "go")),
        ScriptStep::expect(State::Act, call("deploy", json!({"env": "staging"}))),
        ScriptStep::expect(State::Act, call("deploy", json!({"env": "prod"}))),
        ScriptStep::expect(State::Act, call("read", json!({"again": true}))),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
    ]);
    let engine = engine(steps);
    let paused = engine.run("everything").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    let handle = engine
        .start_resume(paused.id(), Some("go"))
        .await
        .expect("resume");
    handle.steer("prefer staging");
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    engine.ledger(run.id()).await.expect("ledger")
}

/// A run interrupted at once, resumed, then given up by its planner.
async fn interrupted_ledger() -> Ledger {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::fail("give up"),
    ));
    let engine = engine(steps);
    let handle = engine.start("interrupted").await.expect("start");
    handle.interrupt();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Interrupted);
    let run = engine.resume(run.id()).await.expect("resume");
    assert_eq!(run.status(), RunStatus::Failed);
    engine.ledger(run.id()).await.expect("ledger")
}

const EVERY_KIND: [&str; 21] = [
    "run_started",
    "run_paused",
    "run_resumed",
    "run_completed",
    "run_failed",
    "decision",
    "transition",
    "tool_call",
    "tool_result",
    "tool_error",
    "approval_requested",
    "approval_granted",
    "approval_denied",
    "budget_consumed",
    "budget_exhausted",
    "human_input_requested",
    "human_input_received",
    "policy_violation",
    "steering",
    "run_interrupted",
    "interrupt",
];

#[tokio::test]
async fn every_kind_of_event_is_recorded() {
    let ledgers = [eventful_ledger().await, interrupted_ledger().await];
    let mut seen = BTreeSet::new();
    for ledger in &ledgers {
        assert_chain(ledger);
        seen.extend(support::kinds(ledger));
    }
    let every: BTreeSet<&str> = EVERY_KIND.into_iter().collect();
    assert_eq!(seen, every);
}

#[tokio::test]
async fn each_decision_is_recorded_before_what_follows_from_it() {
    let ledger = eventful_ledger().await;
    let entries = ledger.entries();
    // Decisions are numbered 0, 1, 2, … in order.
    let steps: Vec<u32> = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::Decision { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, (0..steps.len() as u32).collect::<Vec<_>>());
    // Every transition, call, approval request and violation comes after a decision, and
    // every call is settled by a result or an error right after it.
    for (i, entry) in entries.iter().enumerate() {
        let name = entry.event().name();
        if matches!(
            name,
            "transition" | "tool_call" | "approval_requested" | "policy_violation"
        ) {
            assert!(
                entries[..i].iter().any(|e| e.event().name() == "decision"),
                "{name} at {i} follows a decision"
            );
        }
        if name == "tool_call" {
            let next = entries.get(i + 1).map(|e| e.event().name());
            assert!(
                matches!(next, Some("tool_result" | "tool_error")),
                "call at {i} is settled: {next:?}"
            );
        }
        if name == "approval_requested" {
            let next = entries.get(i + 1).map(|e| e.event().name());
            assert!(
                matches!(next, Some("approval_granted" | "approval_denied")),
                "request at {i} is answered: {next:?}"
            );
        }
    }
    // Each budget charge says how much has been used so far.
    let used: Vec<u64> = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::BudgetConsumed { used, .. } => Some(*used),
            _ => None,
        })
        .collect();
    assert_eq!(used, [1, 2, 3]);
    assert_eq!(count(&ledger, "budget_exhausted"), 1);
    // Every entry names the state the run was in when it was written. A terminal state is
    // entered by the run_completed / run_failed entry that follows the transition.
    let mut state = State::Intake;
    for entry in entries {
        assert_eq!(entry.state(), state, "entry {}", entry.seq());
        match entry.event() {
            EntryKind::Transition { to, .. } if !to.is_terminal() => state = *to,
            EntryKind::RunCompleted { .. } => state = State::Done,
            _ => {}
        }
    }
    assert_eq!(state, State::Done);
}

/// What a test does to a recorded ledger.
#[derive(Debug, Clone)]
enum Tamper {
    Nothing,
    Edit(usize),
    Drop(usize),
    Swap(usize, usize),
    Duplicate(usize),
}

fn apply(tamper: &Tamper, entries: &mut Vec<Entry>) {
    let n = entries.len();
    match *tamper {
        Tamper::Nothing => {}
        Tamper::Edit(i) => {
            let mut value = serde_json::to_value(&entries[i % n]).expect("json");
            value["at"] = json!(value["at"].as_u64().expect("at") + 1);
            entries[i % n] = serde_json::from_value(value).expect("an entry");
        }
        Tamper::Drop(i) => {
            entries.remove(i % n);
        }
        Tamper::Swap(i, j) => entries.swap(i % n, j % n),
        Tamper::Duplicate(i) => {
            let copy = entries[i % n].clone();
            entries.insert(i % n, copy);
        }
    }
}

fn tamper() -> impl Strategy<Value = Tamper> {
    prop_oneof![
        Just(Tamper::Nothing),
        any::<usize>().prop_map(Tamper::Edit),
        any::<usize>().prop_map(Tamper::Drop),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Tamper::Swap(i, j)),
        any::<usize>().prop_map(Tamper::Duplicate),
    ]
}

fn recorded() -> &'static Ledger {
    static LEDGER: std::sync::OnceLock<Ledger> = std::sync::OnceLock::new();
    LEDGER.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(eventful_ledger())
    })
}

proptest! {
    /// A ledger verifies if and only if nobody touched it — except that a chain alone cannot
    /// tell its last entries were cut off: a truncated ledger is a valid, shorter ledger.
    #[test]
    fn a_ledger_verifies_iff_untouched(tamper in tamper()) {
        let ledger = recorded();
        let mut entries = ledger.entries().to_vec();
        apply(&tamper, &mut entries);
        let untouched = entries == ledger.entries();
        let truncated = entries.len() < ledger.len() && ledger.entries().starts_with(&entries);
        let verified = Ledger::from_entries(ledger.run_id().clone(), entries);
        prop_assert_eq!(verified.is_ok(), untouched || truncated, "{:?}", tamper);
        if let (Tamper::Edit(i), Err(e)) = (&tamper, &verified) {
            prop_assert_eq!(e.seq, (i % ledger.len()) as u64 + 1);
            prop_assert_eq!(&e.problem, &Problem::Edited);
        }
    }
}

#[tokio::test]
async fn a_tampered_ledger_on_disk_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut steps = walk_to(State::Decide);
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::ask_human("Finish?", ["yes"]),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("done", json!(1)),
    ));
    let build = || {
        Engine::builder()
            .planner(ScriptedPlanner::new(steps.clone()))
            .filesystem(dir.path())
            .build()
            .expect("engine builds")
    };
    let engine = build();
    let run = engine.run("tamper").await.expect("run");
    drop(engine);

    let path = rein::FsStores::open(dir.path())
        .expect("stores")
        .ledgers()
        .ledger_path(run.id());
    let text = std::fs::read_to_string(&path).expect("ledger file");
    std::fs::write(&path, text.replacen("\"tamper\"", "\"tampered\"", 1)).expect("write");

    let engine = build();
    let refused = engine.ledger(run.id()).await;
    assert!(
        matches!(
            refused,
            Err(EngineError::LedgerStore(LedgerStoreError::Broken { .. }))
        ),
        "{refused:?}"
    );
    let refused = engine.resume_with_input(run.id(), "yes").await;
    assert!(
        matches!(
            refused,
            Err(EngineError::LedgerStore(LedgerStoreError::Broken { .. }))
        ),
        "{refused:?}"
    );
}

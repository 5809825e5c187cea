//! Golden vectors: the canonical encoding and the hash chain, pinned byte for byte.
//!
//! CHANGING ANY EXPECTED VALUE IN THIS FILE (or `golden/every_kind.jsonl`) BREAKS EVERY
//! LEDGER ALREADY STORED: their hashes would no longer verify. If one of these tests fails,
//! the encoding drifted (a renamed, reordered or retyped field; a serde attribute; a
//! dependency feature such as `serde_json`'s `preserve_order`): fix the code, not the vector.

use std::time::Duration;

use rein_ledger::{Entry, EntryKind, InterruptKind, Ledger, Violation};
use rein_run::{
    ArtifactLink, BudgetName, Cost, Currency, Decision, Digest, Failure, FailureKind, Money,
    Payload, PlannerCall, RunId, State, Timestamp, ToolError,
};
use serde_json::json;

fn run_id() -> RunId {
    "golden-run".parse().unwrap()
}

/// The first entry of a run, as the engine writes it.
fn first_entry() -> Ledger {
    let mut ledger = Ledger::new(run_id());
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_000),
        State::Intake,
        EntryKind::RunStarted {
            goal: "Say hello".into(),
            vars: serde_json::Map::from_iter([("name".to_owned(), json!("World"))]),
            // Written out of order on purpose: object keys are sorted in the encoding.
            policy: json!({"budgets": {"tool_calls": 10}, "approvals": {"tools": ["fs.write"]}, "max_steps": 20}).into(),
        },
    );
    ledger
}

/// A ledger holding one entry of every kind, with every kind of detail.
fn every_kind() -> Ledger {
    let tool = || "fs.write".parse().unwrap();
    let input = json!({"path": "notes.txt", "text": "héllo \"world\"\n", "mode": 0.5});
    let input_hash = Digest::of_json(&input);
    let mut ledger = first_entry();
    let mut at = 1_700_000_000_000;
    let mut add = |state, event| {
        at += 250;
        ledger.append(Timestamp::from_unix_millis(at), state, event);
    };
    add(
        State::Intake,
        EntryKind::Transition {
            from: State::Intake,
            to: State::Explore,
            reason: "start".into(),
        },
    );
    add(
        State::Explore,
        EntryKind::Decision {
            step: 1,
            decision: Decision::transition(State::Decide, "have it"),
        },
    );
    add(
        State::Decide,
        EntryKind::Decision {
            step: 2,
            decision: Decision::call_tool("fs.write", input.clone(), "save"),
        },
    );
    add(
        State::Act,
        EntryKind::ApprovalRequested {
            tool: tool(),
            input_hash,
            reason: "destructive".into(),
        },
    );
    add(
        State::Act,
        EntryKind::ApprovalGranted {
            tool: tool(),
            input_hash,
            approver: "alice".into(),
            reason: "ok".into(),
        },
    );
    add(
        State::Act,
        EntryKind::BudgetConsumed {
            name: BudgetName::TOOL_CALLS,
            amount: 1,
            used: 1,
            limit: Some(10),
        },
    );
    add(
        State::Act,
        EntryKind::ToolCall {
            tool: tool(),
            input: input.into(),
            input_hash,
            attempt: 1,
            idempotent: false,
        },
    );
    add(
        State::Act,
        EntryKind::ToolError {
            tool: tool(),
            attempt: 1,
            duration_ms: 1500,
            error: ToolError::TimedOut {
                after: Duration::from_millis(1500),
            },
            will_retry: true,
        },
    );
    add(
        State::Act,
        EntryKind::ToolResult {
            tool: tool(),
            attempt: 2,
            duration_ms: 12,
            cached: false,
            output: Payload::Inline(json!({"written": 14, "ratio": 1.25e-7, "neg": -3})),
        },
    );
    add(
        State::Act,
        EntryKind::ToolResult {
            tool: tool(),
            attempt: 1,
            duration_ms: 0,
            cached: true,
            output: Payload::Artifact(ArtifactLink {
                id: "ab".repeat(32),
                checksum: format!("sha256:{}", "ab".repeat(32)),
                size: 1_048_576,
                content_type: "application/json".into(),
            }),
        },
    );
    add(
        State::Act,
        EntryKind::ApprovalDenied {
            tool: tool(),
            input_hash,
            approver: "engine".into(),
            reason: "no approver configured".into(),
        },
    );
    add(
        State::Act,
        EntryKind::BudgetExhausted {
            name: BudgetName::TOOL_CALLS,
            limit: 10,
            used: 10,
            requested: 1,
        },
    );
    add(
        State::Act,
        EntryKind::PolicyViolation {
            violation: Violation::BudgetExhausted,
            message: "budget `tool_calls` exhausted".into(),
            handed_back: false,
        },
    );
    add(
        State::Act,
        EntryKind::RunInterrupted {
            reason: "interrupted through the run handle".into(),
        },
    );
    add(
        State::Act,
        EntryKind::HumanInputRequested {
            question: "Deploy?".into(),
            options: vec!["yes".into(), "no".into()],
        },
    );
    add(
        State::Act,
        EntryKind::RunPaused {
            question: "Deploy?".into(),
        },
    );
    add(
        State::Act,
        EntryKind::HumanInputReceived {
            answer: "yes".into(),
            by: None,
        },
    );
    add(
        State::Act,
        EntryKind::RunResumed {
            note: "answered".into(),
        },
    );
    add(
        State::Act,
        EntryKind::Steering {
            note: "prefer staging".into(),
        },
    );
    add(
        State::Act,
        EntryKind::Interrupt {
            kind: InterruptKind::Graceful,
        },
    );
    add(
        State::Act,
        EntryKind::Transition {
            from: State::Act,
            to: State::Validate,
            reason: "check".into(),
        },
    );
    add(
        State::Validate,
        EntryKind::RunCompleted {
            summary: "greeted".into(),
            result: json!({"status": "done"}),
        },
    );
    add(
        State::Validate,
        EntryKind::RunFailed {
            failure: Failure::new(FailureKind::Aborted, "aborted through the run handle"),
        },
    );
    add(
        State::Explore,
        EntryKind::PlannerCall {
            step: 3,
            call: PlannerCall {
                provider: "openai".into(),
                model: "gpt-x".into(),
                request_hash: Digest::of_bytes(b"{\"model\":\"gpt-x\"}"),
                input_tokens: 1200,
                output_tokens: 85,
                // Written before costs named their currency: a bare number.
                cost: Cost::Known(Money::from_micros(4_321, Currency::UNNAMED)),
                latency_ms: 950,
                finish_reason: Some("tool_calls".into()),
                // Added later, and left out of the entry when empty: this vector is the
                // entry every earlier version wrote.
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                reply: None,
            },
        },
    );
    ledger
}

#[test]
fn the_first_entry_encodes_and_hashes_as_pinned() {
    let ledger = first_entry();
    let entry = &ledger.entries()[0];
    assert_eq!(
        String::from_utf8(entry.canonical_bytes()).unwrap(),
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"intake","event":{"type":"run_started","goal":"Say hello","vars":{"name":"World"},"policy":{"approvals":{"tools":["fs.write"]},"budgets":{"tool_calls":10},"max_steps":20}},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
    );
    // Changing this literal breaks every stored ledger: fix the encoding instead.
    assert_eq!(
        entry.hash().to_string(),
        "8c88b5a01ea1d50a146bff621791f200bd3f461091f29598df0ad634bd78364f"
    );
    // By definition: SHA-256 over the previous hash's 32 raw bytes, then the canonical bytes.
    let mut hashed = Digest::ZERO.as_bytes().to_vec();
    hashed.extend(entry.canonical_bytes());
    assert_eq!(entry.hash(), Digest::of_bytes(&hashed));
}

#[test]
fn a_ledger_of_every_kind_encodes_as_the_stored_golden_file() {
    let ledger = every_kind();
    let written: String = ledger.entries().iter().map(Entry::to_json_line).collect();
    assert_eq!(
        written, GOLDEN,
        "the encoding drifted: this version would write different ledgers"
    );
    // Changing this literal breaks every stored ledger: fix the encoding instead.
    assert_eq!(
        ledger.last_hash().to_string(),
        "b9a2793700687567db1186bb3e02f327acea43d5d5d36688e8a7273cc4c2df1e"
    );
    let mut kinds: Vec<_> = ledger.entries().iter().map(|e| e.event().name()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), 22, "every kind is pinned: {kinds:?}");
}

#[test]
fn a_ledger_written_by_an_earlier_version_verifies() {
    let entries: Vec<Entry> = GOLDEN
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let ledger = Ledger::from_entries(run_id(), entries).unwrap();
    assert_eq!(ledger, every_kind());
}

/// 25 entries, written once by the code above and checked in (the 25th, `planner_call`,
/// appended when that kind was added: the first 24 are unchanged).
const GOLDEN: &str = include_str!("golden/every_kind.jsonl");

#[test]
fn a_trace_started_entry_encodes_its_traceparent_as_text_and_reads_back() {
    let mut ledger = first_entry();
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        .parse()
        .unwrap();
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_250),
        State::Intake,
        EntryKind::TraceStarted { traceparent },
    );
    let entry = &ledger.entries()[1];
    let bytes = String::from_utf8(entry.canonical_bytes()).unwrap();
    assert!(
        bytes.contains(r#""event":{"type":"trace_started","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}"#),
        "{bytes}"
    );
    ledger.verify().unwrap();
    let back: Entry = serde_json::from_str(&entry.to_json_line()).unwrap();
    assert_eq!(back.event(), entry.event());
    // A malformed context is no entry: it does not read back.
    let bad = entry
        .to_json_line()
        .replace("b7ad6b7169203331", "B7AD6B7169203331");
    assert!(serde_json::from_str::<Entry>(&bad).is_err());
}

//! `RunPath`: the stays a ledger tells, as `rein inspect` and the console draw them — a call
//! retried into one use, a final error named by its kind, a denial, a failure without a
//! transition, and the notes kept beside a stay.

use std::time::Duration;

use rein_ledger::{CallOutcome, EntryKind, Ledger, RunPath, Via};
use rein_run::{Digest, Failure, FailureKind, State, Timestamp, ToolError};
use serde_json::json;

#[test]
fn a_ledger_reads_as_stays_with_their_tools_and_notes() {
    let mut ledger = Ledger::new("path-run".parse().unwrap());
    let mut at = 0;
    let mut add = |state, event| {
        at += 1;
        ledger.append(Timestamp::from_unix_millis(at), state, event);
    };
    let tool = || "fs.write".parse().unwrap();
    let input = json!({"path": "a"});
    let input_hash = Digest::of_json(&input);
    add(
        State::Intake,
        EntryKind::Transition {
            from: State::Intake,
            to: State::Act,
            reason: "go".into(),
        },
    );
    for attempt in 1..=2 {
        add(
            State::Act,
            EntryKind::ToolCall {
                tool: tool(),
                input: input.clone().into(),
                input_hash,
                attempt,
                idempotent: true,
            },
        );
        add(
            State::Act,
            EntryKind::ToolError {
                tool: tool(),
                attempt,
                duration_ms: 5,
                error: ToolError::TimedOut {
                    after: Duration::from_millis(5),
                },
                will_retry: attempt == 1,
            },
        );
    }
    add(
        State::Act,
        EntryKind::ApprovalDenied {
            tool: tool(),
            input_hash,
            approver: "ops".into(),
            reason: "no".into(),
        },
    );
    add(
        State::Act,
        EntryKind::HumanInputRequested {
            question: "why?".into(),
            options: vec![],
        },
    );
    add(
        State::Act,
        EntryKind::RunFailed {
            failure: Failure::new(FailureKind::Aborted, "stopped by ops"),
        },
    );

    let path = RunPath::of(ledger.entries());
    let states: Vec<State> = path.stays.iter().map(|s| s.state).collect();
    assert_eq!(states, [State::Intake, State::Act, State::Failed]);
    let act = &path.stays[1];
    assert_eq!(act.via, Via::Transition("go"));
    let tools: Vec<(&str, u32, &str, bool)> = act
        .tools
        .iter()
        .map(|t| (t.tool.as_str(), t.attempts, t.outcome.as_str(), t.ok()))
        .collect();
    assert_eq!(
        tools,
        [
            ("fs.write", 2, "timed_out", false),
            ("fs.write", 0, "denied", false)
        ]
    );
    assert_eq!(act.tools[1].outcome, CallOutcome::Denied);
    assert!(matches!(
        act.notes[..],
        [EntryKind::HumanInputRequested { .. }]
    ));
    assert_eq!(path.stays[2].via.text(), "stopped by ops");
}

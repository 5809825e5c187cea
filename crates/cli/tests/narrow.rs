//! `rein narrow`: a paused run's policy is narrowed from the command line, recorded in its
//! ledger and held when the run is resumed; a request that would widen anything is refused
//! with exit 2 and nothing recorded.

mod support;

use support::{Outcome, Scratch, rein};

/// Asks a human, then calls `publish` twice: two tool calls under a budget of five.
const SCENARIO: &str = r#"{
  "goal": "Publish the release notes twice",
  "policies": {"budgets": {"tool_calls": 5}},
  "tools": [
    {"fixture": "publish", "description": "Publishes the release notes", "annotations": {"idempotent": true}, "behavior": "echo"},
    {"fixture": "deploy", "description": "Deploys", "annotations": {"destructive": true}, "behavior": "echo"}
  ],
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
    {"expect": "explore", "decision": {"type": "ask_human", "question": "Publish now?", "options": ["yes"]}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "answered"}},
    {"expect": "decide", "decision": {"type": "transition", "to": "act", "reason": "go"}},
    {"expect": "act", "decision": {"type": "call_tool", "tool": "publish", "input": {"notes": "a"}, "reason": "first"}},
    {"expect": "act", "decision": {"type": "call_tool", "tool": "publish", "input": {"notes": "b"}, "reason": "second"}},
    {"expect": "act", "decision": {"type": "transition", "to": "validate", "reason": "published"}},
    {"expect": "validate", "decision": {"type": "finish", "summary": "published twice"}}
  ]}
}"#;

fn rein_in(scratch: &Scratch, args: &[&str]) -> Outcome {
    Outcome::of(
        &rein()
            .args(args)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
}

/// The scenario, paused on its question: the run's id.
fn paused(scratch: &Scratch) -> String {
    scratch.write("publish.json", SCENARIO);
    scratch.run("publish.json", &[]).expect_code(3);
    scratch.new_run_id(&[])
}

#[test]
fn a_paused_run_is_narrowed_ledgered_and_held_to_it_on_resume() {
    let scratch = Scratch::new();
    let id = paused(&scratch);
    rein_in(
        &scratch,
        &[
            "narrow",
            &id,
            "--reason",
            "one publication is enough",
            "--budget",
            "tool_calls=1",
            "--deny-tool",
            "deploy",
        ],
    )
    .expect_code(0)
    .stdout_has(&[
        &format!("run {id}  policy narrowed ✓"),
        "budget     tool_calls at most 1",
        "denied     deploy",
        &format!("rein resume {id} --input yes"),
    ]);
    rein_in(&scratch, &["ledger", "verify", &id]).expect_code(0);
    rein_in(&scratch, &["ledger", "show", &id])
        .expect_code(0)
        .stdout_has(&["policy narrowed: one publication is enough"]);
    // Held to it after a restart: the second call finds no budget left.
    rein_in(&scratch, &["resume", &id, "--input", "yes"])
        .expect_code(1)
        .stdout_has(&["failed ✗", "tool_calls"]);
}

#[test]
fn widening_is_refused_with_exit_2_and_records_nothing() {
    let scratch = Scratch::new();
    let id = paused(&scratch);
    let ledger = std::fs::read(scratch.ledger(&id)).unwrap();
    let narrow = |extra: &[&str]| {
        let mut args = vec!["narrow", id.as_str(), "--reason", "more"];
        args.extend_from_slice(extra);
        rein_in(&scratch, &args)
    };
    narrow(&["--budget", "tool_calls=9"])
        .expect_code(2)
        .stderr_has(&[
            &format!("cannot narrow the policy of run {id}"),
            "would widen budget `tool_calls` from 5 to 9",
        ]);
    narrow(&["--hand-back", "3"])
        .expect_code(2)
        .stderr_has(&["would widen how rejections are handed back"]);
    narrow(&["--deny-tool", "nope"])
        .expect_code(2)
        .stderr_has(&["`nope`, which this engine does not have"]);
    narrow(&["--budget", "tool_calls"])
        .expect_code(2)
        .stderr_has(&["write NAME=LIMIT"]);
    narrow(&["--budget", "tool_calls=-1"])
        .expect_code(2)
        .stderr_has(&["is not a whole number"]);
    narrow(&[])
        .expect_code(2)
        .stderr_has(&["nothing to narrow"]);
    assert_eq!(std::fs::read(scratch.ledger(&id)).unwrap(), ledger);
    rein_in(
        &scratch,
        &["narrow", "no-such-run", "--reason", "x", "--max-steps", "1"],
    )
    .expect_code(2)
    .stderr_has(&["no run no-such-run"]);
}

//! `rein run` and `rein resume` end to end: policies as the file states them, Ctrl-C, and
//! what a user reads when a run goes wrong.

mod support;

use support::{Outcome, Scratch, rein};

/// A scenario that calls the high-risk fixture `deploy` once in `act`, with `approvals` and
/// `approver` spliced in.
fn high_risk_call(approvals: &str, approver: &str) -> String {
    format!(
        r#"{{
  "goal": "deploy",
  "policies": {{"approvals": {approvals}, "on_violation": {{"hand_back": {{"limit": 3}}}}}},
  "approver": {approver},
  "tools": [{{"fixture": "deploy", "annotations": {{"risk_level": "high"}}, "behavior": "echo"}}],
  "planner": {{"scripted": [
    {{"decision": {{"type": "transition", "to": "explore"}}}},
    {{"decision": {{"type": "transition", "to": "decide"}}}},
    {{"decision": {{"type": "transition", "to": "act"}}}},
    {{"decision": {{"type": "call_tool", "tool": "deploy", "input": {{}}}}}},
    {{"decision": {{"type": "transition", "to": "validate"}}}},
    {{"decision": {{"type": "finish", "summary": "done"}}}}
  ]}}
}}"#
    )
}

fn run_file(scratch: &Scratch, name: &str, text: &str) -> Outcome {
    let file = scratch.write(name, text);
    Outcome::of(
        &rein()
            .arg("run")
            .arg(file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
}

#[test]
fn setting_one_approvals_field_keeps_the_others_defaults() {
    // Issue 10 item 1: `{"timeout_ms": 30000}` alone used to drop `min_risk: high`, and a
    // high-risk call ran without asking the (denying) approver.
    for approvals in [r#"{"timeout_ms": 30000}"#, r#"{"destructive": true}"#, "{}"] {
        let scratch = Scratch::new();
        let outcome = run_file(
            &scratch,
            "approvals.json",
            &high_risk_call(approvals, r#""deny""#),
        );
        outcome.stdout_has(&["approvals  1 requested, 0 granted, 1 denied"]);
        let id = scratch.new_run_id(&[]);
        let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
        assert!(
            ledger.contains(r#""min_risk":"high""#),
            "{approvals}: the recorded policy lost min_risk"
        );
    }
    // An explicit `null` still means "no risk rule".
    let scratch = Scratch::new();
    run_file(
        &scratch,
        "no-risk-rule.json",
        &high_risk_call(r#"{"min_risk": null}"#, r#""deny""#),
    )
    .expect_code(0)
    .stdout_has(&["approvals  0 requested"]);
}

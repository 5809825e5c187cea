//! A scenario's `policies.deadline`: a hanging tool is cut off at the run's deadline and the
//! run fails as `deadline_exceeded` (exit 1, its ledger verifying); a zero deadline is a
//! bad file (exit 2) that names the field.

mod support;

use support::{Outcome, Scratch, rein};

fn scenario(deadline: &str) -> String {
    format!(
        r#"{{
  "description": "A tool that hangs, under a run deadline shorter than the tool's own timeout",
  "goal": "Ask the legacy inventory service for stock levels",
  "policies": {{"deadline": {deadline}}},
  "tools": [
    {{
      "fixture": "legacy.inventory",
      "description": "The legacy inventory service (hangs)",
      "annotations": {{"read_only": true, "timeout_ms": 600000}},
      "behavior": "hang"
    }}
  ],
  "planner": {{
    "scripted": [
      {{"expect": "intake", "decision": {{"type": "transition", "to": "explore", "reason": "start"}}}},
      {{"expect": "explore", "decision": {{"type": "call_tool", "tool": "legacy.inventory", "input": {{"sku": "A-100"}}, "reason": "stock level"}}}},
      {{"expect": "explore", "decision": {{"type": "transition", "to": "decide", "reason": "have it"}}}},
      {{"expect": "decide", "decision": {{"type": "finish", "summary": "stock known"}}}}
    ]
  }}
}}"#
    )
}

#[test]
fn a_hanging_call_is_cut_off_at_the_runs_deadline() {
    let scratch = Scratch::new();
    scratch.write("deadline.json", &scenario(r#"{"time_ms": 300}"#));
    scratch
        .run("deadline.json", &[])
        .expect_code(1)
        .stdout_has(&["failed ✗", "(deadline_exceeded)", "deadline of 300 ms"]);
    let id = scratch.new_run_id(&[]);
    let output = rein()
        .args(["ledger", "verify", &id, "--data-dir"])
        .arg(scratch.data())
        .output()
        .unwrap();
    Outcome::of(&output).expect_code(0);
}

#[test]
fn a_zero_deadline_is_a_bad_file_that_names_the_field() {
    let scratch = Scratch::new();
    let file = scratch.write("zero.json", &scenario(r#"{"time_ms": 0}"#));
    let output = rein().arg("validate").arg(file).output().unwrap();
    Outcome::of(&output)
        .expect_code(2)
        .stderr_has(&["policies.deadline.time_ms", "no time for a single step"]);
}

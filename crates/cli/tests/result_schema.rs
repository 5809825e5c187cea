//! A scenario's `policies.result_schema`: a finish whose result does not match is handed back
//! (and the corrected finish completes the run), fails the run under `"fail"` naming the
//! failing path (exit 1), and a schema that does not compile is a bad file (exit 2) naming
//! the field.

mod support;

use support::{Scratch, rein};

fn scenario(result_schema: &str, on_violation: &str) -> String {
    format!(
        r#"{{
  "description": "A run whose result must be an object with an integer answer",
  "goal": "Answer the question",
  "policies": {{"result_schema": {result_schema}, "on_violation": {on_violation}}},
  "planner": {{
    "scripted": [
      {{"expect": "intake", "decision": {{"type": "transition", "to": "explore", "reason": "start"}}}},
      {{"expect": "explore", "decision": {{"type": "transition", "to": "decide", "reason": "known"}}}},
      {{"expect": "decide", "decision": {{"type": "finish", "summary": "answered", "result": {{"answer": "forty-two"}}}}}},
      {{"expect": "decide", "decision": {{"type": "finish", "summary": "answered", "result": {{"answer": 42}}}}}}
    ]
  }}
}}"#
    )
}

const SCHEMA: &str =
    r#"{"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}"#;

#[test]
fn a_result_that_does_not_match_is_handed_back_and_the_corrected_one_completes() {
    let scratch = Scratch::new();
    scratch.write(
        "answer.json",
        &scenario(SCHEMA, r#"{"hand_back": {"limit": 1}}"#),
    );
    scratch
        .run("answer.json", &[])
        .expect_code(0)
        .stdout_has(&["completed ✓"]);
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(ledger.contains(r#""answer":42"#), "{ledger}");
    assert!(ledger.contains("result schema"), "{ledger}");
}

#[test]
fn a_result_that_does_not_match_fails_the_run_under_fail() {
    let scratch = Scratch::new();
    scratch.write("answer.json", &scenario(SCHEMA, r#""fail""#));
    scratch.run("answer.json", &[]).expect_code(1).stdout_has(&[
        "failed ✗",
        "result schema",
        "/answer",
    ]);
}

#[test]
fn a_schema_that_does_not_compile_is_a_bad_file_that_names_the_field() {
    let scratch = Scratch::new();
    let file = scratch.write("bad.json", &scenario(r#"{"type": 12}"#, r#""fail""#));
    let output = rein().arg("validate").arg(file).output().unwrap();
    support::Outcome::of(&output)
        .expect_code(2)
        .stderr_has(&["policies.result_schema", "not a valid JSON Schema"]);
}

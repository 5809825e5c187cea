//! `rein inspect`: the path of a run and the policy of a scenario, as diagrams. The
//! outputs are snapshot-tested (run ids replaced), so a change shows up in review.

mod support;

use support::{Outcome, Scratch, rein};

/// `rein inspect ARGS` in `scratch`'s data directory; stdout with run id `id` (if any)
/// replaced.
fn inspect(scratch: &Scratch, id: Option<&str>, args: &[&str]) -> String {
    let outcome = Outcome::of(
        &rein()
            .arg("inspect")
            .args(args)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(0);
    match id {
        Some(id) => outcome.stdout.replace(id, "[run-id]"),
        None => outcome.stdout,
    }
}

#[test]
fn the_path_of_a_run_as_mermaid_dot_and_json() {
    let scratch = Scratch::new();
    scratch.run("happy-path.json", &[]).expect_code(0);
    let id = scratch.new_run_id(&[]);
    insta::assert_snapshot!(
        "happy_path_mermaid",
        inspect(&scratch, Some(&id), &[&id, "--format", "mermaid"])
    );
    insta::assert_snapshot!(
        "happy_path_dot",
        inspect(&scratch, Some(&id), &[&id, "--format", "dot"])
    );
    let json = inspect(&scratch, Some(&id), &[&id, "--format", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    insta::assert_json_snapshot!("happy_path_json", value);
}

#[test]
fn a_run_with_retries_violations_and_failures() {
    let scratch = Scratch::new();
    scratch.run("flaky-retry.json", &[]).expect_code(0);
    let first = scratch.new_run_id(&[]);
    scratch.run("violation-handback.json", &[]).expect_code(0);
    let second = scratch.new_run_id(std::slice::from_ref(&first));
    scratch.run("hang-timeout.json", &[]).expect_code(1);
    let third = scratch.new_run_id(&[first.clone(), second.clone()]);
    insta::assert_snapshot!(
        "flaky_retry_mermaid",
        inspect(&scratch, Some(&first), &[&first])
    );
    insta::assert_snapshot!(
        "violation_handback_mermaid",
        inspect(&scratch, Some(&second), &[&second])
    );
    insta::assert_snapshot!(
        "hang_timeout_mermaid",
        inspect(&scratch, Some(&third), &[&third])
    );
}

#[test]
fn the_policy_of_a_scenario() {
    let scratch = Scratch::new();
    let file = scratch.scenario("happy-path.json");
    let file = file.to_str().unwrap();
    insta::assert_snapshot!(
        "happy_path_policy_mermaid",
        inspect(&scratch, None, &["--policy", file])
    );
    insta::assert_snapshot!(
        "happy_path_policy_dot",
        inspect(&scratch, None, &["--policy", file, "--format", "dot"])
    );
    let json = inspect(&scratch, None, &["--policy", file, "--format", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value["eligibility"]["explore"],
        serde_json::json!(["fs.list", "fs.read"])
    );
    assert_eq!(
        value["tools"]["fs.write"]["approval"],
        "the tool's risk (high) is at or above the threshold (high)"
    );
    assert_eq!(value["transitions"]["done"], serde_json::json!([]));
}

#[test]
fn inspect_needs_a_run_or_a_policy() {
    let outcome = Outcome::of(
        &rein()
            .args(["inspect", "--format", "dot"])
            .output()
            .unwrap(),
    );
    outcome.expect_code(2).stderr_has(&["RUN_ID"]);
}

#[test]
fn a_reader_that_closes_stdout_early_is_a_quiet_exit_for_every_printing_command() {
    // `rein inspect RUN --prompt 1 | head -1` used to panic on the broken pipe (exit 101).
    let scratch = Scratch::new();
    scratch.run("happy-path.json", &[]).expect_code(0);
    let id = scratch.new_run_id(&[]);
    let data = scratch.data();
    let data = data.to_str().unwrap();
    let scenario = scratch.scenario("happy-path.json");
    let scenario = scenario.to_str().unwrap();
    for args in [
        vec!["inspect", &id, "--data-dir", data],
        vec!["inspect", &id, "--format", "json", "--data-dir", data],
        vec!["ledger", "show", &id, "--data-dir", data],
        vec!["ledger", "verify", &id, "--data-dir", data],
        vec!["runs", "list", "--data-dir", data],
        vec!["validate", scenario],
        vec!["tools"],
        vec!["run", scenario, "--data-dir", data],
    ] {
        // The reader is gone before `rein` writes a byte: every write meets a closed pipe.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
            .args(&args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

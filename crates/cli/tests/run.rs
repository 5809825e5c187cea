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

/// A run whose only tool call, to the non-idempotent `deploy`, takes a while; each
/// execution adds a line to `DATA/deploys.txt` as it starts.
const SLOW_DEPLOY: &str = r#"{
  "goal": "deploy slowly",
  "tools": [{"fixture": "deploy", "behavior": "echo", "delay_ms": 3000, "count_file": "deploys.txt"}],
  "planner": {"scripted": [
    {"decision": {"type": "transition", "to": "explore"}},
    {"decision": {"type": "transition", "to": "decide"}},
    {"decision": {"type": "transition", "to": "act"}},
    {"decision": {"type": "call_tool", "tool": "deploy", "input": {"v": 1}}},
    {"decision": {"type": "transition", "to": "validate"}},
    {"decision": {"type": "finish", "summary": "deployed"}}
  ]}
}"#;

/// Starts `rein run` on `SLOW_DEPLOY` and returns the child once `deploy` has started
/// (its count file has a line), with its stderr read line by line into a channel.
fn start_slow_deploy(
    scratch: &Scratch,
) -> (
    std::process::Child,
    std::sync::mpsc::Receiver<String>,
    std::path::PathBuf,
) {
    use std::io::BufRead as _;
    let file = scratch.write("slow.json", SLOW_DEPLOY);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .arg("run")
        .arg(file)
        .arg("--data-dir")
        .arg(scratch.data())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let count = scratch.data().join("deploys.txt");
    wait_until("deploy to start", || count.is_file());
    (child, rx, count)
}

/// Polls `done` until it holds (a 60 s guard, not a timing assertion).
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < give_up,
            "gave up waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn sigint(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn finished(child: std::process::Child, stderr: &std::sync::mpsc::Receiver<String>) -> Outcome {
    let output = child.wait_with_output().unwrap();
    let mut outcome = Outcome::of(&output);
    outcome.stderr = stderr.iter().collect::<Vec<_>>().join("\n");
    outcome
}

fn entry_kinds(scratch: &Scratch, id: &str) -> Vec<String> {
    std::fs::read_to_string(scratch.ledger(id))
        .unwrap()
        .lines()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            entry["event"]["type"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn ctrl_c_during_a_non_idempotent_call_waits_for_it_and_the_run_resumes() {
    // Issue 10 item 6: Ctrl-C used to exit at once, leaving the call in doubt, and
    // `rein resume` then failed with in_doubt_tool_call.
    let scratch = Scratch::new();
    let (child, stderr, count) = start_slow_deploy(&scratch);
    sigint(&child);
    let outcome = finished(child, &stderr);
    outcome.expect_code(130).stderr_has(&[
        "interrupting run",
        "a tool call in progress finishes and is recorded",
    ]);
    outcome.stdout_has(&["interrupted ‖", "resume     rein resume"]);
    let id = scratch.new_run_id(&[]);
    let kinds = entry_kinds(&scratch, &id);
    let call = kinds.iter().position(|k| k == "tool_call").unwrap();
    assert_eq!(
        kinds[call + 1],
        "tool_result",
        "the call was waited for: {kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("run_interrupted"));

    let resumed = Outcome::of(
        &rein()
            .args(["resume", &id, "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    resumed.expect_code(0).stdout_has(&["completed ✓"]);
    let deploys = std::fs::read_to_string(&count).unwrap();
    assert_eq!(deploys.lines().count(), 1, "deploy ran once: {deploys}");
}

#[test]
fn a_second_ctrl_c_aborts_and_says_what_that_means() {
    let scratch = Scratch::new();
    let (child, stderr, _) = start_slow_deploy(&scratch);
    sigint(&child);
    let mut seen = Vec::new();
    for line in stderr.iter() {
        let interrupting = line.contains("interrupting run");
        seen.push(line);
        if interrupting {
            break;
        }
    }
    sigint(&child);
    let mut outcome = finished(child, &stderr);
    outcome.stderr = format!("{}\n{}", seen.join("\n"), outcome.stderr);
    outcome.expect_code(130).stderr_has(&[
        "aborting run",
        "may or may not have taken effect",
        "cannot be resumed",
    ]);
    outcome.stdout_has(&["failed ✗", "aborted"]);
    let id = scratch.new_run_id(&[]);
    let kinds = entry_kinds(&scratch, &id);
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run_failed"),
        "{kinds:?}"
    );
}

#[test]
fn two_concurrent_resumes_of_one_run_get_the_same_answer_whatever_the_timing() {
    // Issue 10: the losing one of two `rein resume` used to get exit 1 (the ledger is
    // locked) or exit 2 (the run is finished) depending on timing. Now they take turns.
    let scratch = Scratch::new();
    let text = r#"{
  "goal": "ask, then deploy slowly",
  "tools": [{"fixture": "deploy", "behavior": "echo", "delay_ms": 1000}],
  "planner": {"scripted": [
    {"decision": {"type": "ask_human", "question": "go?", "options": ["yes", "no"]}},
    {"decision": {"type": "transition", "to": "explore"}},
    {"decision": {"type": "transition", "to": "decide"}},
    {"decision": {"type": "transition", "to": "act"}},
    {"decision": {"type": "call_tool", "tool": "deploy", "input": {}}},
    {"decision": {"type": "transition", "to": "validate"}},
    {"decision": {"type": "finish", "summary": "deployed"}}
  ]}
}"#;
    run_file(&scratch, "ask.json", text).expect_code(3);
    let id = scratch.new_run_id(&[]);
    let resume = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
            .args(["resume", &id, "--input", "yes", "--data-dir"])
            .arg(scratch.data())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (resume(), resume());
    let mut outcomes = [first, second].map(|child| Outcome::of(&child.wait_with_output().unwrap()));
    outcomes.sort_by_key(|o| o.code);
    outcomes[0].expect_code(0).stdout_has(&["completed ✓"]);
    outcomes[1].expect_code(2).stderr_has(&[&format!(
        "run {id} is completed; a finished run cannot be resumed"
    )]);
}

/// `rein ledger show ID` in `scratch`'s data directory.
fn show(scratch: &Scratch, id: &str) -> Outcome {
    Outcome::of(
        &rein()
            .args(["ledger", "show", id, "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
}

#[test]
fn summaries_and_timelines_say_each_thing_once() {
    // Issue 10, messages: `steps 2/∞` under max_steps 2; "tool `x` failed: tool failed:";
    // a breaker refusal shown as "attempt 0"; empty reasons leaving a dangling ": ".
    let scratch = Scratch::new();
    let script = |max_steps: u32| {
        format!(
            r#"{{"goal": "g", "max_steps": {max_steps},
  "tools": [{{"fixture": "x", "behavior": {{"fail": {{"message": "503 unavailable", "transient": true}}}}}}],
  "planner": {{"scripted": [
    {{"decision": {{"type": "transition", "to": "explore"}}}},
    {{"decision": {{"type": "transition", "to": "decide"}}}},
    {{"decision": {{"type": "transition", "to": "act"}}}},
    {{"decision": {{"type": "call_tool", "tool": "x", "input": {{}}}}}}
  ]}}}}"#
        )
    };
    run_file(&scratch, "two.json", &script(2))
        .expect_code(1)
        .stdout_has(&["budgets    steps 2/2"]);
    let before = scratch.run_ids();
    let failed = run_file(&scratch, "ten.json", &script(10));
    failed.expect_code(1).stdout_has(&[
        "error      tool `x` failed: 503 unavailable (transient) (tool_failed)",
        "steps 4/10",
    ]);
    let id = scratch.new_run_id(&before);
    let timeline = show(&scratch, &id);
    timeline
        .expect_code(0)
        .stdout_has(&["transition intake → explore\n", "tool `x` failed: 503"]);
    for line in timeline.stdout.lines() {
        assert!(
            !line.ends_with(':') && !line.ends_with(": ") && !line.contains("()"),
            "a dangling separator: {line:?}"
        );
        assert!(!line.contains("failed: tool failed"), "{line:?}");
    }

    let before = scratch.run_ids();
    scratch.run("circuit-breaker.json", &[]).expect_code(0);
    let id = scratch.new_run_id(&before);
    let timeline = show(&scratch, &id);
    timeline.stdout_has(&["tool error pricing.quote, refused before any attempt: circuit breaker"]);
    assert!(
        !timeline.stdout.contains("attempt 0"),
        "{}",
        timeline.stdout
    );
}

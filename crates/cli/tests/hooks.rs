//! Command hooks in scenario files: a few lines of sh each, asked before a tool call with
//! the payload on stdin — exit 0 allows, exit 2 denies with stderr as the reason, a JSON
//! verdict on stdout narrows; exit 1, garbage and a timeout deny (fail closed). They run
//! with a cleared environment in the workspace, are found next to the scenario file and
//! never in the workspace, and bad entries are refused when the file is checked.

mod support;

use serde_json::{Value, json};
use support::{Scratch, rein};

/// A scenario whose script calls the read-only `look` once in explore, then finishes;
/// `hooks` is its `hooks` list, `extra` more top-level fields.
fn scenario(hooks: &Value, extra: &str) -> String {
    format!(
        r#"{{
  "goal": "Look once",
  "hooks": {hooks},
  {extra}
  "tools": [{{"fixture": "look", "annotations": {{"read_only": true}}, "behavior": "echo"}}],
  "planner": {{"scripted": [
    {{"expect": "intake", "decision": {{"type": "transition", "to": "explore", "reason": "start"}}}},
    {{"expect": "explore", "decision": {{"type": "call_tool", "tool": "look", "input": {{"q": 1}}, "reason": "look"}}}},
    {{"expect": "explore", "decision": {{"type": "transition", "to": "decide", "reason": "seen"}}}},
    {{"expect": "decide", "decision": {{"type": "finish", "summary": "looked", "result": 1}}}}
  ]}}
}}"#
    )
}

/// A `before_tool` hook running `sh FILE` (FILE next to the scenario).
fn before_tool(file: &str, extra: &Value) -> Value {
    let mut hook =
        json!({"name": "guard", "point": "before_tool", "match": "lo*", "command": ["sh", file]});
    if let (Some(hook), Some(extra)) = (hook.as_object_mut(), extra.as_object()) {
        hook.extend(extra.clone());
    }
    json!([hook])
}

/// The entries of the only run's ledger.
fn ledger(scratch: &Scratch) -> Vec<Value> {
    let id = scratch.new_run_id(&[]);
    std::fs::read_to_string(scratch.ledger(&id))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn kinds(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap_or_default())
        .collect()
}

fn verdicts(entries: &[Value]) -> Vec<&Value> {
    entries
        .iter()
        .filter(|e| e["event"]["type"] == "hook_verdicts")
        .collect()
}

#[test]
fn a_hook_that_exits_0_allows_and_sees_the_payload_in_a_cleared_environment() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.scenario("ws")).unwrap();
    scratch.write("allow.sh", "cat > payload.json\nenv > env.txt\nexit 0\n");
    scratch.write(
        "allow.json",
        &scenario(
            &before_tool("allow.sh", &json!({"env": ["REIN_HOOK_SHOWN"]})),
            r#""workspace": "ws","#,
        ),
    );
    let output = rein()
        .arg("run")
        .arg(scratch.scenario("allow.json"))
        .arg("--data-dir")
        .arg(scratch.data())
        .env("REIN_HOOK_SHOWN", "yes")
        .env("REIN_HOOK_HIDDEN", "secret")
        .output()
        .unwrap();
    support::Outcome::of(&output)
        .expect_code(0)
        .stdout_has(&["completed"]);
    // The hook ran in the workspace.
    let payload: Value =
        serde_json::from_slice(&std::fs::read(scratch.scenario("ws/payload.json")).unwrap())
            .unwrap();
    assert_eq!(payload["point"], "before_tool");
    assert_eq!(payload["tool"], "look");
    assert_eq!(payload["input"], json!({"q": 1}));
    let env = std::fs::read_to_string(scratch.scenario("ws/env.txt")).unwrap();
    assert!(env.contains("REIN_HOOK_SHOWN=yes"), "{env}");
    assert!(!env.contains("REIN_HOOK_HIDDEN"), "{env}");
    assert!(!env.contains("HOME="), "{env}");
    let entries = ledger(&scratch);
    assert!(verdicts(&entries).is_empty());
    assert!(kinds(&entries).contains(&"tool_result"));
}

#[test]
fn a_hook_that_exits_2_denies_with_its_stderr_and_is_ledgered_with_its_hashes() {
    let scratch = Scratch::new();
    scratch.write("deny.sh", "echo 'looking is forbidden' >&2\nexit 2\n");
    scratch.write(
        "deny.json",
        &scenario(&before_tool("deny.sh", &json!({})), ""),
    );
    scratch
        .run("deny.json", &[])
        .expect_code(1)
        .stdout_has(&["hook `guard`", "looking is forbidden"]);
    let entries = ledger(&scratch);
    assert!(
        !kinds(&entries).contains(&"tool_call"),
        "the call never ran"
    );
    let verdicts = verdicts(&entries);
    assert_eq!(verdicts.len(), 1);
    let ruling = &verdicts[0]["event"]["rulings"][0];
    assert_eq!(ruling["hook"], "guard");
    assert_eq!(ruling["outcome"], json!({"type": "deny"}));
    assert_eq!(ruling["reason"], "looking is forbidden");
    assert!(ruling["command"].is_string(), "{ruling}");
    assert!(ruling["script"].is_string(), "{ruling}");
    // The run's policy snapshot names the hook by the same hashes.
    let hooks = &entries[0]["event"]["policy"]["hooks"][0];
    assert_eq!(hooks["name"], "guard");
    assert_eq!(hooks["command"], ruling["command"]);
    assert_eq!(hooks["script"], ruling["script"]);
}

#[test]
fn a_verdict_on_stdout_narrows_the_call_to_an_approval() {
    let scratch = Scratch::new();
    scratch.write(
        "ask.sh",
        "echo '{\"verdict\": \"require_approval\", \"reason\": \"a person looks first\"}'\n",
    );
    scratch.write(
        "ask.json",
        &scenario(&before_tool("ask.sh", &json!({})), r#""approver": "auto","#),
    );
    scratch.run("ask.json", &[]).expect_code(0);
    let entries = ledger(&scratch);
    let kinds = kinds(&entries);
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap();
    assert!(at("hook_verdicts") < at("approval_requested"));
    assert!(at("approval_granted") < at("tool_call"));
}

#[test]
fn a_hook_that_fails_prints_garbage_or_times_out_denies() {
    for (script, timeout, reason) in [
        ("exit 1\n", 5_000, "exited with exit status: 1"),
        ("echo 'sure, go ahead'\n", 5_000, "which is not a verdict"),
        ("sleep 30\n", 200, "did not answer within 200 ms"),
    ] {
        let scratch = Scratch::new();
        scratch.write("hook.sh", script);
        scratch.write(
            "hook.json",
            &scenario(&before_tool("hook.sh", &json!({"timeout_ms": timeout})), ""),
        );
        scratch.run("hook.json", &[]).expect_code(1).stdout_has(&[
            "hook `guard`",
            reason,
            "fail closed",
        ]);
        assert!(!kinds(&ledger(&scratch)).contains(&"tool_call"), "{script}");
    }
}

#[test]
fn a_hook_file_in_the_workspace_is_never_loaded() {
    let scratch = Scratch::new();
    // The agent could write into the workspace: a guard placed there is not the operator's.
    std::fs::create_dir_all(scratch.scenario("ws")).unwrap();
    std::fs::write(scratch.scenario("ws/guard.sh"), "exit 0\n").unwrap();
    scratch.write(
        "ws-hook.json",
        &scenario(
            &before_tool("guard.sh", &json!({})),
            r#""workspace": "ws","#,
        ),
    );
    let outcome = scratch.run("ws-hook.json", &[]);
    outcome
        .expect_code(2)
        .stderr_has(&["hooks[0].command[1]", "does not exist", "never in"]);
    assert!(scratch.run_ids().is_empty(), "nothing ran");
}

#[test]
fn a_bad_matcher_or_a_missing_program_is_refused_naming_the_field() {
    let scratch = Scratch::new();
    scratch.write("ok.sh", "exit 0\n");
    scratch.write(
        "glob.json",
        &scenario(&before_tool("ok.sh", &json!({"match": "fs.[ab]"})), ""),
    );
    scratch
        .run("glob.json", &[])
        .expect_code(2)
        .stderr_has(&["hooks[0].match", "not supported"]);
    scratch.write(
        "program.json",
        &scenario(
            &json!([{"point": "before_tool", "command": ["no-such-program-rein"]}]),
            "",
        ),
    );
    scratch
        .run("program.json", &[])
        .expect_code(2)
        .stderr_has(&["hooks[0].command[0]", "not on PATH"]);
}

#[test]
fn a_resume_after_the_hook_script_changed_refuses_to_drive_the_run() {
    let scratch = Scratch::new();
    scratch.write("audit.sh", "exit 0\n");
    let paused = r#"{
  "goal": "Ask first",
  "hooks": [{"name": "audit", "point": "pause", "command": ["sh", "audit.sh"]}],
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
    {"expect": "explore", "decision": {"type": "ask_human", "question": "go on?", "options": ["yes"]}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "ok"}},
    {"expect": "decide", "decision": {"type": "finish", "summary": "done", "result": 1}}
  ]}
}"#;
    scratch.write("paused.json", paused);
    scratch.run("paused.json", &[]).expect_code(3);
    let id = scratch.new_run_id(&[]);
    let resume = || {
        support::Outcome::of(
            &rein()
                .args(["resume", &id, "--input", "yes", "--data-dir"])
                .arg(scratch.data())
                .output()
                .unwrap(),
        )
    };
    // An edited script is another hook: the run is not driven under it.
    scratch.write("audit.sh", "exit 0 # edited\n");
    let refused = resume();
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    refused.stderr_has(&["hook `audit`", "which this engine does not have"]);
    // The script the run started under is the hook it records: the resume goes on.
    scratch.write("audit.sh", "exit 0\n");
    resume().expect_code(0).stdout_has(&["completed"]);
}

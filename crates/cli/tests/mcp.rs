//! `rein mcp list` and scenario tools of kind "mcp", against a server written with the
//! official Python SDK (installed by `make mcp-servers`; a missing install fails and says so).

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{Outcome, Scratch, rein};

fn installed(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp")
        .join(rel);
    assert!(
        path.exists(),
        "{} is missing: run `make mcp-servers` (it installs the pinned MCP servers under target/mcp)",
        path.display()
    );
    path
}

/// The Python SDK server's command line.
fn notes_server() -> Vec<String> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/mcp/tests/servers/notes_server.py");
    vec![
        installed("venv/bin/python").display().to_string(),
        script.display().to_string(),
    ]
}

fn run(args: &[String]) -> Outcome {
    Outcome::of(&rein().args(args).output().unwrap())
}

#[test]
fn list_prints_derived_annotations_and_eligible_states() {
    let mut args: Vec<String> = ["mcp", "list", "--server", "notes", "--"]
        .map(String::from)
        .to_vec();
    args.extend(notes_server());
    run(&args).expect_code(0).stdout_has(&[
        "mcp server `notes`: 3 tools",
        "notes.lookup  read-only, idempotent, risk low  eligible in: explore, act, validate",
        // No hints: MCP's defaults make it destructive, so it is eligible in act only.
        "notes.record  destructive, risk high  eligible in: act",
    ]);

    args.insert(2, "--json".to_owned());
    let outcome = run(&args);
    outcome.expect_code(0);
    let tools: Vec<Value> = serde_json::from_str(&outcome.stdout).unwrap();
    let record = tools.iter().find(|t| t["name"] == "notes.record").unwrap();
    assert_eq!(record["eligible_in"], json!(["act"]));
    assert_eq!(record["annotations"]["destructive"], true);
    assert_eq!(record["hints"], json!({}), "the server sent no hints");
}

#[test]
fn list_names_the_server_and_the_fix_when_it_cannot_start() {
    run(&[
        "mcp",
        "list",
        "--server",
        "gone",
        "--",
        "/nonexistent/server",
    ]
    .map(String::from))
    .expect_code(2)
    .stderr_has(&["mcp server `gone`", "could not start", "make mcp-servers"]);
    run(&["mcp", "list", "--server", "web", "http://127.0.0.1:9/mcp"].map(String::from))
        .expect_code(2)
        .stderr_has(&["mcp server `web`", "did not complete the MCP handshake"]);
}

fn scenario(tool: &Value) -> String {
    json!({
        "goal": "add, record, read back",
        "approver": "auto",
        "policies": {"budgets": {"tool_calls": 5}},
        "tools": [tool],
        "planner": {"scripted": [
            {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "go"}},
            {"expect": "explore", "decision": {"type": "call_tool", "tool": "notes.add", "input": {"a": 40, "b": 2}, "reason": "add"}},
            {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "have it"}},
            {"expect": "decide", "decision": {"type": "transition", "to": "act", "reason": "record"}},
            {"expect": "act", "decision": {"type": "call_tool", "tool": "notes.record", "input": {"key": "sum", "text": "42"}, "reason": "keep"}},
            {"expect": "act", "decision": {"type": "transition", "to": "validate", "reason": "check"}},
            {"expect": "validate", "decision": {"type": "call_tool", "tool": "notes.lookup", "input": {"key": "sum"}, "reason": "read back"}},
            {"expect": "validate", "decision": {"type": "finish", "summary": "recorded", "result": {"ok": true}}}
        ]}
    })
    .to_string()
}

#[test]
fn a_scenario_runs_the_tools_of_an_mcp_server_under_its_policies() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "mcp.json",
        &scenario(&json!({"kind": "mcp", "server": "notes", "command": notes_server()})),
    );
    let outcome = Outcome::of(
        &rein()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(0).stdout_has(&[
        "completed ✓",
        "approvals  1 requested, 1 granted, 0 denied",
        "verified ✓",
    ]);
    let id = scratch.new_run_id(&[]);
    rein()
        .args(["ledger", "verify", &id, "--data-dir"])
        .arg(scratch.data())
        .assert()
        .success();
}

#[test]
fn bad_mcp_entries_are_refused_naming_the_field_or_the_server() {
    let scratch = Scratch::new();
    let validate = |name: &str, tool: Value| {
        let file = scratch.write(name, &scenario(&tool));
        Outcome::of(&rein().arg("validate").arg(&file).output().unwrap())
    };
    validate(
        "both.json",
        json!({"kind": "mcp", "server": "notes", "command": ["x"], "url": "http://127.0.0.1:9/mcp"}),
    )
    .expect_code(2)
    .stderr_has(&["exactly one of \"command\"", "\"url\""]);
    validate(
        "widen.json",
        json!({"kind": "mcp", "server": "notes", "command": ["x"], "overrides": {"record": {"read_only": "yes"}}}),
    )
    .expect_code(2)
    .stderr_has(&["tools[0].overrides.record"]);
    validate("nokind.json", json!({"server": "notes", "command": ["x"]}))
        .expect_code(2)
        .stderr_has(&["\"kind\": \"mcp\""]);

    // A server that does not start is reported before the run, naming it (exit 2).
    let file = scratch.write(
        "missing.json",
        &scenario(&json!({"kind": "mcp", "server": "notes", "command": ["/nonexistent/server"]})),
    );
    Outcome::of(
        &rein()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
    .expect_code(2)
    .stderr_has(&["mcp server `notes`", "could not start"]);
    assert!(scratch.run_ids().is_empty(), "no run was started");
}

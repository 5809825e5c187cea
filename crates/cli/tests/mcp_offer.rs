//! What `rein mcp serve` offers besides tools, seen by the official Python SDK client
//! (installed by `make mcp-servers`): the scenario's skills as prompts, the session run's
//! ledger as a resource, and a call's progress as progress and logging notifications.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::mcp::installed;
use support::{Outcome, Scratch, rein};

const SCENARIO: &str = r#"{
  "goal": "serve lookups with a skill",
  "approver": "auto",
  "skills": "skills",
  "tools": [
    {"fixture": "lookup", "annotations": {"read_only": true}, "behavior": {"output": {"value": 42}}}
  ],
  "planner": {"scripted": []}
}"#;

#[test]
fn serve_offers_skills_as_prompts_the_ledger_as_a_resource_and_reports_progress() {
    let scratch = Scratch::new();
    let skill = scratch.dir.path().join("scenarios/skills/review");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: code-review\ndescription: How to review a diff\n---\nRead the diff twice.\n",
    )
    .unwrap();
    let file = scratch.write("offer.json", SCENARIO);
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/offer_client.py");
    let outcome = Outcome::of(
        &std::process::Command::new(installed("venv/bin/python"))
            .arg(client)
            .arg("lookup")
            .arg(env!("CARGO_BIN_EXE_rein"))
            .arg(&file)
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(0);
    let out: Value = serde_json::from_str(&outcome.stdout).unwrap();

    // The tool set never changes while serving, and rein says so.
    assert_eq!(out["capabilities"]["tools"]["listChanged"], false);
    assert!(out["capabilities"]["logging"].is_object(), "{out}");
    assert_eq!(
        out["prompts"],
        json!([{"name": "code-review", "description": "How to review a diff", "text": "Read the diff twice.\n"}])
    );

    assert_eq!(out["call"]["is_error"], false, "{out}");
    // The run is walked from intake to explore, then the lookup is called: both reported,
    // as progress (the client sent a token) and as logging messages from `rein`.
    let progress: Vec<&str> = out["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        progress,
        [
            "`lookup` is not eligible in intake: walking the run to explore",
            "calling `lookup` in explore"
        ],
        "{out}"
    );
    let logs = out["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 2, "{out}");
    assert_eq!(
        logs[1],
        json!({"level": "info", "logger": "rein", "data": "calling `lookup` in explore"})
    );

    // The ledger resource holds the session's run so far: the call's result is in it.
    let resources = out["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 1, "{out}");
    assert_eq!(resources[0]["uri"], "rein://run/ledger");
    assert_eq!(resources[0]["mime_type"], "application/json");
    let ledger: Value =
        serde_json::from_str(resources[0]["text"].as_str().expect("text")).expect("JSON");
    let text = ledger.to_string();
    assert!(
        text.contains("tool_result") && text.contains("lookup"),
        "{text}"
    );

    let id = scratch.new_run_id(&[]);
    rein()
        .args(["ledger", "verify", &id, "--data-dir"])
        .arg(scratch.data())
        .assert()
        .success();
}

#[test]
fn serve_passes_an_imported_servers_progress_on_to_its_client() {
    let scratch = Scratch::new();
    let server =
        installed("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let scenario = json!({
        "goal": "serve a long operation",
        "approver": "auto",
        "tools": [{"kind": "mcp", "server": "every", "command": ["node", server, "stdio"],
                   "handshake_timeout_ms": 60000}],
        "planner": {"scripted": []}
    });
    let file = scratch.write("long.json", &scenario.to_string());
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/offer_client.py");
    let outcome = Outcome::of(
        &std::process::Command::new(installed("venv/bin/python"))
            .arg(client)
            .arg("every.trigger-long-running-operation")
            .arg(env!("CARGO_BIN_EXE_rein"))
            .arg(&file)
            .arg(scratch.data())
            .arg(r#"{"duration": 0.3, "steps": 3}"#)
            .output()
            .unwrap(),
    );
    outcome.expect_code(0);
    let out: Value = serde_json::from_str(&outcome.stdout).unwrap();
    assert_eq!(out["call"]["is_error"], false, "{out}");
    // rein's own reports, then the server's progress of the call, as it told it.
    let progress: Vec<&str> = out["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // FIXME: the last may be dropped when rmcp hands it over after the call's result (see
    // rein-mcp's run_calls test); those sent earlier arrive, in order.
    let server_said: Vec<&str> = progress
        .iter()
        .copied()
        .filter(|p| p.starts_with("tool every."))
        .collect();
    assert!(
        server_said.starts_with(&[
            "tool every.trigger-long-running-operation progress 1/3",
            "tool every.trigger-long-running-operation progress 2/3",
        ]),
        "{out}"
    );
    // Never in the ledger: the run's record holds what was decided and done, not how far.
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(!ledger.contains("progress 1/3"), "{ledger}");
}

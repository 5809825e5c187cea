//! `rein mcp list` and scenario tools of kind "mcp", against a server written with the
//! official Python SDK (installed by `make mcp-servers`; a missing install fails and says so).

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::mcp::{installed, notes_server, vault_server};
use support::{Outcome, Scratch, rein};

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

/// A scenario for `rein mcp serve`: a read-only lookup, a destructive deploy behind a
/// scripted approver (deny, then grant), and a budget of three tool calls.
const SERVED: &str = r#"{
  "goal": "serve lookups and deploys to an MCP client",
  "approver": {"scripted": [{"answer": "deny", "reason": "production is frozen"}, {"answer": "grant", "reason": "ok now"}]},
  "policies": {"budgets": {"tool_calls": 3}},
  "tools": [
    {"fixture": "lookup", "annotations": {"read_only": true}, "behavior": {"output": {"value": 42}}},
    {"fixture": "deploy", "annotations": {"destructive": true}, "behavior": {"output": {"deployed": true}}}
  ],
  "planner": {"scripted": []}
}"#;

fn served_calls() -> Value {
    json!([
        ["lookup", {}],
        ["deploy", {}],
        ["deploy", {}],
        ["lookup", {}],
        ["lookup", {}]
    ])
}

/// Runs the Python SDK's client (`tests/mcp/client.py`) with [`served_calls`] over
/// `transport` (`["stdio", REIN, SCENARIO, DATA]` or `["http", URL]`).
fn python_client(transport: &[&std::ffi::OsStr]) -> Outcome {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let output = std::process::Command::new(installed("venv/bin/python"))
        .arg(client)
        .arg(served_calls().to_string())
        .args(transport)
        .output()
        .unwrap();
    Outcome::of(&output)
}

/// What the Python client saw of [`SERVED`] for [`served_calls`].
fn check_served(outcome: &Outcome) {
    outcome.expect_code(0);
    let out: Value = serde_json::from_str(&outcome.stdout).unwrap();
    // rein names itself, not the MCP library it is built with.
    assert_eq!(
        out["server_info"],
        json!({"name": "rein", "version": env!("CARGO_PKG_VERSION")})
    );
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["lookup", "deploy"]);
    assert_eq!(out["tools"][1]["annotations"]["destructive_hint"], true);

    let calls = out["calls"].as_array().unwrap();
    // The lookup runs after the run is walked from intake to explore.
    assert_eq!(calls[0]["is_error"], false);
    assert_eq!(calls[0]["structured"], json!({"value": 42}));
    // The first deploy is walked to act, then denied by the scenario's approver: an MCP
    // error result that says why.
    assert_eq!(calls[1]["is_error"], true);
    let denied = calls[1]["text"].as_str().unwrap();
    assert!(
        denied.contains("not approved") && denied.contains("production is frozen"),
        "{denied}"
    );
    // The second is granted and runs.
    assert_eq!(calls[2]["structured"], json!({"deployed": true}));
    // The third tool call uses the last of the budget; the fourth is refused.
    assert_eq!(calls[3]["is_error"], false);
    assert_eq!(calls[4]["is_error"], true);
    let exhausted = calls[4]["text"].as_str().unwrap();
    assert!(
        exhausted.contains("budget `tool_calls` exhausted"),
        "{exhausted}"
    );
}

/// The served run's ledger verifies and records the approvals, the budget and the end.
fn check_served_ledger(scratch: &Scratch, id: &str) {
    rein()
        .args(["ledger", "verify", id, "--data-dir"])
        .arg(scratch.data())
        .assert()
        .success();
    let ledger = std::fs::read_to_string(scratch.ledger(id)).unwrap();
    for kind in [
        "\"approval_denied\"",
        "\"approval_granted\"",
        "\"budget_exhausted\"",
        "\"run_completed\"",
    ] {
        assert!(ledger.contains(kind), "the ledger records {kind}");
    }
}

#[test]
fn serve_governs_a_python_sdk_client_session_as_one_run() {
    let scratch = Scratch::new();
    let file = scratch.write("served.json", SERVED);
    let data = scratch.data();
    let outcome = python_client(&[
        "stdio".as_ref(),
        env!("CARGO_BIN_EXE_rein").as_ref(),
        file.as_os_str(),
        data.as_os_str(),
    ]);
    check_served(&outcome);
    // One session, one run, its ledger verified by `rein ledger verify`.
    let id = scratch.new_run_id(&[]);
    assert!(
        outcome
            .stderr
            .contains(&format!("session started run {id}")),
        "{}",
        outcome.stderr
    );
    check_served_ledger(&scratch, &id);
}

#[test]
fn serve_over_http_on_loopback_governs_a_python_sdk_client() {
    use std::io::BufRead as _;

    let scratch = Scratch::new();
    let file = scratch.write("served.json", SERVED);
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["mcp", "serve"])
        .arg(&file)
        .arg("--data-dir")
        .arg(scratch.data())
        .args(["--http", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("rein mcp serve: listening on ")
                .map(str::to_owned)
        })
        .expect("rein prints the URL it listens on");
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "loopback by default: {url}"
    );
    check_served(&python_client(&["http".as_ref(), url.as_ref()]));

    // The client ended its session: the run finishes (observed on stderr), then stop rein.
    let ended = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("rein mcp serve: run ")
                .and_then(|rest| rest.split_once(" ended"))
                .map(|(id, how)| (id.to_owned(), how.to_owned()))
        })
        .expect("the session's run ends");
    assert!(ended.1.contains("Completed"), "{ended:?}");
    let _ = server.kill();
    let _ = server.wait();
    check_served_ledger(&scratch, &ended.0);
}

#[test]
fn validate_starts_each_mcp_server_and_lists_the_tools_it_would_import() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "validate-mcp.json",
        &scenario(&json!({"kind": "mcp", "server": "notes", "command": notes_server()})),
    );
    Outcome::of(&rein().arg("validate").arg(&file).output().unwrap())
        .expect_code(0)
        .stdout_has(&[
            "valid ✓",
            "mcp server `notes`: 3 tools would be imported:",
            "notes.lookup",
            "notes.record",
        ]);
}

#[test]
fn validate_reports_a_server_that_does_not_start_or_handshake_naming_it() {
    let scratch = Scratch::new();
    let gone = scratch.write(
        "gone.json",
        &scenario(&json!({"kind": "mcp", "server": "notes", "command": ["/nonexistent/server"]})),
    );
    Outcome::of(&rein().arg("validate").arg(&gone).output().unwrap())
        .expect_code(2)
        .stderr_has(&[
            "gone.json",
            "mcp server `notes`",
            "could not start",
            "at: tools[0]",
            "--offline",
        ]);
    // Something listening that is no MCP server: port 9 (discard) refuses on loopback.
    let web = scratch.write(
        "web.json",
        &scenario(&json!({"kind": "mcp", "server": "notes", "url": "http://127.0.0.1:9/mcp", "handshake_timeout_ms": 5000})),
    );
    Outcome::of(&rein().arg("validate").arg(&web).output().unwrap())
        .expect_code(2)
        .stderr_has(&["mcp server `notes`", "did not complete the MCP handshake"]);
    // --offline checks the file without contacting the server.
    Outcome::of(
        &rein()
            .arg("validate")
            .arg(&gone)
            .arg("--offline")
            .output()
            .unwrap(),
    )
    .expect_code(0)
    .stdout_has(&["valid ✓", "mcp servers: notes (not contacted: --offline)"]);
}

/// A scenario whose MCP server gets one env value literally and one from rein's
/// environment; the run pauses for a human before it calls the server.
fn secret_scenario(env: &Value) -> String {
    json!({
        "goal": "use a server that needs tokens",
        "tools": [{"kind": "mcp", "server": "vault", "command": vault_server(&[]), "env": env}],
        "planner": {"scripted": [
            {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "go"}},
            {"expect": "explore", "decision": {"type": "ask_human", "question": "go on?", "options": ["yes"]}},
            {"expect": "explore", "decision": {"type": "call_tool", "tool": "vault.digests", "input": {}, "reason": "check"}},
            {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "done"}},
            {"expect": "decide", "decision": {"type": "finish", "summary": "checked"}}
        ]}
    })
    .to_string()
}

const LITERAL: &str = "lit-s3cret-4f1a";
const REFERENCED: &str = "ref-s3cret-9b2c";

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if std::fs::read(&path)
            .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(path);
        }
    }
    found
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn mcp_env_values_are_never_stored_and_a_resume_still_passes_them() {
    let scratch = Scratch::new();
    let env = json!({"LITERAL_TOKEN": LITERAL, "REF_TOKEN": {"from_env": "REIN_TEST_REF_TOKEN"}});
    let file = scratch.write("secrets.json", &secret_scenario(&env));
    let rein_with_token = || {
        let mut command = rein();
        command.env("REIN_TEST_REF_TOKEN", REFERENCED);
        command
    };
    let started = Outcome::of(
        &rein_with_token()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    started.expect_code(3);
    let id = scratch.new_run_id(&[]);
    // The stored copy keeps the reference and redacts the literal.
    let copy: Value = serde_json::from_str(
        &std::fs::read_to_string(scratch.data().join(format!("scenarios/{id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(
        copy["tools"][0]["env"],
        json!({"LITERAL_TOKEN": {"redacted": true}, "REF_TOKEN": {"from_env": "REIN_TEST_REF_TOKEN"}})
    );

    let resumed = Outcome::of(
        &rein_with_token()
            .args(["resume", &id, "--input", "yes", "--json", "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    resumed.expect_code(0);
    // The server got both values after the resume: their digests are in the ledger.
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(ledger.contains(&sha256_hex(LITERAL)), "literal not passed");
    assert!(
        ledger.contains(&sha256_hex(REFERENCED)),
        "reference not passed"
    );
    // No value anywhere: data directory (copy, ledger, snapshot), output, errors.
    for secret in [LITERAL, REFERENCED] {
        assert_eq!(
            files_holding(&scratch.data(), secret),
            Vec::<PathBuf>::new()
        );
        for text in [
            &started.stdout,
            &started.stderr,
            &resumed.stdout,
            &resumed.stderr,
        ] {
            assert!(!text.contains(secret), "{text}");
        }
    }
    rein()
        .args(["ledger", "verify", &id, "--data-dir"])
        .arg(scratch.data())
        .assert()
        .success();
}

#[test]
fn a_resume_whose_original_lost_a_literal_is_refused_naming_it() {
    let scratch = Scratch::new();
    let env = json!({"LITERAL_TOKEN": LITERAL});
    let file = scratch.write("secrets.json", &secret_scenario(&env));
    let data = scratch.data();
    Outcome::of(
        &rein()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(&data)
            .output()
            .unwrap(),
    )
    .expect_code(3);
    let id = scratch.new_run_id(&[]);
    scratch.write("secrets.json", &secret_scenario(&json!({})));
    Outcome::of(
        &rein()
            .args(["resume", &id, "--input", "yes", "--data-dir"])
            .arg(&data)
            .output()
            .unwrap(),
    )
    .expect_code(2)
    .stderr_has(&[
        "cannot be resumed",
        "MCP server `vault` had `env.LITERAL_TOKEN` written literally",
        "secrets.json",
        "from_env",
    ]);
    // A reference to a variable that is not set is refused before anything starts.
    let unset = scratch.write(
        "unset.json",
        &secret_scenario(&json!({"REF_TOKEN": {"from_env": "REIN_TEST_NEVER_SET"}})),
    );
    Outcome::of(&rein().arg("validate").arg(&unset).output().unwrap())
        .expect_code(2)
        .stderr_has(&[
            "REIN_TEST_NEVER_SET",
            "is not set",
            "at: tools[0].env.REF_TOKEN",
        ]);
}

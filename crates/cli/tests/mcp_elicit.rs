//! An MCP server's elicitation answered at rein's terminal (`"elicitation": {"from":
//! "terminal"}`), against the reference server `server-everything` (installed by `make
//! mcp-servers`; a missing install fails and says so).

mod support;

use serde_json::json;
use support::mcp::installed;
use support::{Outcome, Scratch, rein};

fn scenario(elicitation: &serde_json::Value) -> String {
    let server =
        installed("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    json!({
        "goal": "ask the person",
        "approver": "auto",
        "tools": [{"kind": "mcp", "server": "every", "command": ["node", server, "stdio"],
                   "handshake_timeout_ms": 60000, "elicitation": elicitation}],
        "planner": {"scripted": [
            {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "go"}},
            {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "go"}},
            {"expect": "decide", "decision": {"type": "transition", "to": "act", "reason": "ask"}},
            {"expect": "act", "decision": {"type": "call_tool", "tool": "every.trigger-elicitation-request", "input": {}, "reason": "ask"}},
            {"expect": "act", "decision": {"type": "transition", "to": "validate", "reason": "asked"}},
            {"expect": "validate", "decision": {"type": "finish", "summary": "asked", "result": {}}}
        ]}
    })
    .to_string()
}

/// `rein run FILE` with `stdin` written to its standard input.
fn run_with_stdin(scratch: &Scratch, file: &std::path::Path, stdin: &str) -> Outcome {
    let output = rein()
        .arg("run")
        .arg(file)
        .arg("--data-dir")
        .arg(scratch.data())
        .write_stdin(stdin)
        .output()
        .unwrap();
    Outcome::of(&output)
}

#[test]
fn a_server_question_is_asked_at_the_terminal_and_the_answer_reaches_the_tool() {
    let scratch = Scratch::new();
    let file = scratch.write("elicit.json", &scenario(&json!({"from": "terminal"})));
    let outcome = run_with_stdin(
        &scratch,
        &file,
        "{\"name\": \"Ada Lovelace\", \"check\": true}\n",
    );
    outcome.expect_code(0);
    assert!(
        outcome
            .stderr
            .contains("mcp server `every` asks: Please provide inputs"),
        "{}",
        outcome.stderr
    );
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(
        ledger.contains("Name: Ada Lovelace"),
        "the tool got the answer"
    );

    // Declined: the tool hears so, and nothing is given.
    let before = scratch.run_ids();
    let outcome = run_with_stdin(&scratch, &file, "decline\n");
    outcome.expect_code(0);
    let ledger = std::fs::read_to_string(scratch.ledger(&scratch.new_run_id(&before))).unwrap();
    assert!(
        ledger.contains("declined") && !ledger.contains("Name:"),
        "{ledger}"
    );
}

#[test]
fn serve_on_stdio_refuses_a_terminal_elicitation() {
    let scratch = Scratch::new();
    let file = scratch.write("elicit.json", &scenario(&json!({"from": "terminal"})));
    Outcome::of(
        &rein()
            .args(["mcp", "serve"])
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
    .expect_code(2)
    .stderr_has(&["elicitation from the terminal", "--http"]);
}

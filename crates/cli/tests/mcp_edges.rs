//! What crosses the line between rein and an MCP peer, and how rein answers what it cannot
//! take: the environment a stdio server gets, the name rein gives itself, operator overrides
//! as imported, `Origin` on `rein mcp serve --http`, a request nested too deep on stdio, the
//! words of a failed handshake, and the exit code of a tool schema the engine cannot compile.

mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::mcp::{http_server, notes_server, vault_server};
use support::{Outcome, Scratch, rein};

/// The first value under `key` anywhere in `value`.
fn find<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map
            .get(key)
            .or_else(|| map.values().find_map(|v| find(v, key))),
        Value::Array(items) => items.iter().find_map(|v| find(v, key)),
        _ => None,
    }
}

/// The structured content of every tool result in run `id`'s ledger, in order.
fn structured_results(scratch: &Scratch, id: &str) -> Vec<Value> {
    std::fs::read_to_string(scratch.ledger(id))
        .unwrap()
        .lines()
        .filter_map(|line| {
            let entry: Value = serde_json::from_str(line).unwrap();
            find(&entry, "structured_content").cloned()
        })
        .collect()
}

/// A scenario that calls the vault server's `tools` in explore, then finishes.
fn vault_scenario(server: &[String], env: &Value, tools: &[&str]) -> String {
    let mut script =
        vec![json!({"expect": "intake", "decision": {"type": "transition", "to": "explore"}})];
    for tool in tools {
        script.push(json!({"expect": "explore", "decision": {"type": "call_tool", "tool": tool, "input": {}}}));
    }
    script.push(json!({"expect": "explore", "decision": {"type": "transition", "to": "decide"}}));
    script.push(json!({"expect": "decide", "decision": {"type": "finish", "summary": "seen"}}));
    json!({
        "goal": "see what the server sees",
        "tools": [{"kind": "mcp", "server": "vault", "command": server, "env": env}],
        "planner": {"scripted": script}
    })
    .to_string()
}

const CANARY: &str = "REIN_TEST_CANARY_TOKEN";

#[test]
fn a_stdio_server_gets_a_minimal_environment_and_sees_rein_as_its_client() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "vault.json",
        &vault_scenario(
            &vault_server(&[]),
            &json!({"NAMED": "given"}),
            &["vault.environment", "vault.client"],
        ),
    );
    let outcome = Outcome::of(
        &rein()
            .env(CANARY, "canary-7d3e")
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(0);
    let id = scratch.new_run_id(&[]);
    let results = structured_results(&scratch, &id);
    let names: Vec<&str> = results[0]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(names.contains(&"NAMED"), "the scenario's env: {names:?}");
    assert!(names.contains(&"PATH"), "what a program needs: {names:?}");
    for absent in [CANARY, "CARGO_MANIFEST_DIR"] {
        assert!(!names.contains(&absent), "{absent} reached it: {names:?}");
    }
    assert_eq!(
        results[1],
        json!({"name": "rein", "version": env!("CARGO_PKG_VERSION")})
    );
}

#[test]
fn every_override_shows_in_what_rein_imports() {
    let scratch = Scratch::new();
    let tool = json!({
        "kind": "mcp", "server": "notes", "command": notes_server(),
        "overrides": {
            "lookup": {"idempotent": false},
            "record": {"idempotent": true, "destructive": false, "widen": true},
            "add": {"read_only": false, "open_world": true}
        }
    });
    let file = scratch.write(
        "overrides.json",
        &json!({"goal": "list", "tools": [tool], "planner": {"scripted": []}}).to_string(),
    );
    let outcome = Outcome::of(
        &rein()
            .args(["mcp", "list", "--json", "--scenario"])
            .arg(&file)
            .output()
            .unwrap(),
    );
    outcome.expect_code(0);
    let tools: Vec<Value> = serde_json::from_str(&outcome.stdout).unwrap();
    let annotations = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["annotations"].clone())
            .unwrap()
    };
    let lookup = annotations("notes.lookup");
    assert_eq!(
        (&lookup["read_only"], &lookup["idempotent"]),
        (&json!(true), &json!(false)),
        "{lookup}"
    );
    let record = annotations("notes.record");
    assert_eq!(
        (&record["destructive"], &record["idempotent"]),
        (&json!(false), &json!(true)),
        "{record}"
    );
    let add = annotations("notes.add");
    assert_eq!(add["read_only"], false, "{add}");
}

/// Starts `rein mcp serve FILE --http 0`; returns the child and the port it listens on.
fn serve_http(scratch: &Scratch, file: &std::path::Path) -> (std::process::Child, u16) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["mcp", "serve"])
        .arg(file)
        .arg("--data-dir")
        .arg(scratch.data())
        .args(["--http", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = server.stderr.take().unwrap();
    let url = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("rein mcp serve: listening on ")
                .map(str::to_owned)
        })
        .expect("rein prints the URL it listens on");
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    (server, port)
}

/// The status of an MCP `initialize` sent as a POST to 127.0.0.1:`port`, with `origin` if given.
fn initialize_status(port: u16, origin: Option<&str>) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let origin = origin.map_or_else(String::new, |o| format!("Origin: {o}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status).unwrap();
    status
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {status:?}"))
}

const SERVED: &str = r#"{
  "goal": "serve a lookup",
  "tools": [{"fixture": "lookup", "annotations": {"read_only": true}, "behavior": {"output": {"value": 42}}}],
  "planner": {"scripted": []}
}"#;

#[test]
fn serve_over_http_refuses_a_foreign_origin() {
    let scratch = Scratch::new();
    let file = scratch.write("served.json", SERVED);
    let (mut server, port) = serve_http(&scratch, &file);
    let evil = initialize_status(port, Some("http://evil.example"));
    let statuses = [
        initialize_status(port, None),
        initialize_status(port, Some(&format!("http://localhost:{port}"))),
        initialize_status(port, Some(&format!("http://127.0.0.1:{port}"))),
    ];
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(evil, 403, "a page elsewhere may not call rein");
    assert_eq!(statuses, [200, 200, 200], "no Origin, or a loopback one");
}

#[test]
fn serve_on_stdio_answers_a_request_nested_too_deep_with_an_error() {
    let scratch = Scratch::new();
    let file = scratch.write("served.json", SERVED);
    let mut server = Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["mcp", "serve"])
        .arg(&file)
        .arg("--data-dir")
        .arg(scratch.data())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"lookup","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(3000),
        "]".repeat(3000)
    );
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        deep,
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string(),
    ];
    let mut stdin = server.stdin.take().unwrap();
    for line in &lines {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    // Closing stdin ends the session: rein answers what it read, then exits.
    drop(stdin);
    let mut out = String::new();
    server
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(server.wait().unwrap().success());
    let answers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answer = |id: u64| answers.iter().find(|a| a["id"] == id);
    let deep = answer(2).unwrap_or_else(|| panic!("no answer to the deep request: {out}"));
    assert_eq!(deep["error"]["code"], -32600, "{deep}");
    let message = deep["error"]["message"].as_str().unwrap();
    assert!(message.contains("levels deep"), "{message}");
    assert!(
        answer(3).is_some_and(|a| a.get("result").is_some()),
        "{out}"
    );
}

/// A loopback HTTP server that answers every request with 401; returns its URL.
fn unauthorized_server() -> String {
    http_server(|_, _| (401, Value::Null))
}

/// A loopback MCP server over HTTP that completes the handshake and lists one read-only
/// tool, `peek`, then refuses every call of it with 401; returns its URL.
fn refusing_calls_server() -> String {
    http_server(|method, body| {
        let id = body.get("id").cloned();
        let result = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        match (method, body["method"].as_str()) {
            ("POST", Some("initialize")) => (
                200,
                result(
                    json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake", "version": "1"}}),
                ),
            ),
            ("POST", Some("tools/list")) => (
                200,
                result(
                    json!({"tools": [{"name": "peek", "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": true, "openWorldHint": false}}]}),
                ),
            ),
            ("POST", Some("tools/call")) => (401, Value::Null),
            ("POST", _) if id.is_none() => (202, Value::Null),
            ("POST", _) => (
                200,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}),
            ),
            _ => (405, Value::Null),
        }
    })
}

#[test]
fn credentials_refused_mid_run_fail_the_call_once_naming_the_fix() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "refusing.json",
        &json!({
            "goal": "peek",
            "tools": [{"kind": "mcp", "server": "web", "url": refusing_calls_server()}],
            "planner": {"scripted": [
                {"expect": "intake", "decision": {"type": "transition", "to": "explore"}},
                {"expect": "explore", "decision": {"type": "call_tool", "tool": "web.peek", "input": {}}}
            ]}
        })
        .to_string(),
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
    assert_ne!(outcome.code, 0, "{}", outcome.stderr);
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    let errors: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|entry| entry.to_string().contains(r#""type":"tool_error""#))
        .collect();
    assert_eq!(errors.len(), 1, "not retried: {errors:?}");
    let error = errors[0].to_string();
    assert!(
        error.contains("HTTP 401") && error.contains("`headers`"),
        "{error}"
    );
}

#[test]
fn a_failed_handshake_says_what_happened_without_library_internals() {
    let list = |spec: &[&str]| {
        Outcome::of(
            &rein()
                .args(["mcp", "list", "--server", "web"])
                .args(spec)
                .output()
                .unwrap(),
        )
    };
    let refused = list(&[&unauthorized_server()]);
    refused
        .expect_code(2)
        .stderr_has(&["mcp server `web`", "HTTP 401", "`headers`"]);
    assert!(
        !refused.stderr.contains("check that it is an MCP server"),
        "{}",
        refused.stderr
    );
    // Credentials in the URL are not repeated.
    let closed = list(&["http://user:p4ss@127.0.0.1:9/mcp?key=t0ken"]);
    closed
        .expect_code(2)
        .stderr_has(&["Connection refused", "http://***@127.0.0.1:9/mcp?***"]);
    for secret in ["p4ss", "t0ken"] {
        assert!(!closed.stderr.contains(secret), "{}", closed.stderr);
    }
    let exited = list(&["--", "/bin/sh", "-c", "echo gone for good >&2; exit 3"]);
    exited
        .expect_code(2)
        .stderr_has(&["connection closed", "gone for good"]);
    for outcome in [&refused, &closed, &exited] {
        assert!(!outcome.stderr.contains("rmcp"), "{}", outcome.stderr);
    }
}

#[test]
fn a_tool_schema_referring_to_a_url_or_a_file_is_bad_input_for_run_as_for_validate() {
    let scratch = Scratch::new();
    for (name, reference) in [
        ("url.json", "https://example.com/schema.json"),
        ("file.json", "file:///etc/passwd"),
    ] {
        let file = scratch.write(
            name,
            &vault_scenario(
                &vault_server(&["--ref", reference]),
                &json!({}),
                &["vault.environment"],
            ),
        );
        let run = rein()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap();
        let validate = rein().arg("validate").arg(&file).output().unwrap();
        for outcome in [run, validate] {
            Outcome::of(&outcome)
                .expect_code(2)
                .stderr_has(&["vault.digests", "not a valid JSON Schema"]);
        }
    }
    assert!(scratch.run_ids().is_empty(), "no run was started");
}

#[test]
fn a_server_gets_the_workspace_as_its_root_and_a_reason_for_no_sampling_or_elicitation() {
    let scratch = Scratch::new();
    let mut scenario: Value = serde_json::from_str(&vault_scenario(
        &vault_server(&[]),
        &json!({}),
        &["vault.roots", "vault.ask", "vault.sample"],
    ))
    .unwrap();
    scenario["workspace"] = json!("work dir");
    let file = scratch.write("asks.json", &scenario.to_string());
    let workspace = file.parent().unwrap().join("work dir");
    std::fs::create_dir(&workspace).unwrap();
    Outcome::of(
        &rein()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
    .expect_code(0);
    let id = scratch.new_run_id(&[]);
    let results = structured_results(&scratch, &id);
    let canonical = workspace.canonicalize().unwrap();
    let uri = format!("file://{}", canonical.to_str().unwrap().replace(' ', "%20"));
    assert_eq!(results[0], json!({"uris": [uri]}));
    let refusal = |result: &Value| result["error"].as_str().unwrap_or_default().to_owned();
    assert!(
        refusal(&results[1]).contains("rein answers no elicitation"),
        "{}",
        results[1]
    );
    assert!(
        refusal(&results[2]).contains("rein offers no sampling"),
        "{}",
        results[2]
    );
}

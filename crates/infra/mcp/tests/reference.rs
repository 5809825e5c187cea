//! Against MCP servers nobody here wrote: the reference servers `server-everything` and
//! `server-filesystem` from npm (run with the machine's Node.js) and a server written with
//! the official Python SDK (`tests/servers/notes_server.py`, stdio and streamable HTTP).
//! All are installed by `make mcp-servers` under `target/mcp`; a test that cannot find them
//! fails and says so.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rein_engine::Engine;
use rein_mcp::{McpServer, ServerConfig};
use rein_planner::{ScriptStep, ScriptedPlanner};
use rein_policy::AutoApprover;
use rein_run::{Decision, RunStatus, State};
use rein_tool::{RiskLevel, Tool};
use serde_json::json;

/// `target/mcp` of the workspace, where `make mcp-servers` installs.
fn installed(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../target/mcp")
        .join(rel);
    assert!(
        path.exists(),
        "{} is missing: run `make mcp-servers` (it installs the pinned MCP servers under target/mcp)",
        path.display()
    );
    path
}

fn node_server(package: &str, args: &[&str]) -> Vec<String> {
    let script = installed(&format!(
        "npm/node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    let mut command = vec!["node".to_owned(), script.display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    command
}

fn python() -> String {
    installed("venv/bin/python").display().to_string()
}

fn notes_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/servers/notes_server.py")
        .display()
        .to_string()
}

async fn connect(name: &str, command: Vec<String>) -> McpServer {
    let config = ServerConfig::stdio(name.parse().expect("name"), command)
        .with_handshake_timeout(Duration::from_secs(60));
    McpServer::connect(config)
        .await
        .expect("the server connects")
}

fn annotations_of(server: &McpServer, remote: &str) -> rein_tool::Annotations {
    server
        .imported()
        .iter()
        .find(|t| t.remote_name() == remote)
        .map_or_else(|| panic!("{remote} was imported"), |t| *t.annotations())
}

#[tokio::test]
async fn server_everything_tools_are_imported_with_their_hints() {
    let server = connect("every", node_server("server-everything", &["stdio"])).await;
    let names: Vec<String> = server
        .imported()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    for expected in [
        "every.echo",
        "every.get-sum",
        "every.get-tiny-image",
        "every.gzip-file-as-resource",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let echo = annotations_of(&server, "echo");
    assert!(echo.is_read_only() && echo.is_idempotent());
    assert_eq!(echo.risk_level(), RiskLevel::Low);
    let gzip = annotations_of(&server, "gzip-file-as-resource");
    assert!(!gzip.is_read_only() && !gzip.is_destructive() && gzip.is_idempotent());
    assert_eq!(gzip.risk_level(), RiskLevel::Medium, "open world");

    let tools = server.tools();
    let call = |remote: &str| {
        tools
            .iter()
            .find(|t| t.remote_name() == remote)
            .cloned()
            .expect("tool")
    };
    let sum = call("get-sum")
        .call(json!({"a": 2, "b": 40}))
        .await
        .expect("sum");
    let text = sum.value()["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("42"), "{text}");
    let image = call("get-tiny-image").call(json!({})).await.expect("image");
    let blocks = image.value()["content"].as_array().expect("blocks");
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "image" && b["mimeType"] == "image/png"),
        "{blocks:?}"
    );
    // The image's bytes are an attachment (an artifact once the engine stores it), which
    // the inline block names instead of carrying base64.
    let block = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .expect("an image");
    assert!(block.get("data").is_none(), "{block}");
    let name = block["attachment"].as_str().expect("names its attachment");
    let png = image
        .attachments()
        .iter()
        .find(|a| a.name() == name)
        .expect("the attachment");
    assert_eq!(png.media_type(), "image/png");
    assert!(png.bytes().starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert_eq!(block["size"], png.bytes().len());

    // An embedded resource becomes an attachment of its own, too.
    let reference = call("get-resource-reference")
        .call(json!({"resourceType": "Text", "resourceId": 2}))
        .await
        .expect("resource");
    let blocks = reference.value()["content"].as_array().expect("blocks");
    let block = blocks
        .iter()
        .find(|b| b["type"] == "resource")
        .unwrap_or_else(|| panic!("a resource block: {blocks:?}"));
    assert!(
        block["uri"].as_str().is_some_and(|u| u.contains('2')),
        "{block}"
    );
    let name = block["attachment"].as_str().expect("names its attachment");
    let text = reference
        .attachments()
        .iter()
        .find(|a| a.name() == name)
        .expect("the attachment");
    assert!(!text.bytes().is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn a_scripted_agent_reads_in_explore_and_writes_in_act_through_server_filesystem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("in.txt"), "forty-two").expect("write input");
    let server = connect(
        "fs",
        node_server("server-filesystem", &[&root.display().to_string()]),
    )
    .await;
    let read = annotations_of(&server, "read_text_file");
    assert!(read.is_read_only() && read.risk_level() == RiskLevel::Low);
    let write = annotations_of(&server, "write_file");
    assert!(!write.is_read_only() && write.is_destructive() && write.is_idempotent());
    let mv = annotations_of(&server, "move_file");
    assert!(mv.is_destructive() && !mv.is_idempotent());

    let input = root.join("in.txt").display().to_string();
    let output = root.join("out.txt").display().to_string();
    let mut builder = Engine::builder();
    for t in server.tools() {
        builder = builder.tool(t);
    }
    let engine = builder
        .approver(AutoApprover)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "look")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool(
                    "fs.read_text_file",
                    json!({"path": input}),
                    "read the input",
                ),
            ),
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Decide, "read it"),
            ),
            ScriptStep::expect(State::Decide, Decision::transition(State::Act, "write it")),
            ScriptStep::expect(
                State::Act,
                Decision::call_tool(
                    "fs.write_file",
                    json!({"path": output, "content": "the answer is forty-two"}),
                    "write the result",
                ),
            ),
            ScriptStep::expect(State::Act, Decision::transition(State::Validate, "written")),
            ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("copy with a comment").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt")).expect("written"),
        "the answer is forty-two"
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    let kinds: Vec<&str> = ledger.entries().iter().map(|e| e.event().name()).collect();
    let approved = kinds
        .iter()
        .position(|k| *k == "approval_granted")
        .expect("approved");
    let requested = kinds
        .iter()
        .position(|k| *k == "approval_requested")
        .expect("asked");
    assert!(requested < approved, "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool_result").count(),
        2,
        "{kinds:?}"
    );

    // The same write proposed in explore is refused before it reaches the server.
    let mut builder = Engine::builder();
    for t in server.tools() {
        builder = builder.tool(t);
    }
    let engine = builder
        .approver(AutoApprover)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "look")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool(
                    "fs.write_file",
                    json!({"path": root.join("sneaky.txt").display().to_string(), "content": "x"}),
                    "write early",
                ),
            ),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("write in explore").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert!(
        !root.join("sneaky.txt").exists(),
        "the server was never called"
    );
    engine
        .ledger(run.id())
        .await
        .expect("ledger")
        .verify()
        .expect("verifies");
    server.shutdown().await;
}

#[tokio::test]
async fn a_python_sdk_server_over_stdio_is_governed_like_any_other() {
    let server = connect("notes", vec![python(), notes_script()]).await;
    let lookup = annotations_of(&server, "lookup");
    assert!(lookup.is_read_only() && lookup.risk_level() == RiskLevel::Low);
    // No hints at all: MCP's defaults — not read-only, destructive, not idempotent.
    let record = annotations_of(&server, "record");
    assert!(!record.is_read_only() && record.is_destructive() && !record.is_idempotent());

    let mut builder = Engine::builder();
    for t in server.tools() {
        builder = builder.tool(t);
    }
    let engine = builder
        .approver(AutoApprover)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "look")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("notes.add", json!({"a": 40, "b": 2}), "add"),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "sum")),
            ScriptStep::expect(State::Decide, Decision::transition(State::Act, "record")),
            ScriptStep::expect(
                State::Act,
                Decision::call_tool(
                    "notes.record",
                    json!({"key": "sum", "text": "42"}),
                    "keep it",
                ),
            ),
            ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
            ScriptStep::expect(
                State::Validate,
                Decision::call_tool("notes.lookup", json!({"key": "sum"}), "read back"),
            ),
            ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("add and record").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    let outputs: Vec<String> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            rein_run::EvidenceKind::ToolResult {
                output: rein_run::Payload::Inline(v),
                ..
            } => Some(v.to_string()),
            _ => None,
        })
        .collect();
    assert!(outputs[0].contains("\"sum\":42"), "{outputs:?}");
    assert!(outputs[2].contains("42"), "{outputs:?}");

    // A tool error from the Python server (`isError`) is a typed, non-transient failure.
    let lookup = server
        .tools()
        .into_iter()
        .find(|t| t.remote_name() == "lookup")
        .expect("lookup");
    let err = lookup.call(json!({"key": "missing"})).await.unwrap_err();
    assert!(
        !err.is_transient() && err.to_string().contains("no note"),
        "{err}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_python_sdk_server_over_streamable_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(python())
        .args([notes_script(), "--http".to_owned(), port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    // Wait for the server to say it listens (observed, not timed).
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("Uvicorn running on"));
    assert!(ready, "the python server did not start");
    std::thread::spawn(move || lines.for_each(drop));

    let config = ServerConfig::http(
        "web".parse().expect("name"),
        format!("http://127.0.0.1:{port}/mcp"),
    )
    .with_handshake_timeout(Duration::from_secs(30));
    let server = McpServer::connect(config)
        .await
        .expect("connects over http");
    let add = server
        .tools()
        .into_iter()
        .find(|t| t.remote_name() == "add")
        .expect("add");
    assert_eq!(add.spec().name().as_str(), "web.add");
    let out = add.call(json!({"a": 1, "b": 2})).await.expect("adds");
    assert_eq!(out.value()["structured_content"], json!({"sum": 3}));
    server.shutdown().await;
    let _ = child.kill();
    let _ = child.wait();
}

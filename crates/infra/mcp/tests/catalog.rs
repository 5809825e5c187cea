//! Resources and prompts imported as tools, against the reference server
//! `server-everything` (installed by `make mcp-servers` under `target/mcp`; a missing
//! install fails and says so), and a server with neither (the in-repo test server).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rein_engine::Engine;
use rein_mcp::{McpServer, ServerConfig};
use rein_planner::{ScriptStep, ScriptedPlanner};
use rein_policy::AutoApprover;
use rein_run::{Decision, RunStatus, State};
use rein_tool::{RiskLevel, Tool};
use serde_json::json;

fn everything() -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../target/mcp/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "{} is missing: run `make mcp-servers` (it installs the pinned MCP servers under target/mcp)",
        script.display()
    );
    vec![
        "node".to_owned(),
        script.display().to_string(),
        "stdio".to_owned(),
    ]
}

async fn connect(config: ServerConfig) -> McpServer {
    McpServer::connect(config.with_handshake_timeout(Duration::from_secs(60)))
        .await
        .expect("the server connects")
}

fn tool(server: &McpServer, name: &str) -> rein_mcp::McpTool {
    server
        .tools()
        .into_iter()
        .find(|t| t.spec().name().as_str() == name)
        .unwrap_or_else(|| panic!("{name} was imported"))
}

#[tokio::test]
async fn server_everything_resources_are_read_through_a_read_only_tool() {
    let server = connect(ServerConfig::stdio("every".parse().unwrap(), everything())).await;
    let read = tool(&server, "every.read_resource");
    let imported = server
        .imported()
        .iter()
        .find(|t| t.name().as_str() == "every.read_resource")
        .cloned()
        .expect("imported");
    assert_eq!(imported.remote_name(), "resources/read");
    let a = imported.annotations();
    assert!(a.is_read_only() && a.is_idempotent() && !a.is_destructive());
    assert_eq!(a.risk_level(), RiskLevel::Low);
    let description = read.spec().description();
    for listed in [
        "demo://resource/static/document/architecture.md",
        "demo://resource/dynamic/text/{resourceId}",
    ] {
        assert!(description.contains(listed), "{listed} in {description}");
    }

    let doc = read
        .call(json!({"uri": "demo://resource/static/document/architecture.md"}))
        .await
        .expect("read");
    let contents = &doc.value()["contents"][0];
    assert_eq!(contents["mimeType"], "text/markdown");
    assert!(
        contents["text"].as_str().is_some_and(|t| t.len() > 100),
        "{contents}"
    );

    // A templated text resource, and a binary one, which becomes an attachment.
    let text = read
        .call(json!({"uri": "demo://resource/dynamic/text/7"}))
        .await
        .expect("read");
    let shown = text.value()["contents"][0]["text"].as_str().expect("text");
    assert!(shown.starts_with("Resource 7:"), "{shown}");
    let blob = read
        .call(json!({"uri": "demo://resource/dynamic/blob/3"}))
        .await
        .expect("read");
    let stub = &blob.value()["contents"][0];
    let name = stub["attachment"].as_str().expect("names its attachment");
    assert!(
        blob.attachments().iter().any(|a| a.name() == name),
        "{stub}"
    );

    let missing = read.call(json!({"uri": "demo://nowhere/1"})).await;
    assert!(missing.is_err(), "{missing:?}");
    let bad = read
        .call(json!({"url": "demo://x"}))
        .await
        .expect_err("refused");
    assert!(bad.to_string().contains("`uri`"), "{bad}");
    server.shutdown().await;
}

#[tokio::test]
async fn server_everything_prompts_are_got_through_a_read_only_tool() {
    let server = connect(ServerConfig::stdio("every".parse().unwrap(), everything())).await;
    let get = tool(&server, "every.get_prompt");
    assert!(get.spec().annotations().is_read_only());
    let description = get.spec().description();
    assert!(
        description.contains("args-prompt(city, state?)"),
        "{description}"
    );
    assert!(description.contains("simple-prompt()"), "{description}");

    let filled = get
        .call(json!({"name": "args-prompt", "arguments": {"city": "Paris"}}))
        .await
        .expect("got");
    let message = &filled.value()["messages"][0];
    assert_eq!(message["role"], "user");
    assert_eq!(message["content"]["text"], "What's weather in Paris?");
    let unknown = get.call(json!({"name": "no-such-prompt"})).await;
    assert!(unknown.is_err(), "{unknown:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_resource_is_read_in_explore_under_the_engine_and_can_be_left_out() {
    let server = connect(ServerConfig::stdio("every".parse().unwrap(), everything())).await;
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
                    "every.read_resource",
                    json!({"uri": "demo://resource/dynamic/text/1"}),
                    "read it",
                ),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "read")),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("read a resource").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    let kinds: Vec<&str> = ledger.entries().iter().map(|e| e.event().name()).collect();
    assert!(kinds.contains(&"tool_result"), "{kinds:?}");
    server.shutdown().await;

    let config = ServerConfig::stdio("every".parse().unwrap(), everything())
        .without_tool("resources/read")
        .without_tool("prompts/get");
    let server = connect(config).await;
    let names: Vec<String> = server
        .imported()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n == "every.read_resource" || n == "every.get_prompt"),
        "{names:?}"
    );
    server.shutdown().await;
}

fn test_server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rein-mcp-test-server"))
}

#[tokio::test]
async fn a_server_without_resources_or_prompts_gets_neither_tool() {
    let server = connect(ServerConfig::stdio(
        "t".parse().unwrap(),
        [test_server().display().to_string()],
    ))
    .await;
    assert!(
        server
            .imported()
            .iter()
            .all(|t| !["t.read_resource", "t.get_prompt"].contains(&t.name().as_str()))
    );
    server.shutdown().await;
}

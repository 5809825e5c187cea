//! An operator's annotation overrides reach the engine's resilience stack: a read-only tool
//! that fails transiently is retried, and the same tool marked `"idempotent": false` is
//! called once (against the in-repo rmcp server, `rein-mcp-test-server`).

use std::time::Duration;

use rein_engine::Engine;
use rein_mcp::{AnnotationOverride, McpServer, ServerConfig};
use rein_planner::{ScriptStep, ScriptedPlanner};
use rein_run::{Decision, RunStatus, State};
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_rein-mcp-test-server");

/// The attempts (their numbers) the engine made at `srv.crash` (a read-only tool whose
/// server dies mid-call: a transient error) with `overrides` on it.
async fn crash_attempts(overrides: AnnotationOverride) -> Vec<u32> {
    let config = ServerConfig::stdio("srv".parse().expect("valid name"), [SERVER])
        .with_handshake_timeout(Duration::from_secs(20))
        .with_restart_backoff(Duration::from_millis(1))
        .with_tool_annotations("crash", overrides);
    let server = McpServer::connect(config).await.expect("connects");
    let crash = server
        .imported()
        .iter()
        .find(|t| t.remote_name() == "crash")
        .map(|t| *t.annotations())
        .expect("imported");
    assert!(crash.is_read_only(), "the override keeps it read-only");
    let mut builder = Engine::builder();
    for tool in server.tools() {
        builder = builder.tool(tool);
    }
    let engine = builder
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("srv.crash", json!({}), "crash"),
            ),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("crash").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    server.shutdown().await;
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            rein_ledger::EntryKind::ToolError { attempt, error, .. } => {
                assert!(error.is_transient(), "{error}");
                Some(*attempt)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_read_only_tool_marked_not_idempotent_is_not_retried() {
    assert_eq!(
        crash_attempts(AnnotationOverride::none()).await,
        [1, 2, 3],
        "a read-only tool is idempotent: retried"
    );
    let once = AnnotationOverride {
        idempotent: Some(false),
        ..AnnotationOverride::none()
    };
    assert_eq!(crash_attempts(once).await, [1], "called once");
}

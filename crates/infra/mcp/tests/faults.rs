//! Import and faults against the in-repo rmcp server (`rein-mcp-test-server`): every page
//! listed, hints mapped, results converted, and a server that crashes, hangs, answers
//! garbage, returns 10 MB, has an invalid schema, collides or changes its list mid-run
//! turns into a typed error or a refreshed table — and shutdown leaves no zombie.

use std::num::NonZeroU32;
use std::time::Duration;

use rein_engine::Engine;
use rein_mcp::{AnnotationOverride, McpError, McpServer, McpTool, ServerConfig};
use rein_planner::{ScriptStep, ScriptedPlanner};
use rein_resilience::{BreakerConfig, ResilienceConfig, RetryConfig, ToolOverrides};
use rein_run::{Decision, EvidenceKind, Payload, RunStatus, State};
use rein_tool::{RiskLevel, Tool, ToolError, ToolName};
use serde_json::{Value, json};

const SERVER: &str = env!("CARGO_BIN_EXE_rein-mcp-test-server");

fn config(flags: &[&str]) -> ServerConfig {
    let mut command = vec![SERVER.to_owned()];
    command.extend(flags.iter().map(|f| (*f).to_owned()));
    ServerConfig::stdio("srv".parse().expect("valid name"), command)
        .with_handshake_timeout(Duration::from_secs(20))
}

async fn connect(flags: &[&str]) -> McpServer {
    McpServer::connect(config(flags))
        .await
        .expect("the test server connects")
}

fn tool(server: &McpServer, remote: &str) -> McpTool {
    server
        .tools()
        .into_iter()
        .find(|t| t.remote_name() == remote)
        .unwrap_or_else(|| panic!("no tool {remote}"))
}

/// Whether the process `pid` still exists (a zombie counts: it was not reaped).
fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn imports_every_page_with_derived_annotations() {
    let server = connect(&[]).await;
    let names: Vec<String> = server
        .imported()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    // Nine tools in pages of three: all pages were read.
    assert_eq!(
        names,
        [
            "srv.echo",
            "srv.write_note",
            "srv.fail",
            "srv.big",
            "srv.crash",
            "srv.hang",
            "srv.garbage",
            "srv.grow",
            "srv.count"
        ]
    );
    let by = |n: &str| {
        server
            .imported()
            .iter()
            .find(|t| t.remote_name() == n)
            .map(|t| *t.annotations())
            .expect("imported")
    };
    let echo = by("echo");
    assert!(echo.is_read_only() && echo.is_idempotent());
    assert_eq!(echo.risk_level(), RiskLevel::Low, "closed world read");
    let note = by("write_note");
    assert!(!note.is_read_only() && note.is_destructive() && !note.is_idempotent());
    let grow = by("grow");
    assert!(!grow.is_read_only() && !grow.is_destructive() && grow.is_idempotent());
    server.shutdown().await;
}

#[tokio::test]
async fn results_become_outputs_and_is_error_a_failure() {
    let server = connect(&[]).await;
    let out = tool(&server, "echo")
        .call(json!({"text": "hi"}))
        .await
        .expect("echo answers");
    assert_eq!(out.value()["content"][0]["text"], "hi");
    assert_eq!(out.value()["structured_content"], json!({"echo": "hi"}));

    let err = tool(&server, "fail")
        .call(json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(!err.is_transient());
    assert!(
        err.to_string().contains("cannot do \\\"x\\\"")
            || err.to_string().contains("cannot do \"x\""),
        "{err}"
    );

    let err = tool(&server, "echo").call(json!([1])).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidInput { .. }), "{err}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_ten_megabyte_result_arrives_whole() {
    let server = connect(&[]).await;
    let out = tool(&server, "big")
        .call(json!({}))
        .await
        .expect("big answers");
    let text = out.value()["content"][0]["text"].as_str().expect("text");
    assert_eq!(text.len(), 10 * 1024 * 1024);
    server.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_transient_with_stderr_and_restarts_after_backoff() {
    let server = McpServer::connect(config(&[]).with_restart_backoff(Duration::from_secs(3600)))
        .await
        .expect("connects");
    let first = server.child_pid().await.expect("a child");
    let err = tool(&server, "crash").call(json!({})).await.unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(
        err.to_string().contains("crashing on purpose"),
        "stderr in the message: {err}"
    );
    assert!(!process_exists(first), "the dead child was reaped");
    // The backoff (an hour here) holds: no restart, however often it is called.
    for _ in 0..3 {
        let err = tool(&server, "count").call(json!({})).await.unwrap_err();
        assert!(
            err.is_transient() && err.to_string().contains("will be restarted in"),
            "{err}"
        );
    }
    assert_eq!(
        server.child_pid().await,
        None,
        "nothing was spawned during the backoff"
    );
    server.shutdown().await;

    // With a short backoff, the call after it restarts the server.
    let server = McpServer::connect(config(&[]).with_restart_backoff(Duration::from_millis(10)))
        .await
        .expect("connects");
    let first = server.child_pid().await.expect("a child");
    tool(&server, "crash").call(json!({})).await.unwrap_err();
    let due = server.restart_due().await.expect("a restart is scheduled");
    tokio::time::sleep_until(due).await;
    let out = tool(&server, "count")
        .call(json!({}))
        .await
        .expect("restarted");
    assert_eq!(
        out.value()["content"][0]["text"],
        "1",
        "a fresh process served it"
    );
    let second = server.child_pid().await.expect("a new child");
    assert_ne!(first, second);
    server.shutdown().await;
    assert!(!process_exists(second), "shutdown reaped the child");
}

#[tokio::test]
async fn hangs_and_garbage_time_out_in_the_engine_and_the_breaker_counts_them() {
    let server = connect(&[]).await;
    let hang: ToolName = "srv.hang".parse().expect("name");
    let garbage: ToolName = "srv.garbage".parse().expect("name");
    let short = ToolOverrides {
        timeout: Some(Duration::from_millis(300)),
        ..ToolOverrides::default()
    };
    let mut builder = Engine::builder();
    for t in server.tools() {
        builder = builder.tool(t);
    }
    let engine = builder
        .resilience(
            ResilienceConfig {
                retry: RetryConfig::disabled(),
                breaker: BreakerConfig {
                    consecutive_failures: NonZeroU32::new(2).expect("non-zero"),
                    open_for: Duration::from_secs(3600),
                },
                ..ResilienceConfig::default()
            }
            .with_override(hang.clone(), short)
            .with_override(garbage.clone(), short),
        )
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("srv.hang", json!({}), "hang"),
            ),
        ]))
        .build()
        .expect("engine builds");
    let mut errors = Vec::new();
    for _ in 0..3 {
        let run = engine.run("hang").await.expect("run");
        assert_eq!(run.status(), RunStatus::Failed);
        let ledger = engine.ledger(run.id()).await.expect("ledger");
        ledger.verify().expect("the ledger verifies");
        errors.extend(ledger.entries().iter().filter_map(|e| match e.event() {
            rein_ledger::EntryKind::ToolError { error, .. } => Some(error.clone()),
            _ => None,
        }));
    }
    assert!(
        matches!(errors[0], ToolError::TimedOut { .. }),
        "{errors:?}"
    );
    assert!(
        matches!(errors[1], ToolError::TimedOut { .. }),
        "{errors:?}"
    );
    assert!(
        matches!(errors[2], ToolError::CircuitOpen { .. }),
        "{errors:?}"
    );

    // Garbage on stdout is skipped by the transport: the call never gets an answer.
    let err = tokio::time::timeout(
        Duration::from_millis(300),
        tool(&server, "garbage").call(json!({})),
    )
    .await;
    assert!(err.is_err(), "no answer to a garbage reply");
    // The session survives garbage: the next call is answered.
    tool(&server, "echo")
        .call(json!({"text": "still here"}))
        .await
        .expect("alive");
    server.shutdown().await;
}

#[tokio::test]
async fn large_results_go_to_the_artifact_store_through_the_engine() {
    let server = connect(&[]).await;
    let mut builder = Engine::builder();
    for t in server.tools() {
        builder = builder.tool(t);
    }
    let engine = builder
        .inline_output_limit(64 * 1024)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("srv.big", json!({}), "big"),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("big").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed);
    let artifact = run.evidence().iter().find_map(|e| match &e.kind {
        EvidenceKind::ToolResult {
            output: Payload::Artifact(link),
            ..
        } => Some(link.clone()),
        _ => None,
    });
    let link = artifact.expect("the 10 MB output is an artifact");
    assert!(link.size > 10 * 1024 * 1024, "{link:?}");
    engine
        .ledger(run.id())
        .await
        .expect("ledger")
        .verify()
        .expect("verifies");
    server.shutdown().await;
}

#[tokio::test]
async fn invalid_schemas_collisions_and_unknown_overrides_are_typed_errors() {
    let err = McpServer::connect(config(&["--invalid-schema"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::InvalidSchema { tool, .. } if tool == "bad_schema"),
        "{err}"
    );
    assert!(err.to_string().contains("`exclude`"), "{err}");
    // Leaving the tool out is the fix.
    let server = McpServer::connect(config(&["--invalid-schema"]).without_tool("bad_schema"))
        .await
        .expect("connects without the bad tool");
    assert!(
        server
            .imported()
            .iter()
            .all(|t| t.remote_name() != "bad_schema")
    );
    server.shutdown().await;

    let err = McpServer::connect(config(&["--collide"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::Collision { first, second, name, .. }
            if first == "a b" && second == "a_b" && name == "srv.a_b"),
        "{err}"
    );
    let server = McpServer::connect(config(&["--collide"]).without_tool("a_b"))
        .await
        .expect("connects");
    let mapped = server
        .imported()
        .iter()
        .find(|t| t.remote_name() == "a b")
        .cloned()
        .expect("the mapped tool is kept");
    assert!(mapped.was_mapped());
    assert_eq!(mapped.name().as_str(), "srv.a_b");
    server.shutdown().await;

    let err = McpServer::connect(config(&[]).without_tool("nope"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::UnknownTool { tool, .. } if tool == "nope"),
        "{err}"
    );
    let widen = AnnotationOverride {
        read_only: Some(true),
        ..AnnotationOverride::none()
    };
    let err = McpServer::connect(config(&[]).with_tool_annotations("write_note", widen))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::Widening { tool, .. } if tool == "write_note"),
        "{err}"
    );
    let server = McpServer::connect(config(&[]).with_tool_annotations(
        "write_note",
        AnnotationOverride {
            widen: true,
            ..widen
        },
    ))
    .await
    .expect("an explicit widening is accepted");
    let note = server
        .imported()
        .iter()
        .find(|t| t.remote_name() == "write_note")
        .map(|t| *t.annotations())
        .expect("imported");
    assert!(note.is_read_only());
    server.shutdown().await;
}

#[tokio::test]
async fn servers_that_do_not_start_or_answer_are_typed_errors_naming_the_server() {
    let missing = ServerConfig::stdio("gone".parse().expect("name"), ["/nonexistent/mcp-server"]);
    let err = McpServer::connect(missing).await.unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }), "{err}");
    assert_eq!(err.server().as_str(), "gone");
    assert!(err.to_string().contains("make mcp-servers"), "{err}");

    let err = McpServer::connect(config(&["--exit"])).await.unwrap_err();
    assert!(matches!(err, McpError::Handshake { .. }), "{err}");
    assert!(
        err.to_string().contains("exiting at start"),
        "stderr: {err}"
    );

    let silent = config(&["--silent"]).with_handshake_timeout(Duration::from_millis(500));
    let err = McpServer::connect(silent).await.unwrap_err();
    assert!(matches!(err, McpError::HandshakeTimeout { .. }), "{err}");

    let unreachable = ServerConfig::http("web".parse().expect("name"), "http://127.0.0.1:9/mcp")
        .with_handshake_timeout(Duration::from_secs(5));
    let err = McpServer::connect(unreachable).await.unwrap_err();
    assert!(
        matches!(
            err,
            McpError::Handshake { .. } | McpError::HandshakeTimeout { .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("`web`"), "{err}");
}

#[tokio::test]
async fn a_list_change_refreshes_the_table_for_new_engines_only() {
    let server = connect(&[]).await;
    let mut builder = Engine::builder();
    for t in server.tools() {
        builder = builder.tool(t);
    }
    let engine = builder
        .planner(ScriptedPlanner::new([]))
        .build()
        .expect("builds");
    let before = engine.tools().len();
    let seen = server.list_changes();
    tool(&server, "grow").call(json!({})).await.expect("grows");
    server.list_changed_after(seen).await;
    assert_eq!(
        engine.tools().len(),
        before,
        "the built engine keeps its tools"
    );
    assert!(
        server.refresh().await.expect("relists"),
        "the table changed"
    );
    assert!(
        server
            .imported()
            .iter()
            .any(|t| t.name().as_str() == "srv.extra")
    );
    let out = tool(&server, "extra")
        .call(json!({"text": "new"}))
        .await
        .expect("the new tool answers");
    assert_eq!(out.value()["structured_content"], json!({"echo": "new"}));
    assert!(
        !server.refresh().await.expect("relists"),
        "nothing changed since"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_the_child_and_later_calls_fail_for_good() {
    let server = connect(&[]).await;
    let pid = server.child_pid().await.expect("a child");
    assert!(process_exists(pid));
    let echo = tool(&server, "echo");
    server.shutdown().await;
    assert!(!process_exists(pid), "no zombie: the child was waited for");
    let err = echo.call(json!({})).await.unwrap_err();
    assert!(
        !err.is_transient() && err.to_string().contains("shut down"),
        "{err}"
    );
    let _unused: Value = Value::Null;
}

#[tokio::test]
async fn a_listing_that_never_ends_is_a_typed_error_after_the_page_limit() {
    let error = McpServer::connect(config(&["--endless-pages"]))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, McpError::TooManyPages { what: "tools", pages, .. } if pages == rein_mcp::MAX_PAGES),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("mcp server `srv`") && message.contains("nextCursor"),
        "{message}"
    );
}

//! The W3C trace context of an MCP call: with telemetry on, a call to an MCP tool over
//! streamable HTTP carries its `execute_tool` span's `traceparent` in the request's `_meta`
//! (where the MCP specification reserves the key, for every transport) and as an HTTP
//! header; without a trace context it carries neither.

mod support;

use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use axum::routing::post;
use rein::mcp::{McpServer, ServerConfig};
use rein::otel::tracing_subscriber::layer::SubscriberExt as _;
use rein::otel::tracing_subscriber::util::SubscriberInitExt as _;
use rein::otel::{OtelConfig, SpanContexts, Telemetry, TraceParent};
use rein::{Decision, Engine, RunStatus, json};
use rein_otel::receiver::Receiver;
use serde_json::Value;
use support::explore_script;

/// What one `tools/call` carried: its `traceparent` header and its `_meta.traceparent`.
#[derive(Debug, Clone, Default, PartialEq)]
struct Carried {
    header: Option<String>,
    meta: Option<String>,
}

type Calls = Arc<Mutex<Vec<Carried>>>;

/// A stateless MCP server with one read-only tool, `lookup`, answering in plain JSON.
async fn mcp(Shared(calls): Shared<Calls>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = message.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "lookup-server", "version": "1.0.0"}
        }),
        "tools/list" => json!({"tools": [{
            "name": "lookup",
            "description": "Looks a word up",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }]}),
        "tools/call" => {
            calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Carried {
                    header: headers
                        .get("traceparent")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned),
                    meta: message["params"]["_meta"]["traceparent"]
                        .as_str()
                        .map(str::to_owned),
                });
            json!({"content": [{"type": "text", "text": "found"}]})
        }
        _ => {
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}});
            return json_response(&error);
        }
    };
    json_response(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn json_response(value: &Value) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// Serves [`mcp`] on a loopback port; the calls it saw, and its URL.
async fn lookup_server() -> (Calls, String) {
    let calls = Calls::default();
    let app = axum::Router::new()
        .route("/mcp", post(mcp))
        .with_state(Arc::clone(&calls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (calls, url)
}

/// Runs one call of `docs.lookup` through an engine, exported to a fresh receiver, with the
/// server configured by `configure`.
async fn one_call(
    configure: impl FnOnce(ServerConfig) -> ServerConfig,
) -> (Receiver, Vec<Carried>) {
    let (calls, url) = lookup_server().await;
    let config = configure(ServerConfig::http("docs".parse().expect("a name"), url));
    let server = McpServer::connect(config).await.expect("connects");
    let mut builder = Engine::builder().planner(explore_script(
        vec![Decision::call_tool("docs.lookup", json!({}), "look it up")],
        "looked",
    ));
    for tool in server.tools() {
        builder = builder.tool(tool);
    }
    let engine = builder.build().expect("engine");

    let receiver = Receiver::start().expect("receiver");
    let telemetry =
        Telemetry::start(&OtelConfig::new(&receiver.url()).expect("endpoint")).expect("export");
    let guard = rein::otel::tracing_subscriber::registry()
        .with(telemetry.layer())
        .set_default();
    let run = engine.run("look a word up").await.expect("run");
    drop(guard);
    assert!(telemetry.shutdown().flushed);
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    server.shutdown().await;
    let seen = calls.lock().unwrap_or_else(PoisonError::into_inner).clone();
    (receiver, seen)
}

#[tokio::test]
async fn an_mcp_call_carries_its_tool_spans_traceparent_in_meta_and_header() {
    let (receiver, calls) = one_call(|c| c.with_trace_context(Arc::new(SpanContexts))).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    let meta = calls[0].meta.as_deref().expect("_meta.traceparent");
    assert_eq!(
        calls[0].header.as_deref(),
        Some(meta),
        "the header says the same"
    );
    let parent: TraceParent = meta.parse().expect("a W3C traceparent");
    let spans = receiver.spans();
    let tool = spans
        .iter()
        .find(|s| s.trace_id == parent.trace_id_bytes() && s.span_id == parent.span_id_bytes())
        .expect("the span the traceparent names was exported");
    assert_eq!(tool.name, "execute_tool docs.lookup");
}

#[tokio::test]
async fn without_a_trace_context_an_mcp_call_carries_none() {
    let (_, calls) = one_call(|c| c).await;
    assert_eq!(calls, [Carried::default()]);
}

//! An MCP server on stdio, written with rmcp, that misbehaves on request: rein-mcp's tests
//! (and its benchmark) run it to check faults that real servers cause.
//!
//! Tools: `echo` (read-only), `write_note` (no hints), `fail` (`isError`), `big` (a 10 MB
//! text), `crash` (the process exits mid-call), `hang` (never answers), `garbage` (writes a
//! non-JSON line to stdout and never answers), `grow` (adds the tool `extra` and sends
//! `tools/list_changed`), `count` (how many calls this process served). Tools are listed in
//! pages of three.
//!
//! Flags: `--invalid-schema` adds a tool whose input schema is not an object schema;
//! `--collide` adds the tools `a b` and `a_b` (one rein name); `--silent` never answers the
//! handshake; `--exit` writes to stderr and exits at start; `--crash-after N` exits on the
//! Nth call of `crash` only (earlier ones answer); `--endless-pages` hands out a next cursor
//! on every page of its tools, forever.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

const PAGE: usize = 3;

struct Faulty {
    invalid_schema: bool,
    collide: bool,
    endless_pages: bool,
    crash_after: u64,
    grown: AtomicUsize,
    calls: AtomicU64,
    crashes: AtomicU64,
}

impl Faulty {
    fn tools(&self) -> Vec<Value> {
        let object = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let mut tools = vec![
            json!({"name": "echo", "description": "Returns its text", "inputSchema": object,
                   "annotations": {"readOnlyHint": true, "openWorldHint": false}}),
            json!({"name": "write_note", "description": "Writes a note (no hints)", "inputSchema": object}),
            json!({"name": "fail", "description": "Always fails", "inputSchema": object,
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "big", "description": "Returns 10 MB of text", "inputSchema": object,
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "crash", "description": "Exits mid-call", "inputSchema": object,
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "hang", "description": "Never answers", "inputSchema": object,
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "garbage", "description": "Answers garbage", "inputSchema": object,
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "grow", "description": "Adds a tool", "inputSchema": object,
                   "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}}),
            json!({"name": "count", "description": "Calls served by this process", "inputSchema": object,
                   "annotations": {"readOnlyHint": true}}),
        ];
        if self.grown.load(Ordering::SeqCst) > 0 {
            tools.push(
                json!({"name": "extra", "description": "Added by grow", "inputSchema": object,
                              "annotations": {"readOnlyHint": true}}),
            );
        }
        if self.invalid_schema {
            tools.push(json!({"name": "bad_schema", "inputSchema": {"type": "string"}}));
        }
        if self.collide {
            tools.push(json!({"name": "a b", "inputSchema": object}));
            tools.push(json!({"name": "a_b", "inputSchema": object}));
        }
        tools
    }
}

impl ServerHandler for Faulty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let tools = self.tools();
        let end = (start + PAGE).min(tools.len());
        let mut page = json!({"tools": tools[start.min(end)..end]});
        if end < tools.len() {
            page["nextCursor"] = json!(end.to_string());
        } else if self.endless_pages {
            page["nextCursor"] = json!("0");
        }
        serde_json::from_value(page).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let calls = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let args = Value::Object(request.arguments.unwrap_or_default());
        let text = args["text"].as_str().unwrap_or_default().to_owned();
        let result = match request.name.as_ref() {
            "echo" | "extra" => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(text.clone())]);
                r.structured_content = Some(json!({"echo": text}));
                r
            }
            "write_note" => {
                CallToolResult::success(vec![ContentBlock::text(format!("noted: {text}"))])
            }
            "fail" => {
                CallToolResult::error(vec![ContentBlock::text(format!("cannot do {text:?}"))])
            }
            "big" => {
                CallToolResult::success(vec![ContentBlock::text("x".repeat(10 * 1024 * 1024))])
            }
            "count" => CallToolResult::success(vec![ContentBlock::text(calls.to_string())]),
            "crash" => {
                let n = self.crashes.fetch_add(1, Ordering::SeqCst) + 1;
                if self.crash_after == 0 || n >= self.crash_after {
                    eprintln!("test server: crashing on purpose during call {calls}");
                    std::process::exit(7);
                }
                CallToolResult::success(vec![ContentBlock::text("survived")])
            }
            "hang" => std::future::pending().await,
            "garbage" => {
                {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(b"this is not json-rpc {{{\n");
                    let _ = out.flush();
                }
                std::future::pending().await
            }
            "grow" => {
                self.grown.fetch_add(1, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grew")])
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool {other:?}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--exit") {
        eprintln!("test server: exiting at start as asked (--exit)");
        std::process::exit(3);
    }
    if has("--silent") {
        // Never read stdin, never answer: a server that does not finish the handshake.
        std::future::pending::<()>().await;
    }
    let crash_after = args
        .iter()
        .position(|a| a == "--crash-after")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let server = Faulty {
        invalid_schema: has("--invalid-schema"),
        collide: has("--collide"),
        endless_pages: has("--endless-pages"),
        crash_after,
        grown: AtomicUsize::new(0),
        calls: AtomicU64::new(0),
        crashes: AtomicU64::new(0),
    };
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

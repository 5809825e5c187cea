//! The export side: rein speaks MCP itself. [`serve_stdio`] offers a [`Governor`]'s tools to
//! an MCP client; every client session opens one governed [`Session`], which decides what a
//! call may do (the engine behind it: eligibility, approval, budgets, resilience, ledger).
//!
//! This crate knows nothing of the engine: the governor is a port the caller implements
//! (the `rein` CLI implements it with an engine run per session).

use std::fmt;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig as McpServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use rein_tool::{BoxFuture, ToolSpec};

/// What `rein mcp serve` puts behind MCP: the tools offered and a session per client.
///
/// # Contract
/// - `tools` MUST return the same specs for the governor's whole life.
/// - `open` is called once per MCP client session, before its first tool call; an error
///   is returned to the client as the call's error.
pub trait Governor: Send + Sync + 'static {
    /// The tools offered to clients.
    fn tools(&self) -> Vec<ToolSpec>;

    /// Opens the governed session of a new client.
    fn open(&self) -> BoxFuture<'_, Result<Box<dyn Session>, Refusal>>;
}

/// One client's governed session (a run, for the CLI).
///
/// # Contract
/// - `call` returns the tool's output, or a [`Refusal`] saying why the call did not run or
///   failed (ineligible, approval denied, budget exhausted, the tool failed). It MUST NOT
///   panic on any input.
/// - `close` is called once when the client goes away; it ends the session.
pub trait Session: Send + Sync + 'static {
    /// Calls `tool` with `input` under the session's policies.
    fn call(&self, tool: String, input: Value) -> BoxFuture<'_, Result<Value, Refusal>>;

    /// Ends the session.
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// Why a governed call did not return an output: shown to the MCP client as an error
/// result (`isError`), so a model can read it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    message: String,
}

impl Refusal {
    /// A refusal with `message` (say what happened and what the client can do).
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The client did not complete the MCP handshake on stdio.
    #[error(
        "the mcp client did not complete the handshake on stdio: {0}; start `rein mcp serve` from an MCP client"
    )]
    Handshake(String),
    /// The session ended abnormally.
    #[error("the mcp session ended abnormally: {0}")]
    Session(String),
}

/// Serves `governor` to one MCP client on this process's stdin and stdout until the client
/// closes them; the session is closed then.
///
/// # Errors
/// [`ServeError`] when the handshake fails or the session task fails.
pub async fn serve_stdio(governor: Arc<dyn Governor>) -> Result<(), ServeError> {
    let proxy = Proxy::new(governor);
    let session = proxy.session.clone();
    let stdio = crate::inbound::CheckedStdio::new(tokio::io::stdin(), tokio::io::stdout());
    let running = proxy
        .serve(stdio)
        .await
        .map_err(|e| ServeError::Handshake(crate::reason::describe(&e)))?;
    let ended = running.waiting().await;
    if let Some(session) = session.get() {
        session.close().await;
    }
    ended
        .map(drop)
        .map_err(|e| ServeError::Session(e.to_string()))
}

/// Serves `governor` over MCP's streamable HTTP on `listener` (bind it to 127.0.0.1 unless
/// clients elsewhere must reach it) until `shutdown` completes. Each client session gets its
/// own governed [`Session`], closed when the client ends the session (or on shutdown).
///
/// Against DNS rebinding (a web page making the browser call a local server), a request is
/// refused with 403 unless its `Host` is a loopback name and its `Origin`, when it has one,
/// is a loopback origin (`http` or `https`, `localhost`, `127.0.0.1` or `[::1]`, any port).
///
/// # Errors
/// [`ServeError::Session`] when the listener cannot be used or accepting fails.
pub async fn serve_http(
    governor: Arc<dyn Governor>,
    listener: std::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let listener = listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
        .map_err(|e| ServeError::Session(format!("cannot listen: {e}")))?;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let cancel = tokio_util::sync::CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(LOOPBACK_ORIGINS.iter().copied())
        .with_cancellation_token(cancel.clone());
    let service: StreamableHttpService<Proxy, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Proxy::new(governor.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted.map_err(|e| ServeError::Session(e.to_string()))?,
            () = &mut shutdown => break,
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(io, service)
                    .await;
        });
    }
    cancel.cancel();
    Ok(())
}

/// The browser origins `serve_http` accepts: pages served from this machine, on any port.
/// A request without an `Origin` (not from a browser) is not refused for it.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The MCP handler of one client session.
struct Proxy {
    governor: Arc<dyn Governor>,
    tools: Arc<[rmcp::model::Tool]>,
    session: Arc<OnceCell<Box<dyn Session>>>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Proxy {
    /// The client session is over (stdio closed, HTTP session deleted or expired): end the
    /// governed session.
    fn drop(&mut self) {
        if Arc::strong_count(&self.session) == 1
            && let Some(session) = Arc::get_mut(&mut self.session).and_then(OnceCell::take)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { session.close().await });
        }
    }
}

impl Proxy {
    fn new(governor: Arc<dyn Governor>) -> Self {
        let tools = governor.tools().iter().filter_map(mcp_tool).collect();
        Self {
            governor,
            tools,
            session: Arc::new(OnceCell::new()),
        }
    }
}

/// A rein spec as an MCP tool, hints included.
fn mcp_tool(spec: &ToolSpec) -> Option<rmcp::model::Tool> {
    let a = spec.annotations();
    let mut tool = json!({
        "name": spec.name().as_str(),
        "description": spec.description(),
        "inputSchema": spec.input_schema(),
        "annotations": {
            "readOnlyHint": a.is_read_only(),
            "destructiveHint": a.is_destructive(),
            "idempotentHint": a.is_idempotent(),
        },
    });
    if let Some(output) = spec.output_schema() {
        tool["outputSchema"] = output.clone();
    }
    serde_json::from_value(tool).ok()
}

/// A rein output as an MCP result: an imported MCP tool's content passes through; any other
/// JSON is the text and, when an object, the structured content.
fn mcp_result(output: Value) -> CallToolResult {
    if let Some(content) = output.get("content")
        && let Ok(blocks) = serde_json::from_value::<Vec<ContentBlock>>(content.clone())
    {
        let mut result = CallToolResult::success(blocks);
        result.structured_content = output.get("structured_content").cloned();
        return result;
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(output.to_string())]);
    if output.is_object() {
        result.structured_content = Some(output);
    }
    result
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> McpServerConfig {
        McpServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(crate::implementation())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(json!({ "tools": &*self.tools }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool {:?}; tools/list shows the tools this server offers",
                    request.name
                ),
                None,
            ));
        }
        let session = self.session.get_or_try_init(|| self.governor.open()).await;
        let session = match session {
            Ok(session) => session,
            Err(refusal) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(refusal.message)]).into());
            }
        };
        let input = Value::Object(request.arguments.unwrap_or_default());
        let result = match session.call(request.name.to_string(), input).await {
            Ok(output) => mcp_result(output),
            Err(refusal) => CallToolResult::error(vec![ContentBlock::text(refusal.message)]),
        };
        Ok(result.into())
    }
}

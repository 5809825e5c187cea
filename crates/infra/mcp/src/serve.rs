//! The export side: rein speaks MCP itself. [`serve_stdio`] offers a [`Governor`]'s tools to
//! an MCP client; every client session opens one governed [`Session`], which decides what a
//! call may do (the engine behind it: eligibility, approval, budgets, resilience, ledger).
//!
//! Besides tools, a governor may offer prompts (static texts: the CLI offers the scenario's
//! skills) and resources each session reads through its [`Session`] (the CLI: the session
//! run's ledger). What a session reports while a call runs ([`Progress`]) reaches the
//! client as `notifications/message` (logging) and, when the client sent a progress token,
//! `notifications/progress`. The tool list is paged ([`TOOLS_PAGE`] a page) and never
//! changes while serving (`listChanged` is `false`).
//!
//! This crate knows nothing of the engine: the governor is a port the caller implements
//! (the `rein` CLI implements it with an engine run per session).

// SEP-2577 deprecates logging, but clients still read it: rein sends it until rmcp drops
// its types.
#![expect(
    deprecated,
    reason = "logging is deprecated by SEP-2577, still read by clients"
)]

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, ListPromptsResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig as McpServerConfig, SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{OnceCell, mpsc};

use crate::offer::{Progress, ServedPrompt, ServedResource};

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

    /// The prompts offered to clients (none by default); the same for the governor's life.
    fn prompts(&self) -> Vec<ServedPrompt> {
        Vec::new()
    }

    /// The resources every session offers, read through [`Session::read`] (none by
    /// default); the same for the governor's life.
    fn resources(&self) -> Vec<ServedResource> {
        Vec::new()
    }
}

/// One client's governed session (a run, for the CLI).
///
/// # Contract
/// - `call` returns the tool's output, or a [`Refusal`] saying why the call did not run or
///   failed (ineligible, approval denied, budget exhausted, the tool failed). It MUST NOT
///   panic on any input.
/// - `close` is called once when the client goes away; it ends the session.
pub trait Session: Send + Sync + 'static {
    /// Calls `tool` with `input` under the session's policies, reporting to `progress`
    /// what it does on the way (each report reaches the client as it happens).
    fn call(
        &self,
        tool: String,
        input: Value,
        progress: Progress,
    ) -> BoxFuture<'_, Result<Value, Refusal>>;

    /// Reads the resource `uri` (one of [`Governor::resources`]) as text; by default
    /// refuses (a governor offering resources overrides this).
    fn read(&self, uri: String) -> BoxFuture<'_, Result<String, Refusal>> {
        Box::pin(async move { Err(Refusal::new(format!("no resource {uri:?}"))) })
    }

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

/// How many tools one `tools/list` page holds.
pub const TOOLS_PAGE: usize = 100;

/// How long a finished call waits for its last reports to be sent before answering.
const LAST_REPORTS: Duration = Duration::from_secs(1);

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
    prompts: Arc<[ServedPrompt]>,
    resources: Arc<[ServedResource]>,
    session: Arc<OnceCell<Box<dyn Session>>>,
    /// The least severe logging level the client wants (`logging/setLevel`), as
    /// [`level_rank`] numbers it.
    log_level: Arc<AtomicU8>,
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
            tools,
            prompts: governor.prompts().into(),
            resources: governor.resources().into(),
            governor,
            session: Arc::new(OnceCell::new()),
            log_level: Arc::new(AtomicU8::new(level_rank(LoggingLevel::Info))),
        }
    }

    async fn session(&self) -> Result<&dyn Session, Refusal> {
        self.session
            .get_or_try_init(|| self.governor.open())
            .await
            .map(AsRef::as_ref)
    }
}

/// MCP's logging levels, least severe first.
const fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Sends each report of a call to the client until the call's [`Progress`] is dropped:
/// a logging message (level info, logger `rein`) when the client's level lets it through,
/// and a progress notification when the client asked for one.
async fn pass_on(
    mut reports: mpsc::Receiver<String>,
    peer: rmcp::Peer<RoleServer>,
    token: Option<rmcp::model::ProgressToken>,
    log_level: Arc<AtomicU8>,
) {
    let mut done = 0_u32;
    while let Some(message) = reports.recv().await {
        done = done.saturating_add(1);
        if log_level.load(Ordering::Relaxed) <= level_rank(LoggingLevel::Info) {
            let mut log = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message));
            log.logger = Some("rein".to_owned());
            let _ = peer.notify_logging_message(log).await;
        }
        if let Some(token) = &token {
            let progress = serde_json::from_value::<ProgressNotificationParam>(json!({
                "progressToken": token, "progress": done, "message": message
            }));
            if let Ok(progress) = progress {
                let _ = peer.notify_progress(progress).await;
            }
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
        // The tool set is fixed for the governor's life: no list ever changes.
        let mut capabilities = json!({"tools": {"listChanged": false}, "logging": {}});
        if !self.prompts.is_empty() {
            capabilities["prompts"] = json!({"listChanged": false});
        }
        if !self.resources.is_empty() {
            capabilities["resources"] = json!({"listChanged": false, "subscribe": false});
        }
        let capabilities: ServerCapabilities =
            serde_json::from_value(capabilities).unwrap_or_default();
        McpServerConfig::new(capabilities).with_server_info(crate::implementation())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|start| *start < self.tools.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!(
                            "the cursor {cursor:?} is not one rein handed out; list again without a cursor"
                        ),
                        None,
                    )
                })?,
        };
        let end = start.saturating_add(TOOLS_PAGE).min(self.tools.len());
        let mut page = json!({ "tools": &self.tools[start..end] });
        if end < self.tools.len() {
            page["nextCursor"] = json!(end.to_string());
        }
        serde_json::from_value(page).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level
            .store(level_rank(request.level), Ordering::Relaxed);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        crate::offer::list_prompts(&self.prompts)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        crate::offer::get_prompt(&self.prompts, &request.name).map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        crate::offer::list_resources(&self.resources)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(resource) = self.resources.iter().find(|r| r.uri == request.uri) else {
            return Err(crate::offer::no_resource(&request.uri, &self.resources));
        };
        let session = self
            .session()
            .await
            .map_err(|refusal| ErrorData::internal_error(refusal.message, None))?;
        let text = session
            .read(request.uri.clone())
            .await
            .map_err(|refusal| ErrorData::internal_error(refusal.message, None))?;
        crate::offer::contents(resource, &text).map(Into::into)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
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
        let session = match self.session().await {
            Ok(session) => session,
            Err(refusal) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(refusal.message)]).into());
            }
        };
        let (progress, reports) = Progress::channel();
        let passing = tokio::spawn(pass_on(
            reports,
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.log_level.clone(),
        ));
        let input = Value::Object(request.arguments.unwrap_or_default());
        let outcome = session
            .call(request.name.to_string(), input, progress)
            .await;
        // The reports of the call go out before its answer (the session drops its
        // progress when it answers; a session that kept it is not waited for long).
        let _ = tokio::time::timeout(LAST_REPORTS, passing).await;
        let result = match outcome {
            Ok(output) => mcp_result(output),
            Err(refusal) => CallToolResult::error(vec![ContentBlock::text(refusal.message)]),
        };
        Ok(result.into())
    }
}

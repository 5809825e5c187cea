//! The import side: `McpServer` connects to a server, lists its tools and hands out one
//! rein `Tool` (`McpTool`) per server tool. The connection (and its restarts) is in `link`,
//! the tool table in `table`.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex as StdMutex};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use tokio::time::Instant;

use rein_tool::{Tool, ToolError, ToolOutput, ToolSpec};

use crate::catalog::{self, Kind};
use crate::link::Link;
use crate::table::{ImportedTool, build_table};
use crate::{McpError, ServerConfig, ServerName};

/// How much of an error result's text goes into a `ToolError` message.
const ERROR_TEXT: usize = 2000;

/// A connected MCP server: its tool table and the link the tools call through.
///
/// [`McpServer::tools`] gives the rein tools to register in an engine; the engine keeps
/// them for its whole life, so a run's tool set is what it started with. When the server
/// says its list changed (`notifications/tools/list_changed`), [`McpServer::refresh`]
/// re-lists it for the *next* engine built from [`McpServer::tools`].
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use rein_mcp::{McpServer, ServerConfig};
/// let config = ServerConfig::stdio("fs".parse()?, ["node", "server-filesystem.js", "/tmp"]);
/// let server = McpServer::connect(config).await?;
/// for tool in server.imported().iter() {
///     println!("{} ← {:?}", tool.name(), tool.remote_name());
/// }
/// let tools = server.tools(); // register each with `EngineBuilder::tool`
/// # drop(tools);
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    link: Arc<Link>,
    table: Arc<StdMutex<Arc<[ImportedTool]>>>,
}

/// A tool of an MCP server, as a rein [`Tool`]: every call is a `tools/call` on the server.
///
/// # Errors it returns
/// - the server's `isError` result → [`ToolError::Failed`] with the result's text;
/// - the server died or the connection closed → a transient [`ToolError::Failed`] (with
///   the tail of the server's stderr); the server is restarted with backoff on a later call;
/// - an HTTP server refuses rein's credentials (401, 403) → a [`ToolError::Failed`] that is
///   not transient, pointing at the server's `headers`;
/// - a protocol error answering the call (bad arguments) → [`ToolError::InvalidInput`],
///   other protocol errors → [`ToolError::Failed`].
///
/// A server that hangs or answers garbage never answers the call: the engine's timeout
/// turns that into [`ToolError::TimedOut`].
#[derive(Clone)]
pub struct McpTool {
    link: Arc<Link>,
    kind: Kind,
    remote: Arc<str>,
    spec: ToolSpec,
}

impl McpServer {
    /// Connects to the server, completes the handshake and lists every tool (all pages),
    /// all within the configured handshake timeout, and builds the tool table.
    ///
    /// # Errors
    /// [`McpError`] naming the server: the command cannot start, the handshake fails or
    /// times out, listing fails, two tools map to one name, a schema is invalid, an
    /// override widens without saying so or names a tool the server does not have.
    pub async fn connect(config: ServerConfig) -> Result<Self, McpError> {
        let link = Arc::new(Link::new(config));
        let listed = {
            let mut state = link.state.lock().await;
            let (service, pid, listed) = link.open(true).await?;
            state.service = Some(service);
            state.pid = pid;
            listed.unwrap_or(crate::catalog::Listing {
                tools: Vec::new(),
                extras: Vec::new(),
            })
        };
        let table = build_table(&link.config, &listed)?;
        Ok(Self {
            link,
            table: Arc::new(StdMutex::new(table.into())),
        })
    }

    /// The server's name in rein.
    #[must_use]
    pub fn name(&self) -> &ServerName {
        self.link.config.name()
    }

    /// The imported tools, in the server's order.
    #[must_use]
    pub fn imported(&self) -> Arc<[ImportedTool]> {
        self.table
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |t| t.clone())
    }

    /// One rein tool per imported tool, to register in an engine.
    #[must_use]
    pub fn tools(&self) -> Vec<McpTool> {
        self.imported()
            .iter()
            .map(|t| McpTool {
                link: self.link.clone(),
                kind: t.kind(),
                remote: t.remote_name().into(),
                spec: t.spec().clone(),
            })
            .collect()
    }

    /// How many `tools/list_changed` notifications the server has sent so far.
    #[must_use]
    pub fn list_changes(&self) -> u64 {
        *self.link.changes.borrow()
    }

    /// Waits until the server has sent more than `seen` list-changed notifications.
    pub async fn list_changed_after(&self, seen: u64) {
        let mut rx = self.link.changes.subscribe();
        // The sender lives as long as `self`: `wait_for` cannot fail while we hold it.
        let _ = rx.wait_for(|n| *n > seen).await;
    }

    /// Re-lists the server's tools and replaces the table (for engines built afterwards;
    /// tools already handed out keep their spec). Returns whether the table changed.
    ///
    /// # Errors
    /// As [`McpServer::connect`] for listing and building the table; the old table stays.
    pub async fn refresh(&self) -> Result<bool, McpError> {
        let listed = self.link.relist().await?;
        let table: Arc<[ImportedTool]> = build_table(&self.link.config, &listed)?.into();
        let mut current = self
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = *current != table;
        *current = table;
        Ok(changed)
    }

    /// When a dead server may next be restarted (`None`: it is up, or may be restarted now).
    pub async fn restart_due(&self) -> Option<Instant> {
        self.link.state.lock().await.retry_at
    }

    /// The process id of the current stdio child, if there is one.
    pub async fn child_pid(&self) -> Option<u32> {
        self.link.state.lock().await.pid
    }

    /// The tail of the server's stderr (stdio servers), as text.
    #[must_use]
    pub fn stderr_tail(&self) -> String {
        self.link.stderr_tail()
    }

    /// Closes the session and, for a stdio server, waits for the child to exit (closing its
    /// stdin, then `SIGTERM`, then kill), so no zombie is left. Tools handed out fail from
    /// then on with a non-transient error.
    pub async fn shutdown(&self) {
        self.link.shut.store(true, Ordering::SeqCst);
        let mut state = self.link.state.lock().await;
        if let Some(mut service) = state.service.take() {
            let _ = service.close().await;
        }
        state.pid = None;
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("config", &self.link.config)
            .field("tools", &self.imported().len())
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// The tool's name on the server.
    #[must_use]
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("server", self.link.config.name())
            .field("remote", &self.remote)
            .field("name", self.spec.name())
            .finish_non_exhaustive()
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::invalid_input(format!(
                    "mcp tools take a JSON object as input, not {}",
                    kind_of(&other)
                )));
            }
        };
        match self.kind {
            Kind::Tool => {}
            Kind::ReadResource => {
                let mut request = catalog::read_request(&Value::Object(arguments))?;
                request.meta = self.link.config.tracing.meta(request.meta.take());
                let (peer, generation) = self.link.peer().await?;
                return match peer.read_resource(request).await {
                    Ok(result) => Ok(catalog::read_output(&result)),
                    Err(error) => Err(self.link.call_failed(&self.remote, error, generation).await),
                };
            }
            Kind::GetPrompt => {
                let mut request = catalog::prompt_request(&Value::Object(arguments))?;
                request.meta = self.link.config.tracing.meta(request.meta.take());
                let (peer, generation) = self.link.peer().await?;
                return match peer.get_prompt(request).await {
                    Ok(result) => Ok(catalog::prompt_output(&result)),
                    Err(error) => Err(self.link.call_failed(&self.remote, error, generation).await),
                };
            }
        }
        let (peer, generation) = self.link.peer().await?;
        let mut params =
            CallToolRequestParams::new(self.remote.to_string()).with_arguments(arguments);
        params.meta = self.link.config.tracing.meta(None);
        // The run this call belongs to, found in the task running it: what the server
        // sends during the call (progress, a log line, sampling) reaches that run.
        let _registered = self
            .link
            .config
            .asks
            .scopes
            .as_ref()
            .and_then(|scopes| scopes.current())
            .map(|scope| self.link.in_flight.register(scope));
        match peer.call_tool(params).await {
            Ok(result) => {
                self.link.failures.store(0, Ordering::Relaxed);
                self.convert(result)
            }
            Err(error) => Err(self.link.call_failed(&self.remote, error, generation).await),
        }
    }
}

impl McpTool {
    fn convert(&self, result: CallToolResult) -> Result<ToolOutput, ToolError> {
        if result.is_error == Some(true) {
            let mut text = text_of(&result);
            if text.is_empty()
                && let Some(structured) = &result.structured_content
            {
                text = structured.to_string();
            }
            if text.len() > ERROR_TEXT {
                let mut cut = ERROR_TEXT;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push('…');
            }
            return Err(ToolError::failed(format!(
                "mcp tool {:?} on server `{}` returned an error: {text}",
                &*self.remote,
                self.link.config.name()
            )));
        }
        // Images, audio and embedded resources become attachments (artifacts, once the
        // engine stores them); the content shows a stub naming each.
        let (content, attachments) = crate::content::split(result.content);
        let mut out = json!({ "content": content });
        if let Some(structured) = result.structured_content {
            out["structured_content"] = structured;
        }
        let mut output = ToolOutput::new(out);
        for attachment in attachments {
            // `split` keeps at most the output's limit.
            let _ = output.push_attachment(attachment);
        }
        Ok(output)
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

const fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

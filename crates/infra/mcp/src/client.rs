//! The import side: `McpServer` connects to a server, lists its tools and hands out one
//! rein `Tool` (`McpTool`) per server tool; the link restarts a dead stdio server with backoff.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::{NotificationContext, Peer, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::{Mutex, watch};
use tokio::time::Instant;

use rein_tool::{Annotations, Tool, ToolError, ToolName, ToolOutput, ToolSpec};

use crate::annotations::Hints;
use crate::{McpError, ServerConfig, ServerName, Transport, names};

/// How long a dead server's stderr is waited for, to be read to its end.
const STDERR_SETTLE: Duration = Duration::from_secs(2);

/// How many bytes of a child's stderr are kept for error messages (the tail).
const STDERR_TAIL: usize = 2048;
/// The longest wait between two restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
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

/// One server tool as rein imported it: its name on the server and in rein, whether the
/// name was mapped, the hints the server sent, and the annotations rein derived.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTool {
    remote: String,
    mapped: bool,
    hints: Hints,
    spec: ToolSpec,
}

/// A tool of an MCP server, as a rein [`Tool`]: every call is a `tools/call` on the server.
///
/// # Errors it returns
/// - the server's `isError` result → [`ToolError::Failed`] with the result's text;
/// - the server died or the connection closed → a transient [`ToolError::Failed`] (with
///   the tail of the server's stderr); the server is restarted with backoff on a later call;
/// - a protocol error answering the call (bad arguments) → [`ToolError::InvalidInput`],
///   other protocol errors → [`ToolError::Failed`].
///
/// A server that hangs or answers garbage never answers the call: the engine's timeout
/// turns that into [`ToolError::TimedOut`].
#[derive(Clone)]
pub struct McpTool {
    link: Arc<Link>,
    remote: Arc<str>,
    spec: ToolSpec,
}

/// The connection to one server, restarted when it dies.
struct Link {
    config: ServerConfig,
    state: Mutex<LinkState>,
    /// Consecutive failures (dead server, failed restart); reset by a successful call.
    failures: AtomicU32,
    stderr: Arc<StdMutex<VecDeque<u8>>>,
    /// The task copying the current child's stderr into `stderr`; awaited (bounded) when
    /// the child dies so error messages carry what it said last.
    stderr_copy: StdMutex<Option<tokio::task::JoinHandle<()>>>,
    changes: watch::Sender<u64>,
    shut: AtomicBool,
    generation: AtomicU64,
}

struct LinkState {
    service: Option<RunningService<RoleClient, Handler>>,
    pid: Option<u32>,
    retry_at: Option<Instant>,
}

/// Our side of the MCP session: it notes `tools/list_changed`.
#[derive(Clone)]
struct Handler {
    changes: watch::Sender<u64>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changes.send_modify(|n| *n += 1);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
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
        let (changes, _) = watch::channel(0);
        let link = Arc::new(Link {
            config,
            state: Mutex::new(LinkState {
                service: None,
                pid: None,
                retry_at: None,
            }),
            failures: AtomicU32::new(0),
            stderr: Arc::new(StdMutex::new(VecDeque::new())),
            stderr_copy: StdMutex::new(None),
            changes,
            shut: AtomicBool::new(false),
            generation: AtomicU64::new(0),
        });
        let listed = {
            let mut state = link.state.lock().await;
            let (service, pid, listed) = link.open(true).await?;
            state.service = Some(service);
            state.pid = pid;
            listed.unwrap_or_default()
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
            .map(|t| t.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// One rein tool per imported tool, to register in an engine.
    #[must_use]
    pub fn tools(&self) -> Vec<McpTool> {
        self.imported()
            .iter()
            .map(|t| McpTool {
                link: self.link.clone(),
                remote: t.remote.as_str().into(),
                spec: t.spec.clone(),
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
        let (peer, _) = self
            .link
            .peer()
            .await
            .map_err(|e| self.link.list_error(e.to_string()))?;
        let listed = peer
            .list_all_tools()
            .await
            .map_err(|e| self.link.list_error(e.to_string()))?;
        let table: Arc<[ImportedTool]> = build_table(&self.link.config, &listed)?.into();
        let mut current = self.table.lock().unwrap_or_else(|e| e.into_inner());
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

impl ImportedTool {
    /// The tool's name on the server.
    #[must_use]
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The tool's name in rein (`SERVER.TOOL`).
    #[must_use]
    pub const fn name(&self) -> &ToolName {
        self.spec.name()
    }

    /// Whether the rein name differs from `SERVER.` + the server's name.
    #[must_use]
    pub const fn was_mapped(&self) -> bool {
        self.mapped
    }

    /// The hints after the operator's overrides (`None`: the server did not send one).
    #[must_use]
    pub const fn hints(&self) -> &Hints {
        &self.hints
    }

    /// The annotations rein derived.
    #[must_use]
    pub const fn annotations(&self) -> &Annotations {
        self.spec.annotations()
    }

    /// The rein spec of the tool.
    #[must_use]
    pub const fn spec(&self) -> &ToolSpec {
        &self.spec
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
        let (peer, generation) = self.link.peer().await?;
        let params = CallToolRequestParams::new(self.remote.to_string()).with_arguments(arguments);
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

impl Link {
    /// Starts the transport and completes the handshake (and, if `list`, the first listing)
    /// within the handshake timeout.
    async fn open(
        &self,
        list: bool,
    ) -> Result<
        (
            RunningService<RoleClient, Handler>,
            Option<u32>,
            Option<Vec<rmcp::model::Tool>>,
        ),
        McpError,
    > {
        let server = self.config.name().clone();
        let handler = Handler {
            changes: self.changes.clone(),
        };
        let timeout = self.config.handshake_timeout();
        let target = self.config.transport().to_string();
        let (handshake, pid) = match self.config.transport() {
            Transport::Stdio { command, env, cwd } => {
                let Some((program, args)) = command.split_first() else {
                    return Err(McpError::EmptyCommand { server });
                };
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args).envs(env).kill_on_drop(true);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let (child, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|source| McpError::Spawn {
                        server: server.clone(),
                        program: program.clone(),
                        source,
                    })?;
                if let Some(stderr) = stderr {
                    let copy = tokio::spawn(capture(stderr, self.stderr.clone()));
                    *self.stderr_copy.lock().unwrap_or_else(|e| e.into_inner()) = Some(copy);
                }
                let pid = child.id();
                (boxed(handler.serve(child)), pid)
            }
            Transport::Http { url, headers } => {
                let mut custom = std::collections::HashMap::new();
                for (name, value) in headers {
                    let (Ok(n), Ok(v)) = (
                        http::HeaderName::try_from(name.as_str()),
                        http::HeaderValue::try_from(value.as_str()),
                    ) else {
                        return Err(McpError::InvalidHeader {
                            server,
                            header: name.clone(),
                        });
                    };
                    custom.insert(n, v);
                }
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(custom),
                );
                (boxed(handler.serve(transport)), None)
            }
        };
        let session = async {
            let service = handshake.await.map_err(|e| e.to_string())?;
            let listed = if list {
                Some(
                    service
                        .peer()
                        .list_all_tools()
                        .await
                        .map_err(|e| format!("listing its tools failed: {e}"))?,
                )
            } else {
                None
            };
            Ok::<_, String>((service, listed))
        };
        match tokio::time::timeout(timeout, session).await {
            Ok(Ok((service, listed))) => {
                self.generation.fetch_add(1, Ordering::SeqCst);
                Ok((service, pid, listed))
            }
            Ok(Err(reason)) => Err(McpError::Handshake {
                server,
                target,
                reason,
                stderr: self.dying_stderr_tail().await,
            }),
            Err(_) => Err(McpError::HandshakeTimeout {
                server,
                target,
                after: timeout,
                stderr: self.stderr_tail(),
            }),
        }
    }

    /// The live peer and its generation, restarting the server when it is down and its
    /// backoff has passed.
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let server = self.config.name();
        if self.shut.load(Ordering::SeqCst) {
            return Err(ToolError::failed(format!(
                "mcp server `{server}` was shut down; build a new engine with a connected server"
            )));
        }
        let mut state = self.state.lock().await;
        if let Some(service) = &state.service
            && !service.is_closed()
        {
            return Ok((
                service.peer().clone(),
                self.generation.load(Ordering::SeqCst),
            ));
        }
        // Down: reap what is left of the old session, then restart if the backoff allows.
        if let Some(mut dead) = state.service.take() {
            let _ = dead.close().await;
            state.pid = None;
            self.note_failure(&mut state);
        }
        let now = Instant::now();
        if let Some(at) = state.retry_at
            && at > now
        {
            return Err(ToolError::transient(format!(
                "mcp server `{server}` is down; it will be restarted in {} ms{}",
                (at - now).as_millis(),
                stderr_note(&self.stderr_tail())
            )));
        }
        match self.open(false).await {
            Ok((service, pid, _)) => {
                let peer = service.peer().clone();
                state.service = Some(service);
                state.pid = pid;
                state.retry_at = None;
                Ok((peer, self.generation.load(Ordering::SeqCst)))
            }
            Err(error) => {
                self.note_failure(&mut state);
                Err(ToolError::transient(format!("restarting failed: {error}")))
            }
        }
    }

    /// Counts a failure and sets when the next restart may happen (exponential backoff).
    fn note_failure(&self, state: &mut LinkState) {
        let failures = self
            .failures
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1);
        let backoff = self
            .config
            .restart_backoff()
            .saturating_mul(1 << failures.saturating_sub(1).min(16))
            .min(MAX_BACKOFF);
        state.retry_at = Some(Instant::now() + backoff);
    }

    /// Turns a failed `tools/call` into a tool error, marking the session down if the
    /// transport is gone.
    async fn call_failed(&self, remote: &str, error: ServiceError, generation: u64) -> ToolError {
        let server = self.config.name();
        match error {
            ServiceError::McpError(data) => {
                let message = format!(
                    "mcp server `{server}` refused the call to {remote:?}: {}",
                    data.message
                );
                if data.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    ToolError::invalid_input(message)
                } else {
                    ToolError::failed(message)
                }
            }
            ServiceError::UnexpectedResponse => ToolError::failed(format!(
                "mcp server `{server}` answered the call to {remote:?} with something that is not a tool result"
            )),
            ServiceError::Timeout { timeout } => ToolError::transient(format!(
                "mcp server `{server}` did not answer the call to {remote:?} within {} ms",
                timeout.as_millis()
            )),
            other => {
                // The transport is gone (the child died, the connection closed): mark the
                // session down so a later call restarts it, after a backoff.
                let mut state = self.state.lock().await;
                if self.generation.load(Ordering::SeqCst) == generation
                    && let Some(mut dead) = state.service.take()
                {
                    let _ = dead.close().await;
                    state.pid = None;
                    self.note_failure(&mut state);
                }
                drop(state);
                ToolError::transient(format!(
                    "mcp server `{server}` failed during the call to {remote:?} ({other}); it will be restarted{}",
                    stderr_note(&self.dying_stderr_tail().await)
                ))
            }
        }
    }

    fn list_error(&self, reason: String) -> McpError {
        McpError::List {
            server: self.config.name().clone(),
            reason,
            stderr: self.stderr_tail(),
        }
    }

    /// The stderr tail of a child that has just died: a child that exits closes stdout
    /// and stderr together, and the copier may not have read the last bytes yet, so this
    /// waits (at most [`STDERR_SETTLE`]) for it to reach end-of-file first.
    async fn dying_stderr_tail(&self) -> String {
        let copy = self
            .stderr_copy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(copy) = copy {
            let _ = tokio::time::timeout(STDERR_SETTLE, copy).await;
        }
        self.stderr_tail()
    }

    fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = tail.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        text.trim().to_owned()
    }
}

/// Builds the tool table from a listing: names mapped, collisions refused, schemas checked,
/// overrides applied (narrow-only unless marked), excluded tools left out.
fn build_table(
    config: &ServerConfig,
    listed: &[rmcp::model::Tool],
) -> Result<Vec<ImportedTool>, McpError> {
    let server = config.name();
    let available = || {
        listed
            .iter()
            .map(|t| t.name.as_ref())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Every tool the configuration names must exist: a typo would silently not apply.
    let named = config
        .excluded()
        .iter()
        .map(String::as_str)
        .chain(config.overridden());
    for tool in named {
        if !listed.iter().any(|t| t.name == tool) {
            return Err(McpError::UnknownTool {
                server: server.clone(),
                tool: tool.to_owned(),
                available: available(),
            });
        }
    }
    let mut seen: BTreeMap<ToolName, String> = BTreeMap::new();
    let mut table = Vec::with_capacity(listed.len());
    for tool in listed {
        let remote = tool.name.as_ref();
        if config.excludes(remote) {
            continue;
        }
        let (name, mapped) = names::rein_name(server, remote).map_err(|source| McpError::Name {
            server: server.clone(),
            source,
        })?;
        if let Some(first) = seen.insert(name.clone(), remote.to_owned()) {
            return Err(McpError::Collision {
                server: server.clone(),
                first,
                second: remote.to_owned(),
                name: name.to_string(),
            });
        }
        let schema = Value::Object((*tool.input_schema).clone());
        check_schema(&schema).map_err(|reason| McpError::InvalidSchema {
            server: server.clone(),
            tool: remote.to_owned(),
            reason,
        })?;
        let sent = tool
            .annotations
            .as_ref()
            .map_or_else(Hints::default, |a| Hints {
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            });
        let widening = |tool: &str| {
            let tool = tool.to_owned();
            move |source| McpError::Widening {
                server: server.clone(),
                tool,
                source,
            }
        };
        let hints = config.annotations().apply(sent).map_err(widening("*"))?;
        let hints = match config.tool_annotations(remote) {
            Some(o) => o.apply(hints).map_err(widening(remote))?,
            None => hints,
        };
        let mut description = tool.description.as_deref().unwrap_or_default().to_owned();
        if let Some(title) = tool
            .title
            .as_deref()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.as_deref()))
            && !description.starts_with(title)
        {
            description = if description.is_empty() {
                title.to_owned()
            } else {
                format!("{title}: {description}")
            };
        }
        let mut spec = ToolSpec::new(name, description)
            .with_input_schema(schema)
            .with_annotations(hints.annotations());
        if let Some(output) = &tool.output_schema {
            spec = spec.with_output_schema(Value::Object((**output).clone()));
        }
        table.push(ImportedTool {
            remote: remote.to_owned(),
            mapped,
            hints,
            spec,
        });
    }
    Ok(table)
}

/// MCP requires an input schema for an object: `"type": "object"`, and `properties` (if
/// any) an object of schemas. The engine compiles the full schema when it is built.
fn check_schema(schema: &Value) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(format!("`type` is {other}, not \"object\"")),
        None => return Err("it has no `type`; MCP requires \"object\"".to_owned()),
    }
    if let Some(props) = schema.get("properties") {
        let Some(props) = props.as_object() else {
            return Err("`properties` is not an object".to_owned());
        };
        if let Some((name, _)) = props
            .iter()
            .find(|(_, s)| !(s.is_object() || s.is_boolean()))
        {
            return Err(format!("property {name:?} is not a schema"));
        }
    }
    Ok(())
}

/// Copies a child's stderr into the bounded tail, dropping the oldest bytes.
async fn capture(mut stderr: tokio::process::ChildStderr, tail: Arc<StdMutex<VecDeque<u8>>>) {
    let mut buf = [0_u8; 1024];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(&buf[..n]);
        let excess = tail.len().saturating_sub(STDERR_TAIL);
        tail.drain(..excess);
    }
}

type Handshake = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    RunningService<RoleClient, Handler>,
                    rmcp::service::ClientInitializeError,
                >,
            > + Send,
    >,
>;

fn boxed(
    f: impl std::future::Future<
        Output = Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>,
    > + Send
    + 'static,
) -> Handshake {
    Box::pin(f)
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (its stderr ends with: {stderr})")
    }
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

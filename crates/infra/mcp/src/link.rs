//! The connection to one MCP server: the handshake over stdio or streamable HTTP, the
//! restart of a dead stdio server with backoff, and the tail of its stderr kept for error
//! messages.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::sync::{Mutex, watch};
use tokio::time::Instant;

use rein_tool::ToolError;

use crate::catalog::ListFailure;
use crate::handler::Handler;
use crate::reason::{self, HandshakeFailure};
use crate::{McpError, ServerConfig, Transport};

/// How long a dead server's stderr is waited for, to be read to its end.
const STDERR_SETTLE: Duration = Duration::from_secs(2);

/// How many bytes of a child's stderr are kept for error messages (the tail).
const STDERR_TAIL: usize = 2048;
/// The longest wait between two restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The connection to one server, restarted when it dies.
pub(crate) struct Link {
    pub(crate) config: ServerConfig,
    pub(crate) state: Mutex<LinkState>,
    /// Consecutive failures (dead server, failed restart); reset by a successful call.
    pub(crate) failures: AtomicU32,
    pub(crate) stderr: Arc<StdMutex<VecDeque<u8>>>,
    /// The task copying the current child's stderr into `stderr`; awaited (bounded) when
    /// the child dies so error messages carry what it said last.
    pub(crate) stderr_copy: StdMutex<Option<tokio::task::JoinHandle<()>>>,
    pub(crate) changes: watch::Sender<u64>,
    pub(crate) shut: AtomicBool,
    pub(crate) generation: AtomicU64,
    /// The governed calls in flight, shared with every session's handler.
    pub(crate) in_flight: Arc<crate::in_flight::InFlight>,
}

pub(crate) struct LinkState {
    pub(crate) service: Option<RunningService<RoleClient, Handler>>,
    pub(crate) pid: Option<u32>,
    pub(crate) retry_at: Option<Instant>,
}

impl Link {
    /// A link to the server `config` names, not connected yet.
    pub(crate) fn new(config: ServerConfig) -> Self {
        let (changes, _) = watch::channel(0);
        Self {
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
            in_flight: Arc::default(),
        }
    }

    /// Starts the transport and completes the handshake (and, if `list`, the first listing)
    /// within the handshake timeout.
    pub(crate) async fn open(
        &self,
        list: bool,
    ) -> Result<
        (
            RunningService<RoleClient, Handler>,
            Option<u32>,
            Option<crate::catalog::Listing>,
        ),
        McpError,
    > {
        let server = self.config.name().clone();
        let handler = Handler {
            changes: self.changes.clone(),
            roots: self.config.roots().to_vec(),
            server: self.config.name().to_string(),
            asks: self.config.asks.clone(),
            in_flight: Arc::clone(&self.in_flight),
        };
        let timeout = self.config.handshake_timeout();
        let target = self.config.transport().to_string();
        let (handshake, pid) = match self.config.transport() {
            Transport::Stdio { .. } if self.config.oauth().is_some() => {
                return Err(crate::oauth_error::OAuthError::NotHttp { server }.into());
            }
            Transport::Stdio { command, env, cwd } => {
                let Some((program, args)) = command.split_first() else {
                    return Err(McpError::EmptyCommand { server });
                };
                let mut cmd = tokio::process::Command::new(program);
                // Only what a program needs to run, and what the configuration names:
                // rein's environment holds credentials the server has no business seeing.
                cmd.args(args)
                    .env_clear()
                    .envs(inherited_env())
                    .envs(env)
                    .kill_on_drop(true);
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
                    *self
                        .stderr_copy
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(copy);
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
                let client =
                    crate::trace::TracedClient::new().map_err(|e| McpError::Handshake {
                        server: server.clone(),
                        target: target.clone(),
                        reason: format!("the HTTP client could not be built: {e}"),
                        stderr: String::new(),
                    })?;
                let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                // Read (and refreshed when about to expire) at every connection, so a
                // reconnect after the token expired carries a fresh one.
                if let Some(token) = crate::oauth::access_token(&self.config).await? {
                    http = http.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::with_client(client, http);
                (boxed(handler.serve(transport)), None)
            }
        };
        let session = async {
            let service = handshake.await.map_err(|e| reason::handshake(&e))?;
            let listed = if list {
                Some(
                    crate::catalog::list(service.peer())
                        .await
                        .map_err(|e| match e {
                            ListFailure::Service(e) => HandshakeFailure::Other(format!(
                                "listing what it offers failed: {}",
                                reason::describe(&e)
                            )),
                            ListFailure::TooManyPages(what) => HandshakeFailure::TooManyPages(what),
                        })?,
                )
            } else {
                None
            };
            Ok::<_, HandshakeFailure>((service, listed))
        };
        match tokio::time::timeout(timeout, session).await {
            Ok(Ok((service, listed))) => {
                self.generation.fetch_add(1, Ordering::SeqCst);
                Ok((service, pid, listed))
            }
            Ok(Err(HandshakeFailure::Refused(status))) => Err(McpError::Refused {
                server,
                target,
                status,
            }),
            Ok(Err(HandshakeFailure::TooManyPages(what))) => Err(McpError::TooManyPages {
                server,
                what,
                pages: crate::MAX_PAGES,
            }),
            Ok(Err(HandshakeFailure::Other(reason))) => Err(McpError::Handshake {
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
    pub(crate) async fn peer(&self) -> Result<(Peer<RoleClient>, u64), ToolError> {
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
    pub(crate) async fn call_failed(
        &self,
        remote: &str,
        error: ServiceError,
        generation: u64,
    ) -> ToolError {
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
                // Refused credentials stay refused: trying again would not help.
                if let Some(status) = reason::refused_status(&other) {
                    return ToolError::failed(
                        McpError::Refused {
                            server: server.clone(),
                            target: self.config.transport().to_string(),
                            status,
                        }
                        .to_string(),
                    );
                }
                ToolError::transient(format!(
                    "mcp server `{server}` failed during the call to {remote:?} ({}); it will be restarted{}",
                    reason::describe(&other),
                    stderr_note(&self.dying_stderr_tail().await)
                ))
            }
        }
    }

    pub(crate) fn list_error(&self, reason: String) -> McpError {
        McpError::List {
            server: self.config.name().clone(),
            reason,
            stderr: self.stderr_tail(),
        }
    }

    /// Lists what the server offers again (tools, resources, prompts).
    pub(crate) async fn relist(&self) -> Result<crate::catalog::Listing, McpError> {
        let (peer, _) = self
            .peer()
            .await
            .map_err(|e| self.list_error(e.to_string()))?;
        crate::catalog::list(&peer).await.map_err(|e| match e {
            ListFailure::Service(e) => self.list_error(reason::describe(&e)),
            ListFailure::TooManyPages(what) => McpError::TooManyPages {
                server: self.config.name().clone(),
                what,
                pages: crate::MAX_PAGES,
            },
        })
    }

    /// The stderr tail of a child that has just died: a child that exits closes stdout
    /// and stderr together, and the copier may not have read the last bytes yet, so this
    /// waits (at most [`STDERR_SETTLE`]) for it to reach end-of-file first.
    async fn dying_stderr_tail(&self) -> String {
        let copy = self
            .stderr_copy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(copy) = copy {
            let _ = tokio::time::timeout(STDERR_SETTLE, copy).await;
        }
        self.stderr_tail()
    }

    pub(crate) fn stderr_tail(&self) -> String {
        let tail = self
            .stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (a, b) = tail.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        text.trim().to_owned()
    }
}

/// The variables of rein's environment a stdio server inherits: those of
/// [`Transport::INHERITED_ENV`] that are set, except a shell function (a value starting
/// with `()`), which a shell would run.
fn inherited_env() -> impl Iterator<Item = (&'static str, std::ffi::OsString)> {
    Transport::INHERITED_ENV.iter().filter_map(|name| {
        let value = std::env::var_os(name)?;
        (!value.as_encoded_bytes().starts_with(b"()")).then_some((*name, value))
    })
}

/// Copies a child's stderr into the bounded tail, dropping the oldest bytes.
async fn capture(mut stderr: tokio::process::ChildStderr, tail: Arc<StdMutex<VecDeque<u8>>>) {
    let mut buf = [0_u8; 1024];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut tail = tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (its stderr ends with: {stderr})")
    }
}

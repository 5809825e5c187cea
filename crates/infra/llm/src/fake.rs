//! A loopback model server for tests and examples: it speaks both APIs, streams or not, and
//! answers from a script — including the failures real servers produce (429 with
//! `Retry-After`, 401, 500, a hung connection, "context length exceeded", SSE cut mid-UTF-8
//! and mid-JSON). It listens on `127.0.0.1:0` only.
//!
//! It is as strict as the real APIs: a request they would refuse (a call without its
//! result, an empty turn, Anthropic roles out of turn or no `max_tokens`, a function name
//! they do not accept) gets their `400` and its error shape, and uses up no scripted reply.
//! Started with [`FakeServer::start_caching`], it also reports cached prompt tokens the way
//! a provider's prefix cache would, roughly: the longest prefix shared with the previous
//! request.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! use rein_llm::fake::{FakeServer, Reply};
//! use rein_llm::{Api, ChatRequest, HttpProvider, Message, Provider, ProviderConfig};
//!
//! let server = FakeServer::start([Reply::openai_text("hello")]).await?;
//! let provider = HttpProvider::new(ProviderConfig::new(Api::OpenAi, server.base_url(), "fake"))?;
//! let request = ChatRequest {
//!     system: "be brief".into(),
//!     messages: vec![Message::User { text: "hi".into() }],
//!     functions: vec![],
//! };
//! assert_eq!(provider.complete(&request).await?.response.text, "hello");
//! assert_eq!(server.requests().len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?; Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::serve::ListenerExt as _;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

mod script;
mod strict;

pub use script::{Call, Reply};
use strict::Wire;

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The path (`/v1/chat/completions` or `/v1/messages`).
    pub path: String,
    /// Whether it carried an `authorization` or `x-api-key` header.
    pub authorized: bool,
    /// The exact body.
    pub body: Vec<u8>,
    /// Its `traceparent` header, if it carried one.
    pub traceparent: Option<String>,
}

impl Received {
    /// The body as JSON (`Null` if it is not).
    #[must_use]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// Everything the request says to the model besides its own turns, in order, one piece a
    /// line: the system prompt, user text and tool results (either API).
    #[must_use]
    pub fn told(&self) -> String {
        let body = self.json();
        let mut out = vec![text_of(&body["system"])];
        for m in body["messages"].as_array().into_iter().flatten() {
            if m["role"] != "assistant" {
                out.push(text_of(&m["content"]));
            }
        }
        out.join("\n")
    }

    /// What the request says to the model after its last turn (everything but the system
    /// prompt when it has had none): user text and tool results (either API).
    #[must_use]
    pub fn told_since_last_turn(&self) -> String {
        let body = self.json();
        let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let start = messages
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .map_or(0, |i| i + 1);
        messages[start..]
            .iter()
            .filter(|m| m["role"] != "system")
            .map(|m| text_of(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The text of a message's content: a string, or the text and tool results of its blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().or_else(|| b["content"].as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A running fake server. Dropping it stops it.
#[derive(Debug)]
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

#[derive(Debug, Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
    /// Answered forever once the script is used up, recording nothing (benchmarks).
    repeat: Option<Reply>,
    /// Whether replies report cached prompt tokens.
    caching: bool,
    /// The previous request's cache key (tools, system, messages), when caching.
    previous: Mutex<Option<String>>,
}

impl FakeServer {
    /// Starts a server on `127.0.0.1:0` that answers with `replies`, in order, whatever the
    /// path; once they are used up it answers `500`.
    ///
    /// # Errors
    /// When the loopback socket cannot be bound.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> std::io::Result<Self> {
        Self::serve(Shared {
            script: Mutex::new(replies.into_iter().collect()),
            ..Shared::default()
        })
        .await
    }

    /// [`FakeServer::start`], reporting in each JSON or SSE reply's usage the prompt tokens
    /// a provider's prefix cache would have served: a quarter of the bytes the request
    /// shares, from its start (tools, system prompt, messages), with the previous one
    /// (`OpenAI`'s `prompt_tokens_details.cached_tokens`, Anthropic's
    /// `cache_read_input_tokens`).
    ///
    /// # Errors
    /// When the loopback socket cannot be bound.
    pub async fn start_caching(replies: impl IntoIterator<Item = Reply>) -> std::io::Result<Self> {
        Self::serve(Shared {
            script: Mutex::new(replies.into_iter().collect()),
            caching: true,
            ..Shared::default()
        })
        .await
    }

    /// Starts a server that answers every request with `reply` and records none of them
    /// (for benchmarks).
    ///
    /// # Errors
    /// When the loopback socket cannot be bound.
    pub async fn repeating(reply: Reply) -> std::io::Result<Self> {
        Self::serve(Shared {
            repeat: Some(reply),
            ..Shared::default()
        })
        .await
    }

    /// Answers with `replies`, in order, then with `reply` forever, reporting cached prompt
    /// tokens as [`FakeServer::start_caching`] does and recording no request (long-run
    /// benchmarks: nothing grows with the run on the server's side).
    ///
    /// # Errors
    /// When the loopback socket cannot be bound.
    pub async fn caching_then_repeating(
        replies: impl IntoIterator<Item = Reply>,
        reply: Reply,
    ) -> std::io::Result<Self> {
        Self::serve(Shared {
            script: Mutex::new(replies.into_iter().collect()),
            repeat: Some(reply),
            caching: true,
            ..Shared::default()
        })
        .await
    }

    async fn serve(shared: Shared) -> std::io::Result<Self> {
        let shared = Arc::new(shared);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        // Each piece goes out at once: no Nagle delay between a stream's writes.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, shared, task })
    }

    /// The base URL to configure a provider with (`http://127.0.0.1:PORT/v1`).
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Adds replies at the end of the script.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.shared.script).extend(replies);
    }

    /// The requests received so far, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<Received> {
        lock(&self.shared.received).clone()
    }

    /// Stops the server: connections are dropped, new ones refused.
    pub async fn stop(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if shared.repeat.is_none() {
        lock(&shared.received).push(Received {
            path: uri.path().to_owned(),
            authorized: headers.contains_key("authorization") || headers.contains_key("x-api-key"),
            body: body.to_vec(),
            traceparent: headers
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        });
    }
    let wire = Wire::of(uri.path());
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    if let (Some(wire), Some(json)) = (wire, &json)
        && let Err(message) = strict::check(wire, json)
    {
        return Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header("content-type", "application/json")
            .body(Body::from(wire.error_body(&message)))
            .unwrap_or_else(|_| Response::new(Body::empty()));
    }
    let mut reply = lock(&shared.script)
        .pop_front()
        .or_else(|| shared.repeat.clone());
    if shared.caching
        && let (Some(wire), Some(json), Some(r)) = (wire, &json, reply.as_mut())
    {
        let mut previous = lock(&shared.previous);
        let (key, cached) = strict::cached_tokens(previous.as_deref(), json);
        *previous = Some(key);
        r.report_cached(wire, cached);
    }
    let mut response = Response::builder();
    match reply {
        None => response
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("fake server: no scripted reply left")),
        Some(Reply::Json(v)) => response
            .header("content-type", "application/json")
            .body(Body::from(v.to_string())),
        Some(Reply::Raw(bytes)) => response
            .header("content-type", "application/json")
            .body(Body::from(bytes)),
        Some(Reply::Status {
            status,
            headers,
            body,
        }) => {
            response = response.status(status);
            for (k, v) in headers {
                response = response.header(k, v);
            }
            response.body(Body::from(body))
        }
        Some(Reply::Hang) => std::future::pending().await,
        Some(Reply::Sse { chunks, hang }) => {
            let pieces = futures_util::stream::iter(chunks).then(|c| async move {
                // Give each piece its own write, so the client sees the cuts.
                tokio::task::yield_now().await;
                Ok::<_, Infallible>(c)
            });
            let body = if hang {
                Body::from_stream(pieces.chain(futures_util::stream::pending()))
            } else {
                Body::from_stream(pieces)
            };
            response
                .header("content-type", "text/event-stream")
                .body(body)
        }
    }
    .unwrap_or_else(|_| Response::new(Body::from("fake server: bad scripted reply")))
}

impl Reply {
    /// Says in the reply's usage that `cached` more prompt tokens were read from the cache
    /// (the scripted prompt tokens being those that were not).
    fn report_cached(&mut self, wire: Wire, cached: u64) {
        match self {
            Self::Json(v) => {
                if let Some(usage) = v.get_mut("usage").and_then(Value::as_object_mut) {
                    add_cached(wire, usage, cached);
                }
            }
            Self::Sse { chunks, .. } => {
                let piece = chunks.first().map_or(1, Vec::len);
                let Ok(text) = String::from_utf8(chunks.concat()) else {
                    return;
                };
                // The first usage: OpenAI's last chunk, Anthropic's `message_start`.
                let mut done = false;
                let lines: Vec<String> = text
                    .split('\n')
                    .map(|line| {
                        let Some(mut event) = line
                            .strip_prefix("data: ")
                            .and_then(|d| serde_json::from_str::<Value>(d).ok())
                            .filter(|_| !done)
                        else {
                            return line.to_owned();
                        };
                        let usage = match wire {
                            Wire::OpenAi => event.get_mut("usage"),
                            Wire::Anthropic => event.pointer_mut("/message/usage"),
                        };
                        match usage.and_then(Value::as_object_mut) {
                            Some(usage) => {
                                add_cached(wire, usage, cached);
                                done = true;
                                format!("data: {event}")
                            }
                            None => line.to_owned(),
                        }
                    })
                    .collect();
                let text = lines.join("\n");
                *chunks = text
                    .as_bytes()
                    .chunks(piece.max(1))
                    .map(<[u8]>::to_vec)
                    .collect();
            }
            _ => {}
        }
    }
}

/// Adds `cached` prompt tokens read from the cache to a usage object, as `wire` reports them.
fn add_cached(wire: Wire, usage: &mut serde_json::Map<String, Value>, cached: u64) {
    match wire {
        Wire::OpenAi => {
            // OpenAI's `prompt_tokens` include the cached ones.
            let prompt = usage
                .get("prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            usage.insert("prompt_tokens".into(), json!(prompt + cached));
            usage.insert(
                "prompt_tokens_details".into(),
                json!({"cached_tokens": cached}),
            );
        }
        Wire::Anthropic => {
            usage.insert("cache_read_input_tokens".into(), json!(cached));
        }
    }
}

//! `HttpProvider`: a real server over HTTP(S), with a per-attempt timeout, retries on
//! tower's retry layer (honouring `Retry-After`), a circuit breaker, and bounded reads.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource as _};
use futures_util::StreamExt as _;
use rein_run::Digest;
use rein_run::telemetry::{TRACEPARENT, TraceContext};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use tower::ServiceExt as _;
use tower::retry::Retry;
use tracing::Instrument as _;

use crate::anthropic::Anthropic;
use crate::chat::{ChatRequest, ChatResponse};
use crate::config::{Api, ProviderConfig};
use crate::error::{LlmError, excerpt};
use crate::openai::OpenAi;
use crate::provider::{AttemptHook, Completion, NoHook, Provider};
use crate::telemetry;
use crate::wire::Wire;

mod retry;

use retry::{Breaker, RetryPolicy, retry_after};

/// The longest error body read from a failing server.
const MAX_ERROR_BODY: usize = 64 << 10;

/// How far a streamed reply has come, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamProgress {
    /// SSE events received so far.
    pub events: u64,
    /// Bytes of text and arguments generated so far.
    pub bytes: usize,
    /// Time since the attempt started.
    pub elapsed: Duration,
}

/// Called on every SSE event of a streamed reply.
pub type ProgressFn = Arc<dyn Fn(StreamProgress) + Send + Sync>;

/// The exact request body `config` sends for `request`: what is hashed and what a cassette
/// is keyed by.
#[must_use]
pub fn request_body(config: &ProviderConfig, request: &ChatRequest) -> Vec<u8> {
    // A `Value` of strings, numbers and objects always serializes.
    serde_json::to_vec(&wire(config.api).body(config, request)).unwrap_or_default()
}

/// The one place an [`Api`] becomes its wire format.
fn wire(api: Api) -> &'static dyn Wire {
    match api {
        Api::OpenAi => &OpenAi,
        Api::Anthropic => &Anthropic,
    }
}

/// A model server reached over HTTP. Cheap to clone: clones share the connection pool and
/// the circuit breaker.
///
/// ```no_run
/// use rein_llm::{Api, HttpProvider, ProviderConfig};
/// let provider = HttpProvider::new(
///     ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:8080/v1", "local").with_stream(true),
/// )?;
/// # Ok::<(), rein_llm::LlmError>(())
/// ```
#[derive(Clone)]
pub struct HttpProvider {
    inner: Arc<Inner>,
}

struct Inner {
    config: ProviderConfig,
    wire: &'static dyn Wire,
    url: String,
    client: reqwest::Client,
    headers: HeaderMap,
    breaker: Breaker,
    progress: Option<ProgressFn>,
    /// Where the `traceparent` sent with each request comes from, when telemetry is on.
    trace: Option<Arc<dyn TraceContext>>,
    /// The key and the extra headers' values, only to scrub them from error text a server
    /// might echo them in.
    secrets: Vec<String>,
}

impl fmt::Debug for HttpProvider {
    /// Shows where and what, never the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider")
            .field("api", &self.inner.config.api)
            .field("url", &self.inner.url)
            .field("model", &self.inner.config.model)
            .field("api_key_env", &self.inner.config.api_key_env)
            .finish_non_exhaustive()
    }
}

impl HttpProvider {
    /// A provider for `config`, reading the API key from the variable it names.
    ///
    /// # Errors
    /// [`LlmError::MissingKey`] when the variable is not set; [`LlmError::Config`] for an
    /// unusable URL, header or limit.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let key = match &config.api_key_env {
            None => None,
            Some(var) => Some(
                std::env::var(var)
                    .ok()
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| LlmError::MissingKey { var: var.clone() })?,
            ),
        };
        Self::with_key(config, key.as_deref())
    }

    /// A provider for `config` with the API key given directly (tests, secret stores).
    ///
    /// # Errors
    /// [`LlmError::Config`] for an unusable URL, header or limit.
    pub fn with_key(config: ProviderConfig, key: Option<&str>) -> Result<Self, LlmError> {
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Config(format!(
                "base_url `{base}` must start with http:// or https://"
            )));
        }
        if config.max_output_tokens == 0 || config.max_reply_bytes == 0 {
            return Err(LlmError::Config(
                "max_output_tokens and max_reply_bytes must be above 0".into(),
            ));
        }
        let wire = wire(config.api);
        let url = format!("{base}/{}", wire.endpoint());
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in wire.fixed_headers() {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        if let Some(key) = key {
            let (name, value) = wire.key_header(key);
            let mut value =
                HeaderValue::from_str(&value).map_err(|e| LlmError::KeyNotHeaderSafe {
                    var: config
                        .api_key_env
                        .clone()
                        .unwrap_or_else(|| "<none>".into()),
                    source: Box::new(e),
                })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let mut secrets: Vec<String> = key.map(str::to_owned).into_iter().collect();
        for (name, source) in &config.extra_headers {
            let text = source.resolve(name)?;
            let name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| LlmError::HeaderName {
                    header: name.clone(),
                    source: Box::new(e),
                })?;
            let mut value = HeaderValue::from_str(&text).map_err(|e| LlmError::HeaderValue {
                header: name.to_string(),
                source: Box::new(e),
            })?;
            // Any header value may be a credential: kept out of logs, and of error texts.
            value.set_sensitive(true);
            headers.insert(name, value);
            if !text.trim().is_empty() {
                secrets.push(text);
            }
        }
        let client =
            reqwest::Client::builder()
                .no_proxy()
                .build()
                .map_err(|e| LlmError::HttpClient {
                    source: Box::new(e),
                })?;
        let breaker = Breaker::new(config.breaker_failures, config.breaker_open_for);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                wire,
                url,
                client,
                headers,
                breaker,
                progress: None,
                trace: None,
                secrets,
            }),
        })
    }

    /// The same provider, reporting streaming progress to `progress`.
    #[must_use]
    pub fn with_progress(self, progress: ProgressFn) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                config: inner.config.clone(),
                wire: inner.wire,
                url: inner.url.clone(),
                client: inner.client.clone(),
                headers: inner.headers.clone(),
                breaker: inner.breaker.clone(),
                progress: Some(progress),
                trace: inner.trace.clone(),
                secrets: inner.secrets.clone(),
            }),
        }
    }

    /// The same provider, sending the W3C trace context of each call's `chat` span as a
    /// `traceparent` header (see `rein::otel::Telemetry::trace_context`).
    #[must_use]
    pub fn with_trace_context(self, context: Arc<dyn TraceContext>) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                config: inner.config.clone(),
                wire: inner.wire,
                url: inner.url.clone(),
                client: inner.client.clone(),
                headers: inner.headers.clone(),
                breaker: inner.breaker.clone(),
                progress: inner.progress.clone(),
                trace: Some(context),
                secrets: inner.secrets.clone(),
            }),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ProviderConfig {
        &self.inner.config
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        self.inner.config.api.as_str()
    }

    fn model(&self) -> &str {
        &self.inner.config.model
    }

    fn max_output_tokens(&self) -> u32 {
        self.inner.config.max_output_tokens
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.complete_with(request, &NoHook).await
    }

    fn request_hash(&self, request: &ChatRequest) -> Digest {
        Digest::of_bytes(&request_body(&self.inner.config, request))
    }

    async fn complete_with(
        &self,
        request: &ChatRequest,
        hook: &dyn AttemptHook,
    ) -> Result<Completion, LlmError> {
        let inner = &self.inner;
        inner.breaker.admit()?;
        let body = Arc::new(request_body(&inner.config, request));
        let request_hash = Digest::of_bytes(&body);
        let started = Instant::now();
        let count = AtomicU32::new(0);
        let attempt = tower::service_fn(|body: Arc<Vec<u8>>| {
            let (inner, count) = (Arc::clone(inner), &count);
            async move {
                // Every attempt, retries included, is announced before it is sent.
                let attempt = count.fetch_add(1, Ordering::Relaxed) + 1;
                hook.before(attempt, request_hash).await?;
                let outcome = inner.attempt(&body, hook).await;
                if let Err(e) = &outcome {
                    hook.failed(attempt, e).await;
                }
                outcome
            }
        });
        let policy = RetryPolicy {
            left: inner.config.retries,
            backoff: inner.config.backoff,
            max_wait: inner.config.max_retry_after,
        };
        let span = telemetry::chat_span(self.name(), &inner.config.model, &inner.url);
        span.in_scope(|| telemetry::request_content(&body));
        let outcome = Retry::new(policy, attempt)
            .oneshot(body)
            .instrument(span.clone())
            .await;
        inner.breaker.record(&outcome);
        let outcome = outcome.map(|response| Completion {
            response,
            request_hash,
            latency: started.elapsed(),
        });
        telemetry::record_outcome(&span, &outcome);
        outcome
    }
}

impl Inner {
    /// One attempt, bounded by the per-attempt timeout.
    async fn attempt(&self, body: &[u8], hook: &dyn AttemptHook) -> Result<ChatResponse, LlmError> {
        let timeout = self.config.timeout;
        tokio::time::timeout(timeout, self.send(body, hook))
            .await
            .map_err(|_| LlmError::Timeout(timeout))?
            .map_err(|e| self.secrets.iter().fold(e, |e, s| e.redact(s)))
    }

    async fn send(&self, body: &[u8], hook: &dyn AttemptHook) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let mut request = self.client.post(&self.url).headers(self.headers.clone());
        // Sent from inside the call's `chat` span: the server's work becomes its child.
        if let Some(parent) = self.trace.as_ref().and_then(|t| t.current()) {
            request = request.header(TRACEPARENT, parent.to_string());
        }
        let response = request
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| self.connection(e))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let text = read_bounded(response, MAX_ERROR_BODY)
                .await
                .map(|(bytes, _)| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            return Err(self.status_error(status.as_u16(), retry_after, &text));
        }
        if !self.config.stream {
            let (text, cut) = read_bounded(response, self.config.max_reply_bytes)
                .await
                .map_err(|(received, e)| self.cut(received, e))?;
            if cut {
                return Err(LlmError::TooLarge {
                    limit: self.config.max_reply_bytes,
                });
            }
            let text = String::from_utf8(text).map_err(|e| {
                LlmError::unparsable(
                    "the reply is not UTF-8",
                    &String::from_utf8_lossy(e.as_bytes()),
                    e.utf8_error(),
                )
            })?;
            return self.wire.parse(&text);
        }
        self.stream(response, started, hook).await
    }

    /// Reads a streamed reply, handing `hook` its pieces as they arrive when anybody
    /// watches.
    async fn stream(
        &self,
        response: reqwest::Response,
        started: Instant,
        hook: &dyn AttemptHook,
    ) -> Result<ChatResponse, LlmError> {
        let limit = self.config.max_reply_bytes;
        // How much of the reply arrived, for the error when the stream is cut.
        let received = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&received);
        let bytes = response.bytes_stream().map(move |chunk| {
            let chunk = chunk.map_err(ChunkError::Transport)?;
            let seen = counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
            if seen > limit {
                Err(ChunkError::TooLarge)
            } else {
                Ok(chunk)
            }
        });
        let mut events = bytes.eventsource();
        let mut reply = self.wire.stream();
        let mut count = 0u64;
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(EventStreamError::Transport(ChunkError::TooLarge)) => {
                    return Err(LlmError::TooLarge { limit });
                }
                Err(EventStreamError::Transport(ChunkError::Transport(e))) => {
                    return Err(self.cut(received.load(Ordering::Relaxed), e));
                }
                Err(EventStreamError::Utf8(e)) => {
                    return Err(LlmError::unparsable(
                        "the event stream is not UTF-8",
                        "",
                        e.utf8_error(),
                    ));
                }
                Err(EventStreamError::Parser(e)) => {
                    return Err(LlmError::malformed(
                        "the event stream is malformed",
                        &e.to_string(),
                    ));
                }
            };
            count += 1;
            // Asked per event: a watcher may come or go while the reply streams in.
            let mut publish = |delta| hook.delta(delta);
            let deltas: crate::wire::Deltas<'_> = if hook.streams() {
                Some(&mut publish)
            } else {
                None
            };
            let done = reply.feed(&event.data, deltas)?;
            if let Some(progress) = &self.progress {
                progress(StreamProgress {
                    events: count,
                    bytes: reply.text_len(),
                    elapsed: started.elapsed(),
                });
            }
            if done {
                break;
            }
        }
        reply.finish()
    }

    /// The reply broke off after `received` bytes.
    fn cut(&self, received: usize, e: reqwest::Error) -> LlmError {
        LlmError::ReplyCut {
            url: self.url.clone(),
            received,
            // The URL is in the error already; the headers never are in reqwest's.
            source: Box::new(e.without_url()),
        }
    }

    fn connection(&self, e: reqwest::Error) -> LlmError {
        LlmError::Connection {
            url: self.url.clone(),
            source: Box::new(e.without_url()),
        }
    }

    fn status_error(&self, status: u16, retry_after: Option<Duration>, text: &str) -> LlmError {
        match status {
            401 | 403 => LlmError::Unauthorized {
                status,
                var: self
                    .config
                    .api_key_env
                    .clone()
                    .unwrap_or_else(|| "<none>".into()),
            },
            429 => LlmError::RateLimited { retry_after },
            500..=599 => LlmError::Server {
                status,
                excerpt: excerpt(text),
            },
            _ => LlmError::context_too_long(text).unwrap_or_else(|| LlmError::Rejected {
                status,
                excerpt: excerpt(text),
            }),
        }
    }
}

/// Why the bytes of a streamed reply stopped coming.
enum ChunkError {
    /// The connection failed.
    Transport(reqwest::Error),
    /// More arrived than the reply may hold.
    TooLarge,
}

/// Reads at most `limit` bytes of the body; `true` when it was cut there. An error comes
/// with how many bytes had arrived.
async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), (usize, reqwest::Error)> {
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| (out.len(), e))? {
        if out.len().saturating_add(chunk.len()) > limit {
            let room = limit - out.len();
            out.extend_from_slice(&chunk[..room]);
            return Ok((out, true));
        }
        out.extend_from_slice(&chunk);
    }
    Ok((out, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_never_in_debug() {
        let config = ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:1/v1", "m")
            .with_api_key_env("REIN_TEST_KEY");
        let p = HttpProvider::with_key(config, Some("sk-secret-123")).unwrap();
        let shown = format!("{p:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("REIN_TEST_KEY"), "{shown}");
    }
}

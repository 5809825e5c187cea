//! `LlmError`: everything that can go wrong between rein and a model, typed and bounded,
//! with the error that caused it as its source.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use rein_run::{Digest, PlannerError};

/// An error from a library rein-llm uses (the HTTP client, a parser), kept as the source
/// of an [`LlmError`] without making that library's types part of rein-llm's API.
pub type Cause = Box<dyn Error + Send + Sync>;

/// At most this many characters of a server's reply go into an error message.
pub const EXCERPT_CHARS: usize = 200;

/// Why a model call, or the planner around it, failed. Messages never contain an API key and
/// quote at most [`EXCERPT_CHARS`] characters of what a server sent; the error that caused
/// one is its [`source`](Error::source).
///
/// Two errors are equal when they are the same variant and say the same.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The configuration cannot work.
    #[error("invalid model configuration: {0}")]
    Config(String),
    /// The API key cannot be sent: it holds characters an HTTP header cannot carry.
    #[error(
        "invalid model configuration: the key in `{var}` holds characters a header cannot \
         carry; check the variable's value"
    )]
    KeyNotHeaderSafe {
        /// The variable the key was read from.
        var: String,
        /// The header library's refusal (it never quotes the value).
        #[source]
        source: Cause,
    },
    /// One of [`ProviderConfig::extra_headers`](crate::ProviderConfig::extra_headers) has
    /// a name HTTP does not allow.
    #[error("invalid model configuration: `{header}` is not a header name: {source}")]
    HeaderName {
        /// The name as configured.
        header: String,
        /// The header library's refusal.
        #[source]
        source: Cause,
    },
    /// One of [`ProviderConfig::extra_headers`](crate::ProviderConfig::extra_headers) has
    /// a value an HTTP header cannot carry.
    #[error(
        "invalid model configuration: the value of header `{header}` holds characters a \
         header cannot carry"
    )]
    HeaderValue {
        /// The header.
        header: String,
        /// The header library's refusal (it never quotes the value).
        #[source]
        source: Cause,
    },
    /// The HTTP client cannot be built (no TLS backend, for one).
    #[error("invalid model configuration: cannot build the HTTP client: {source}")]
    HttpClient {
        /// The HTTP client's error.
        #[source]
        source: Cause,
    },
    /// The environment variable meant to hold the API key is not set.
    #[error("the API key variable `{var}` is not set: export it with the provider's key")]
    MissingKey {
        /// The variable's name.
        var: String,
    },
    /// The environment variable meant to hold an extra header's value is not set.
    #[error("the variable `{var}` that holds the value of header `{header}` is not set: export it")]
    MissingHeaderValue {
        /// The header.
        header: String,
        /// The variable's name.
        var: String,
    },
    /// The server refused the key (401/403).
    #[error("the model server refused the credentials (HTTP {status}): check the key in `{var}`")]
    Unauthorized {
        /// The HTTP status.
        status: u16,
        /// The variable the key was read from (`<none>` when no key is configured).
        var: String,
    },
    /// Too many requests (429) and no retry left.
    #[error("the model server is rate limiting (HTTP 429){}", retry_hint(*.retry_after))]
    RateLimited {
        /// What the server asked to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The server failed (5xx) and no retry left.
    #[error("the model server failed with HTTP {status}: {excerpt}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The start of its body.
        excerpt: String,
    },
    /// The server rejected the request (4xx other than 401/403/429).
    #[error("the model server rejected the request with HTTP {status}: {excerpt}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The start of its body.
        excerpt: String,
    },
    /// The prompt is longer than the model's context window.
    #[error("the prompt exceeds the model's context window: {excerpt}")]
    ContextTooLong {
        /// The start of the server's message.
        excerpt: String,
    },
    /// The server answered, then the connection broke before the reply was complete (a
    /// stream cut mid-reply, a body cut short). Nothing of the partial reply is used, so
    /// the call may be made again.
    #[error(
        "the model server at {url} cut its reply off mid-way, after {received} bytes: \
         {source}; the partial reply was not used"
    )]
    ReplyCut {
        /// The URL called.
        url: String,
        /// How many bytes of the reply had arrived.
        received: usize,
        /// The HTTP client's error (without the URL, which is above).
        #[source]
        source: Cause,
    },
    /// The server could not be reached, or the connection broke before it answered.
    #[error("cannot reach the model server at {url}: {source}")]
    Connection {
        /// The URL called.
        url: String,
        /// The HTTP client's error (without the URL, which is above).
        #[source]
        source: Cause,
    },
    /// No complete answer within the per-call timeout.
    #[error("the model call timed out after {0:?}: raise the timeout or check the server")]
    Timeout(Duration),
    /// The provider's circuit breaker is open after repeated failures.
    #[error(
        "the circuit to the model server is open after {failures} failures in a row; retry later"
    )]
    CircuitOpen {
        /// Consecutive failures that opened it.
        failures: u32,
    },
    /// The reply is not what the API promises.
    #[error("malformed reply from the model server: {reason}{}: {excerpt}", in_parentheses(.source.as_deref()))]
    Malformed {
        /// What was wrong.
        reason: String,
        /// The offending part, bounded.
        excerpt: String,
        /// The parser's error, when a parser refused it.
        #[source]
        source: Option<Cause>,
    },
    /// The reply is larger than the configured limit.
    #[error("the model's reply exceeds {limit} bytes; lower max output tokens or raise the limit")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A recorded cassette has no reply for this request.
    #[error("the cassette has no reply for request {hash}: record it again")]
    NotRecorded {
        /// The SHA-256 of the request body.
        hash: Digest,
    },
    /// Reading or writing a cassette failed.
    #[error("cassette {path}: {source}")]
    Cassette {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line of a cassette is not a recording.
    #[error("cassette {path}, line {line}: not a recording ({source}): record it again")]
    CassetteLine {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The caller's attempt hook did not let the attempt go out (its budget does not fit,
    /// or the engine stopped recording); nothing was sent.
    #[error("the model call was not sent: {source}")]
    AttemptRefused {
        /// Why, as the hook said: the planner returns it as it is.
        #[source]
        source: PlannerError,
    },
}

impl PartialEq for LlmError {
    /// The same variant, saying the same (sources are compared by what they say).
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for LlmError {}

impl LlmError {
    /// Whether a retry may succeed: 429, 5xx, connection errors and timeouts.
    #[must_use]
    pub const fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Server { .. }
                | Self::Connection { .. }
                | Self::ReplyCut { .. }
                | Self::Timeout(_)
        )
    }

    /// Whether another model (a fallback) may answer where this call failed after its
    /// retries: the server was rate limiting (429), failed or overloaded (5xx, Anthropic's
    /// 529), unreachable, cut its reply off or timed out, or its circuit is open. Never for
    /// what the request itself caused (400, 401, 403, 404, 413, 422, a prompt too long for
    /// the context, a reply too large), nor for a call the caller refused to send.
    #[must_use]
    pub const fn another_model_may_answer(&self) -> bool {
        self.is_transient() || matches!(self, Self::CircuitOpen { .. })
    }

    /// The same error with every occurrence of `secret` in its text replaced, so a server
    /// that echoes the key back cannot put it in a message.
    #[must_use]
    pub(crate) fn redact(self, secret: &str) -> Self {
        if secret.is_empty() {
            return self;
        }
        let clean = |s: String| s.replace(secret, "[redacted]");
        match self {
            Self::Server { status, excerpt } => Self::Server {
                status,
                excerpt: clean(excerpt),
            },
            Self::Rejected { status, excerpt } => Self::Rejected {
                status,
                excerpt: clean(excerpt),
            },
            Self::ContextTooLong { excerpt } => Self::ContextTooLong {
                excerpt: clean(excerpt),
            },
            Self::Connection { url, source } => Self::Connection {
                url: clean(url),
                source: scrub(source, secret),
            },
            Self::ReplyCut {
                url,
                received,
                source,
            } => Self::ReplyCut {
                url: clean(url),
                received,
                source: scrub(source, secret),
            },
            Self::Malformed {
                reason,
                excerpt,
                source,
            } => Self::Malformed {
                reason: clean(reason),
                excerpt: clean(excerpt),
                source: source.map(|s| scrub(s, secret)),
            },
            other => other,
        }
    }

    /// A context-window error, when `text` (a server's error message) says the prompt is
    /// too long in the words `OpenAI`, Anthropic, llama.cpp or vLLM use.
    pub(crate) fn context_too_long(text: &str) -> Option<Self> {
        let lower = text.to_ascii_lowercase();
        [
            "context_length_exceeded",
            "context length",
            "maximum context",
            "context window",
            "prompt is too long",
            "exceeds the available context",
        ]
        .iter()
        .any(|p| lower.contains(p))
        .then(|| Self::ContextTooLong {
            excerpt: excerpt(text),
        })
    }

    /// A malformed-reply error quoting (a bounded excerpt of) `text`.
    pub(crate) fn malformed(reason: impl Into<String>, text: &str) -> Self {
        Self::Malformed {
            reason: reason.into(),
            excerpt: excerpt(text),
            source: None,
        }
    }

    /// A malformed-reply error quoting `text`, which `source` (a parser) refused.
    pub(crate) fn unparsable(
        reason: impl Into<String>,
        text: &str,
        source: impl Error + Send + Sync + 'static,
    ) -> Self {
        Self::Malformed {
            reason: reason.into(),
            excerpt: excerpt(text),
            source: Some(Box::new(source)),
        }
    }
}

/// ` (what the source says)`, or nothing.
fn in_parentheses(source: Option<&(dyn Error + Send + Sync)>) -> String {
    source.map_or_else(String::new, |s| format!(" ({s})"))
}

/// `cause`, or its text with `secret` replaced when it or a source of it says `secret` (a
/// parser quoting a reply that echoes the key): the error chain never shows it.
fn scrub(cause: Cause, secret: &str) -> Cause {
    let mut texts = vec![cause.to_string()];
    let mut next = cause.source();
    while let Some(e) = next {
        texts.push(e.to_string());
        next = e.source();
    }
    let debug = format!("{cause:?}");
    if !debug.contains(secret) && texts.iter().all(|t| !t.contains(secret)) {
        return cause;
    }
    Box::new(Scrubbed(texts.join(": ").replace(secret, "[redacted]")))
}

/// The text of an error that quoted a secret, the secret replaced.
#[derive(Debug)]
struct Scrubbed(String);

impl fmt::Display for Scrubbed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Scrubbed {}

fn retry_hint(after: Option<Duration>) -> String {
    after.map_or_else(String::new, |d| format!("; it asked to wait {d:?}"))
}

/// The first [`EXCERPT_CHARS`] characters of `text`, marked when cut.
#[must_use]
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_of_the_server_go_to_another_model() {
        let url = || "http://127.0.0.1:1/v1".to_owned();
        let text = || "x".to_owned();
        let cause = || -> Cause { text().into() };
        for e in [
            LlmError::RateLimited { retry_after: None },
            LlmError::Server {
                status: 503,
                excerpt: text(),
            },
            LlmError::Server {
                status: 529,
                excerpt: text(),
            },
            LlmError::Connection {
                url: url(),
                source: cause(),
            },
            LlmError::ReplyCut {
                url: url(),
                received: 3,
                source: cause(),
            },
            LlmError::Timeout(Duration::from_secs(1)),
            LlmError::CircuitOpen { failures: 5 },
        ] {
            assert!(e.another_model_may_answer(), "{e}");
        }
        for e in [
            LlmError::Config(text()),
            LlmError::MissingKey { var: text() },
            LlmError::MissingHeaderValue {
                header: text(),
                var: text(),
            },
            LlmError::Unauthorized {
                status: 401,
                var: text(),
            },
            LlmError::Unauthorized {
                status: 403,
                var: text(),
            },
            LlmError::Rejected {
                status: 400,
                excerpt: text(),
            },
            LlmError::Rejected {
                status: 404,
                excerpt: text(),
            },
            LlmError::Rejected {
                status: 413,
                excerpt: text(),
            },
            LlmError::Rejected {
                status: 422,
                excerpt: text(),
            },
            LlmError::ContextTooLong { excerpt: text() },
            LlmError::KeyNotHeaderSafe {
                var: text(),
                source: cause(),
            },
            LlmError::HeaderName {
                header: text(),
                source: cause(),
            },
            LlmError::HeaderValue {
                header: text(),
                source: cause(),
            },
            LlmError::HttpClient { source: cause() },
            LlmError::Malformed {
                reason: text(),
                excerpt: text(),
                source: None,
            },
            LlmError::TooLarge { limit: 1 },
            LlmError::NotRecorded {
                hash: Digest::of_bytes(b"x"),
            },
            LlmError::Cassette {
                path: text(),
                source: std::io::Error::other(text()),
            },
            LlmError::CassetteLine {
                path: text(),
                line: 1,
                source: serde_json::from_str::<u8>("x").unwrap_err(),
            },
            LlmError::AttemptRefused {
                source: PlannerError::failed(text()),
            },
        ] {
            assert!(!e.another_model_may_answer(), "{e}");
        }
    }

    #[test]
    fn a_secret_a_parser_quotes_is_scrubbed_from_the_whole_chain() {
        let parsed = serde_json::from_str::<u8>(r#""sk-secret-1""#).unwrap_err();
        assert!(parsed.to_string().contains("sk-secret-1"), "{parsed}");
        let e = LlmError::unparsable("not a chat completion", "{}", parsed).redact("sk-secret-1");
        let mut shown = vec![e.to_string(), format!("{e:?}")];
        let mut next = e.source();
        while let Some(s) = next {
            shown.push(s.to_string());
            next = s.source();
        }
        assert_eq!(shown.len(), 3, "the cause stays in the chain: {shown:?}");
        for text in shown {
            assert!(!text.contains("sk-secret-1"), "{text}");
        }
        // Nothing to scrub: the parser's own error stays the source.
        let parsed = serde_json::from_str::<u8>("x").unwrap_err();
        let e = LlmError::unparsable("not a chat completion", "x", parsed).redact("sk-secret-1");
        assert!(
            e.source()
                .is_some_and(|s| s.downcast_ref::<serde_json::Error>().is_some())
        );
    }

    #[test]
    fn context_errors_are_recognised() {
        for text in [
            r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}"#,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#,
        ] {
            assert!(matches!(
                LlmError::context_too_long(text),
                Some(LlmError::ContextTooLong { .. })
            ));
        }
        assert!(LlmError::context_too_long("bad temperature").is_none());
    }

    #[test]
    fn excerpts_are_bounded_on_char_boundaries() {
        let long = "é".repeat(10_000);
        let e = excerpt(&long);
        assert!(e.chars().count() < EXCERPT_CHARS + 40, "{e}");
        assert!(e.ends_with("(20000 bytes in all)"), "{e}");
        assert_eq!(excerpt("short"), "short");
    }
}

//! `http.fetch`: GET (and, when configured, POST) to hosts on an allowlist, with size and
//! time caps, never following a redirect to a host outside the list.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rein_tool::{Annotations, Tool, ToolError, ToolOutput, ToolSpec};
use reqwest::redirect;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::{builtin_spec, parse, schema};

/// Which hosts `http.fetch` may reach, and its caps.
///
/// ```
/// use std::time::Duration;
/// use rein_tools::HttpConfig;
///
/// let config = HttpConfig::new(["api.example.com"])
///     .with_max_bytes(512 * 1024)
///     .with_timeout(Duration::from_secs(10));
/// assert!(config.allows("API.example.com"));
/// assert!(!config.allows("example.com"));
/// assert!(!HttpConfig::new(Vec::<String>::new()).allows("localhost"));
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    hosts: Vec<String>,
    max_bytes: u64,
    timeout: Duration,
    max_redirects: usize,
}

impl HttpConfig {
    /// Requests may go to exactly these hosts (case-insensitive; no wildcards). An empty
    /// list allows nothing. Caps: 1 MiB of body, 30 s per call, 5 redirects.
    #[must_use]
    pub fn new<I, S>(hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            hosts: hosts
                .into_iter()
                .map(|h| h.into().to_ascii_lowercase())
                .collect(),
            max_bytes: 1024 * 1024,
            timeout: Duration::from_secs(30),
            max_redirects: 5,
        }
    }

    /// The largest response body, in bytes.
    #[must_use]
    pub const fn with_max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// The longest a call may take, redirects and body included.
    #[must_use]
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether `host` is on the allowlist.
    #[must_use]
    pub fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.contains(&host)
    }
}

/// Why `http.fetch` refused or failed a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The input does not fit the tool's schema.
    #[error("{message}")]
    Input {
        /// What was wrong.
        message: String,
    },
    /// The URL's host is not on the allowlist (or the URL has none).
    #[error(
        "host {host:?} of {url} is not on http.fetch's allowlist; add it to the tool's hosts to allow it"
    )]
    HostNotAllowed {
        /// The URL.
        url: String,
        /// Its host.
        host: String,
    },
    /// The server redirected to a host outside the allowlist; the redirect was not followed.
    #[error("{url} redirects to {location}, whose host is not on the allowlist; not followed")]
    RedirectNotAllowed {
        /// The URL that redirected.
        url: String,
        /// Where it pointed.
        location: String,
    },
    /// The method is not allowed by this tool.
    #[error("http.fetch is configured for GET only (read-only); {method} is refused")]
    MethodNotAllowed {
        /// The method asked for.
        method: String,
    },
    /// The response body is larger than the cap.
    #[error("the response from {url} is larger than {limit} bytes; refused")]
    TooLarge {
        /// The URL.
        url: String,
        /// The cap.
        limit: u64,
    },
    /// The call took longer than the timeout.
    #[error("{url} did not answer within {} ms", after.as_millis())]
    TimedOut {
        /// The URL.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// The request failed (connection, protocol, too many redirects).
    #[error("request to {url} failed: {source}")]
    Request {
        /// The URL.
        url: String,
        /// What went wrong.
        #[source]
        source: reqwest::Error,
    },
}

impl From<HttpError> for ToolError {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Input { .. }
            | HttpError::HostNotAllowed { .. }
            | HttpError::MethodNotAllowed { .. } => Self::invalid_input(e.to_string()),
            HttpError::TimedOut { after, .. } => Self::TimedOut { after },
            HttpError::Request { ref source, .. } if source.is_connect() => {
                Self::transient(e.to_string())
            }
            _ => Self::failed(e.to_string()),
        }
    }
}

/// The input of `http.fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetchInput {
    /// An `http` or `https` URL whose host is on the allowlist.
    url: String,
    /// `GET` (default) or `POST` (only when the tool allows it).
    #[serde(default = "get")]
    method: String,
    /// The request body (POST only).
    #[serde(default)]
    body: Option<String>,
    /// Request headers.
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

fn get() -> String {
    "GET".to_owned()
}

/// The built-in `http.fetch` tool. Its annotations follow what it may do: built with
/// [`HttpFetch::get_only`] it is read-only (and idempotent); with [`HttpFetch::new`] it may
/// also POST, so it has side effects (medium risk) and runs only in `act`.
#[derive(Debug, Clone)]
pub struct HttpFetch {
    spec: ToolSpec,
    client: reqwest::Client,
    config: Arc<HttpConfig>,
    post: bool,
}

impl HttpFetch {
    /// The tool's name.
    pub const NAME: &'static str = "http.fetch";

    /// A read-only `http.fetch`: GET only.
    ///
    /// # Errors
    /// The HTTP client could not be built (no TLS backend).
    pub fn get_only(config: HttpConfig) -> Result<Self, HttpError> {
        Self::build(config, false)
    }

    /// An `http.fetch` that may GET and POST: not read-only.
    ///
    /// # Errors
    /// The HTTP client could not be built (no TLS backend).
    pub fn new(config: HttpConfig) -> Result<Self, HttpError> {
        Self::build(config, true)
    }

    /// The spec of a GET-only (`post == false`: read-only) or a GET-and-POST (side
    /// effects) `http.fetch`.
    #[must_use]
    pub fn spec(post: bool) -> ToolSpec {
        let (annotations, description) = if post {
            (
                Annotations::side_effecting(),
                "Sends a GET or POST request to an allowlisted host and returns the status and body (size and time capped; redirects only to allowlisted hosts)",
            )
        } else {
            (
                Annotations::read_only(),
                "Sends a GET request to an allowlisted host and returns the status and body (size and time capped; redirects only to allowlisted hosts)",
            )
        };
        builtin_spec(Self::NAME, description, annotations, schema::<FetchInput>())
    }

    fn build(config: HttpConfig, post: bool) -> Result<Self, HttpError> {
        let config = Arc::new(config);
        let policy = {
            let config = Arc::clone(&config);
            redirect::Policy::custom(move |attempt| {
                let allowed = attempt.url().host_str().is_some_and(|h| config.allows(h));
                if !allowed {
                    // Stop here: the 3xx response comes back and is refused by name.
                    attempt.stop()
                } else if attempt.previous().len() > config.max_redirects {
                    attempt.error("too many redirects")
                } else {
                    attempt.follow()
                }
            })
        };
        let client = reqwest::Client::builder()
            .redirect(policy)
            .no_proxy()
            .timeout(config.timeout)
            .build()
            .map_err(|source| HttpError::Request {
                url: String::new(),
                source,
            })?;
        Ok(Self {
            spec: Self::spec(post),
            client,
            config,
            post,
        })
    }

    /// Runs the request `input` describes.
    ///
    /// # Errors
    /// The [`HttpError`] that says what was refused or failed. A response with an error
    /// status is not an error: the output carries the status.
    pub async fn run(&self, input: Value) -> Result<Value, HttpError> {
        let input: FetchInput =
            parse(Self::NAME, input).map_err(|message| HttpError::Input { message })?;
        let url = reqwest::Url::parse(&input.url).map_err(|e| HttpError::Input {
            message: format!("http.fetch: invalid url {:?}: {e}", input.url),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpError::Input {
                message: format!("http.fetch: {url} is not an http or https URL"),
            });
        }
        let host = url.host_str().unwrap_or_default().to_owned();
        if !self.config.allows(&host) {
            return Err(HttpError::HostNotAllowed {
                url: url.to_string(),
                host,
            });
        }
        let method = input.method.to_ascii_uppercase();
        let mut request = match method.as_str() {
            "GET" => self.client.get(url.clone()),
            "POST" if self.post => self.client.post(url.clone()),
            _ => return Err(HttpError::MethodNotAllowed { method }),
        };
        for (name, value) in &input.headers {
            request = request.header(name, value);
        }
        if let Some(body) = input.body {
            request = request.body(body);
        }
        let shown = url.to_string();
        let timeout = self.config.timeout;
        let call = self.send(request, &shown);
        tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| HttpError::TimedOut {
                url: shown.clone(),
                after: timeout,
            })?
    }

    async fn send(&self, request: reqwest::RequestBuilder, url: &str) -> Result<Value, HttpError> {
        let timeout = self.config.timeout;
        let failed = |source: reqwest::Error| {
            if source.is_timeout() {
                HttpError::TimedOut {
                    url: url.to_owned(),
                    after: timeout,
                }
            } else {
                HttpError::Request {
                    url: url.to_owned(),
                    source,
                }
            }
        };
        let mut response = request.send().await.map_err(failed)?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            return Err(HttpError::RedirectNotAllowed {
                url: response.url().to_string(),
                location,
            });
        }
        let limit = self.config.max_bytes;
        let too_large = || HttpError::TooLarge {
            url: url.to_owned(),
            limit,
        };
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(json!({
            "url": response.url().to_string(),
            "status": status.as_u16(),
            "content_type": content_type,
            "bytes": body.len(),
            "body": String::from_utf8_lossy(&body),
        }))
    }
}

impl Tool for HttpFetch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.run(input)
            .await
            .map(ToolOutput::new)
            .map_err(ToolError::from)
    }
}

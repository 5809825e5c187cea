//! The configurations: `ProviderConfig` (where the model is, how to call it, how hard to
//! try), `PromptConfig` (how prompts are built) and `LlmConfig` (how the planner talks to
//! its model).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::LlmError;
use crate::prices::Prices;
use crate::provider::millis;

/// The longest `Retry-After` honoured by default ([`ProviderConfig::max_retry_after`]); a
/// server asking for more fails the call instead.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// Which wire protocol the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`): `OpenAI`,
    /// llama.cpp, vLLM, Ollama, most proxies.
    OpenAi,
    /// Anthropic Messages (`POST {base}/messages`).
    Anthropic,
}

impl Api {
    /// The name recorded in the ledger.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

/// How the planner talks to its model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// How prompts are built and compacted.
    #[serde(default)]
    pub prompt: PromptConfig,
    /// Replies without a usable function call handed back to the model, per step, before
    /// the step fails.
    #[serde(default = "default_corrections")]
    pub max_corrections: u32,
    /// The largest function arguments accepted, in bytes.
    #[serde(default = "default_max_argument_bytes")]
    pub max_argument_bytes: usize,
    /// The deepest nesting accepted in function arguments.
    #[serde(default = "default_max_depth")]
    pub max_argument_depth: usize,
    /// The models' prices, to know what each call cost and charge the `cost` budget;
    /// none (or a model not in them): calls cost "unknown", and a run with a `cost`
    /// budget refuses them.
    #[serde(default)]
    pub prices: Option<Prices>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            prompt: PromptConfig::default(),
            max_corrections: default_corrections(),
            max_argument_bytes: default_max_argument_bytes(),
            max_argument_depth: default_max_depth(),
            prices: None,
        }
    }
}

const fn default_corrections() -> u32 {
    2
}
const fn default_max_argument_bytes() -> usize {
    256 << 10
}
const fn default_max_depth() -> usize {
    32
}

/// The default system prompt: how rein runs the model, and that a reply may do several
/// things, so a run takes as few model calls as it can (DESIGN §7, sequence decisions).
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are the planner of an agent run governed by rein. \
Each reply calls functions: tools to gather evidence or act, `transition` to move to another \
state, `finish` when the goal is met, `fail` when it cannot be met, or `ask_human` when only a \
person can answer. Every reply is a model call, so make each one do all it can: one reply may \
call several functions, applied in order. Move to a state and call its tools in the same reply; \
call together every tool whose input you already know; and when the calls left cannot change \
your answer, make them and then `transition` and `finish` in that same reply. rein checks each \
call against its policies, stops at the first it refuses and tells you why; then choose \
differently.";

/// How prompts are built and compacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptConfig {
    /// What the team tells its agent (its task, its style), sent first in the system prompt,
    /// before [`system`](Self::system); empty by default. Set it rather than `system`, so
    /// the model keeps being told how rein runs it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    /// The system prompt rein sends after the [`instructions`](Self::instructions): how
    /// the run works and what the functions do (default [`DEFAULT_SYSTEM_PROMPT`]).
    #[serde(default = "default_system")]
    pub system: String,
    /// Above this estimated prompt size (tokens), older tool I/O is compacted; none: never
    /// before the provider says the context is too long.
    #[serde(default)]
    pub max_prompt_tokens: Option<u64>,
    /// Evidence items kept verbatim when compacting (the most recent ones), at least: the
    /// cut moves this many items at a time, so fewer than twice as many stay, and between
    /// two moves each request extends the one before (a provider's prefix cache keeps
    /// serving it).
    #[serde(default = "default_keep_last")]
    pub keep_last: usize,
    /// The longest rendering of one evidence item, in characters; longer ones are cut.
    #[serde(default = "default_max_item_chars")]
    pub max_item_chars: usize,
}

impl Default for PromptConfig {
    fn default() -> Self {
        Self {
            instructions: String::new(),
            system: default_system(),
            max_prompt_tokens: None,
            keep_last: default_keep_last(),
            max_item_chars: default_max_item_chars(),
        }
    }
}

impl PromptConfig {
    /// The system prompt as sent: the [`instructions`](Self::instructions), when there are
    /// any, then [`system`](Self::system).
    ///
    /// ```
    /// use rein_llm::{DEFAULT_SYSTEM_PROMPT, PromptConfig};
    /// let config = PromptConfig { instructions: "You triage bug reports.".into(), ..PromptConfig::default() };
    /// assert_eq!(config.system_prompt(), format!("You triage bug reports.\n\n{DEFAULT_SYSTEM_PROMPT}"));
    /// assert_eq!(PromptConfig::default().system_prompt(), DEFAULT_SYSTEM_PROMPT);
    /// ```
    #[must_use]
    pub fn system_prompt(&self) -> String {
        if self.instructions.is_empty() {
            self.system.clone()
        } else {
            format!("{}\n\n{}", self.instructions, self.system)
        }
    }
}

fn default_system() -> String {
    DEFAULT_SYSTEM_PROMPT.to_owned()
}
const fn default_keep_last() -> usize {
    4
}
const fn default_max_item_chars() -> usize {
    4000
}

/// Where the value of one of [`ProviderConfig::extra_headers`] comes from.
///
/// ```
/// use rein_llm::HeaderSource;
/// let written: HeaderSource = serde_json::from_str(r#""2024-06-01""#)?;
/// assert_eq!(written, HeaderSource::from("2024-06-01"));
/// let secret: HeaderSource = serde_json::from_str(r#"{"from_env": "AZURE_KEY"}"#)?;
/// assert_eq!(secret, HeaderSource::FromEnv { from_env: "AZURE_KEY".into() });
/// assert!(!format!("{written:?}").contains("2024"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum HeaderSource {
    /// The value, as written in the configuration.
    Literal(String),
    /// The value of this environment variable, read when the provider is built.
    FromEnv {
        /// The variable's name.
        from_env: String,
    },
    /// A value left out of a stored copy of the configuration (it is read again from the
    /// original); a provider cannot be built with it.
    Redacted {
        /// Always `true`.
        redacted: bool,
    },
}

impl HeaderSource {
    /// The text of header `name`: as written, or read from the variable this names.
    ///
    /// # Errors
    /// [`LlmError::MissingHeaderValue`] when the variable is not set (or blank);
    /// [`LlmError::Config`] for a value a stored copy left out.
    pub fn resolve(&self, name: &str) -> Result<String, LlmError> {
        match self {
            Self::Literal(value) => Ok(value.clone()),
            Self::FromEnv { from_env } => std::env::var(from_env)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| LlmError::MissingHeaderValue {
                    header: name.to_owned(),
                    var: from_env.clone(),
                }),
            Self::Redacted { .. } => Err(LlmError::Config(format!(
                "the value of header `{name}` was not stored with this copy of the \
                 configuration; give it again, or read it from a variable with \
                 {{\"from_env\": \"NAME\"}}"
            ))),
        }
    }
}

impl From<&str> for HeaderSource {
    fn from(value: &str) -> Self {
        Self::Literal(value.to_owned())
    }
}

impl From<String> for HeaderSource {
    fn from(value: String) -> Self {
        Self::Literal(value)
    }
}

impl std::fmt::Debug for HeaderSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // A header value may be a secret: never shown.
            Self::Literal(_) => f.write_str("Literal(<not shown>)"),
            Self::FromEnv { from_env } => f
                .debug_struct("FromEnv")
                .field("from_env", from_env)
                .finish(),
            Self::Redacted { .. } => f.write_str("Redacted"),
        }
    }
}

/// How to reach one model. The API key is never part of it: only the *name* of the
/// environment variable that holds it, read when the provider is built.
///
/// ```
/// use rein_llm::{Api, ProviderConfig};
/// let config = ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:8080/v1", "qwen2.5-7b")
///     .with_api_key_env("OPENAI_API_KEY");
/// assert_eq!(config.max_output_tokens, 1024);
/// assert!(!format!("{config:?}").contains("sk-"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The protocol.
    pub api: Api,
    /// The base URL, up to and including the version (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// Sampling temperature; the server's default when absent.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The most tokens one reply may generate (sent as `max_tokens`).
    #[serde(default = "default_max_output_tokens")]
    pub max_output_tokens: u32,
    /// The environment variable holding the API key; none for local servers.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every call (an Azure `api-key`, a proxy's token):
    /// each value written as is, or read from an environment variable when the provider
    /// is built (`{"from_env": "AZURE_KEY"}`). No value is shown in `Debug`, and every
    /// value is sent marked sensitive.
    #[serde(default)]
    pub extra_headers: Vec<(String, HeaderSource)>,
    /// Per-attempt timeout, covering the whole reply (streamed or not).
    #[serde(default = "default_timeout", with = "millis")]
    pub timeout: Duration,
    /// Whether replies are streamed (SSE).
    #[serde(default)]
    pub stream: bool,
    /// Retries after a transient failure (429, 5xx, connection, timeout).
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// The first backoff between retries (doubling, capped at 30 s) when the server does not
    /// say how long to wait.
    #[serde(default = "default_backoff", with = "millis")]
    pub backoff: Duration,
    /// Failed calls in a row (after retries) that open the provider's circuit.
    #[serde(default = "default_breaker_failures")]
    pub breaker_failures: u32,
    /// How long an open circuit refuses calls.
    #[serde(default = "default_breaker_open", with = "millis")]
    pub breaker_open_for: Duration,
    /// The largest reply accepted, in bytes (body or all SSE data together).
    #[serde(default = "default_max_reply_bytes")]
    pub max_reply_bytes: usize,
    /// The longest `Retry-After` (seconds or an HTTP date) honoured; a server asking for
    /// more fails the call instead of stalling it.
    #[serde(default = "default_max_retry_after", with = "millis")]
    pub max_retry_after: Duration,
    /// Whether Anthropic requests mark their stable prefix for the prompt cache
    /// (`cache_control` on the system prompt, which caches the tools with it, and on the
    /// last message); `OpenAI` caches prefixes by itself.
    #[serde(default = "default_prompt_cache")]
    pub prompt_cache: bool,
}

impl ProviderConfig {
    /// A configuration with the defaults: 1024 output tokens, 120 s timeout, no streaming,
    /// 2 retries from 500 ms, a breaker opening after 3 failed calls for 30 s, 4 MiB replies,
    /// a `Retry-After` honoured up to [`MAX_RETRY_AFTER`], prompt-cache
    /// breakpoints on.
    #[must_use]
    pub fn new(api: Api, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            api,
            base_url: base_url.into(),
            model: model.into(),
            temperature: None,
            max_output_tokens: default_max_output_tokens(),
            api_key_env: None,
            extra_headers: Vec::new(),
            timeout: default_timeout(),
            stream: false,
            retries: default_retries(),
            backoff: default_backoff(),
            breaker_failures: default_breaker_failures(),
            breaker_open_for: default_breaker_open(),
            max_reply_bytes: default_max_reply_bytes(),
            max_retry_after: default_max_retry_after(),
            prompt_cache: default_prompt_cache(),
        }
    }

    /// The same, marking Anthropic's prompt-cache breakpoints or not.
    #[must_use]
    pub const fn with_prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// The same, honouring a `Retry-After` of at most `max`.
    #[must_use]
    pub const fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// The same, reading the key from the environment variable `var`.
    #[must_use]
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// The same, streaming or not.
    #[must_use]
    pub const fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// The same, with another per-attempt timeout.
    #[must_use]
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same, with `retries` retries after transient failures.
    #[must_use]
    pub const fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// The same, with `max` output tokens per reply.
    #[must_use]
    pub const fn with_max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = max;
        self
    }
}

const fn default_max_output_tokens() -> u32 {
    1024
}
const fn default_timeout() -> Duration {
    Duration::from_secs(120)
}
const fn default_retries() -> u32 {
    2
}
const fn default_backoff() -> Duration {
    Duration::from_millis(500)
}
const fn default_breaker_failures() -> u32 {
    3
}
const fn default_breaker_open() -> Duration {
    Duration::from_secs(30)
}
const fn default_max_reply_bytes() -> usize {
    4 << 20
}
const fn default_prompt_cache() -> bool {
    true
}
const fn default_max_retry_after() -> Duration {
    MAX_RETRY_AFTER
}

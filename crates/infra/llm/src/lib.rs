//! Model providers for rein and the planner that drives them.
//!
//! Two wire protocols are spoken, streaming and not: OpenAI-compatible Chat Completions
//! ([`Api::OpenAi`]: OpenAI, llama.cpp, vLLM, Ollama, proxies) and Anthropic Messages
//! ([`Api::Anthropic`]). An [`HttpProvider`] calls a server with a per-attempt timeout,
//! retries transient failures (honouring `Retry-After`) and opens a circuit breaker after
//! repeated failures; a [`FallbackProvider`] asks the next model of an ordered list when
//! one fails in a way another model may answer (rate limited, overloaded, unreachable).
//! Every problem is a typed, bounded [`LlmError`]; the API key is read
//! from the environment variable the configuration names and never shown.
//! [`HttpProvider::from_env`] builds one from the conventional variables (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, their `_BASE_URL`s, `REIN_LLM_MODEL`).
//!
//! [`LlmPlanner`] turns a model into a rein planner: each step offers the run's tools and
//! control functions (the same list every step), shows the model its own earlier turns
//! with their results, and one reply becomes one decision that the engine checks like any
//! other. Before each call it declares the call's worst case to the step's
//! [`PlanMeter`](rein_run::PlanMeter) and reports the usage after, so the engine charges
//! `tokens` and `cost` and refuses a call that could exceed them. [`build_request`] is the
//! one function that builds a step's messages from the run's history: the model's own
//! dialogue, projected from the ledger, which only grows at its end so a provider can
//! cache its prefix. [`Recorder`] and
//! [`Replayer`] record calls to a cassette and serve them back without a network.

mod anthropic;
mod cassette;
mod chat;
mod config;
mod env;
mod error;
mod fallback;
mod http;
mod names;
mod openai;
mod planner;
mod prompt;
mod provider;
mod telemetry;

pub use cassette::{Recorded, Recorder, Replayer};
pub use chat::{ChatRequest, ChatResponse, FunctionCall, FunctionDef, Message, Usage};
pub use config::{Api, HeaderSource, ProviderConfig};
pub use env::EnvError;
pub use error::{EXCERPT_CHARS, LlmError, excerpt};
pub use fallback::FallbackProvider;
pub use http::{HttpProvider, MAX_RETRY_AFTER, ProgressFn, StreamProgress, request_body};
pub use names::{CONTROL_FUNCTIONS, NameError, NameMap, function_name};
pub use planner::{LlmConfig, LlmPlanner, Prices};
pub use prompt::{
    DEFAULT_SYSTEM_PROMPT, PromptConfig, build_request, estimate_tokens, state_guidance,
};
pub use provider::{AttemptHook, Completion, DynProvider, Provider};

#[cfg(feature = "fake-server")]
pub mod fake;

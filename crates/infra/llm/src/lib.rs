//! Model providers for rein and the planner that drives them.
//!
//! Two wire protocols are spoken, streaming and not: OpenAI-compatible Chat Completions
//! ([`Api::OpenAi`]: `OpenAI`, llama.cpp, vLLM, Ollama, proxies) and Anthropic Messages
//! ([`Api::Anthropic`]). An [`HttpProvider`] calls a server with a per-attempt timeout,
//! retries transient failures (honouring `Retry-After`) and opens a circuit breaker after
//! repeated failures; a [`FallbackProvider`] asks the next model of an ordered list when
//! one fails in a way another model may answer (rate limited, overloaded, unreachable).
//! Each API is one wire format behind one trait, so the HTTP provider is written once.
//! Every problem is a typed, bounded [`LlmError`] keeping the error that caused it as its
//! source; the API key is read from the environment variable the configuration names and
//! never shown.
//! [`HttpProvider::from_env`] builds one from the conventional variables (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, their `_BASE_URL`s, `REIN_LLM_MODEL`).
//!
//! [`LlmPlanner`] turns a model into a rein planner: each step offers the run's tools and
//! the [`ControlFunction`]s (the same list every step), shows the model its own earlier turns
//! with their results, and one reply becomes one decision that the engine checks like any
//! other. Before each call it declares the call's worst case to the step's
//! [`PlanMeter`](rein_run::PlanMeter) and reports the usage after, so the engine charges
//! `tokens` and `cost` and refuses a call that could exceed them. [`build_request`] is the
//! one function that builds a step's messages from the run's history: the model's own
//! dialogue, projected from the ledger, which only grows at its end so a provider can
//! cache its prefix. [`CassetteRecorder`] and
//! [`Replayer`] record calls to a cassette and serve them back without a network.

mod anthropic;
mod cassette;
mod chat;
mod config;
mod dialogue;
mod env;
mod error;
mod fallback;
mod http;
mod names;
mod openai;
mod planner;
mod prices;
mod prompt;
mod provider;
mod render;
mod reply;
mod sample;
mod size;
mod telemetry;
mod wire;

pub use cassette::{CassetteRecorder, Recorded, Replayer};
pub use chat::{ChatRequest, ChatResponse, FunctionCall, FunctionDef, Message, Usage};
pub use config::{
    Api, DEFAULT_SYSTEM_PROMPT, HeaderSource, LlmConfig, MAX_RETRY_AFTER, PromptConfig,
    ProviderConfig,
};
pub use env::EnvError;
pub use error::{Cause, EXCERPT_CHARS, LlmError, excerpt};
pub use fallback::FallbackProvider;
pub use http::{HttpProvider, ProgressFn, StreamProgress, request_body};
pub use names::{ControlFunction, NameError, NameMap, function_name};
pub use planner::LlmPlanner;
pub use prices::{ANY_MODEL, ModelPrices, Prices, PricesShape, Rate, UnpricedModel};
pub use prompt::{Compaction, build_request, estimate_tokens, rebuild_request};
pub use provider::{AttemptHook, Completion, DynProvider, Provider};
pub use render::state_guidance;

#[cfg(feature = "fake-server")]
pub mod fake;

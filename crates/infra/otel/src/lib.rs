//! rein's OpenTelemetry export: rein's spans and metrics sent to a collector over OTLP/HTTP
//! (protobuf), named by the OpenTelemetry `GenAI` semantic conventions.
//!
//! The engine and the model providers write plain `tracing` spans and events
//! ([`rein_run::telemetry`] holds every name and the conventions' version followed): a run
//! is `invoke_agent rein`, its steps `rein.step N`, a model call `chat {model}`, a tool
//! call `execute_tool {tool}`; every ledger entry is an event on the span it was recorded
//! in, with `rein.ledger.seq` and `rein.ledger.hash`, and governed decisions (approvals,
//! budget charges and exhaustions, refusals) are events of their own names. This crate
//! turns them into OpenTelemetry spans ([`Telemetry::layer`]), derives metrics from them
//! ([`SpanMetrics`]), and exports both through a bounded queue ([`Telemetry::start`]).
//!
//! [`Telemetry::trace_context`] is the [`rein_run::telemetry::TraceContext`] port to hand
//! the engine, the model providers and the MCP client: with it, model and MCP requests
//! carry `traceparent`, and a resumed run's trace links to the one before.
//!
//! Content (prompts, replies, tool inputs and outputs, the reasons of decisions) is left
//! out unless [`Content::Captured`] is asked for. Secrets are never in a span: rein does
//! not record headers, keys or the user part of a URL.

mod config;
mod error;
mod metrics;
mod propagation;
mod queue;
#[cfg(feature = "receiver")]
pub mod receiver;
mod telemetry;

pub use config::{
    Content, DEFAULT_SERVICE_NAME, ENDPOINT_VAR, Endpoint, OtelConfig, SERVICE_NAME_VAR,
};
pub use error::{EndpointProblem, OtelError};
pub use metrics::SpanMetrics;
pub use propagation::SpanContexts;
pub use telemetry::{ShutdownReport, Telemetry};

/// The OpenTelemetry crates this one is built on (for a tracer provider of your own), and
/// the `tracing-subscriber` its layer is for.
pub use {opentelemetry, opentelemetry_sdk, tracing_subscriber};

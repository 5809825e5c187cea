//! The names rein's telemetry uses: span names, attribute keys and event names, in one
//! place so that a rename of the conventions is one edit here.
//!
//! They follow the OpenTelemetry `GenAI` semantic conventions (experimental, at
//! [`SEMCONV_VERSION`]): `gen_ai.provider.name`, the `invoke_agent` / `chat` /
//! `execute_tool` operations, `gen_ai.response.model`, the prompt-cache token counts.
//! rein's own facts live in the `rein.*` namespace.
//!
//! A span's identity travels out with model and MCP requests as a W3C [`TraceParent`],
//! read through the [`TraceContext`] port an exporter implements.
//!
//! These are plain strings: the engine and the model providers write them into `tracing`
//! spans and events (field names through `{ CONST } = value`), and an exporter reads them
//! back. Spans are written with the [`TARGET`] target, and anything that carries content
//! (prompts, replies, tool inputs and outputs) with [`CONTENT_TARGET`], so an exporter
//! can leave content out by target alone.
//!
//! ```
//! use rein_run::telemetry;
//! assert_eq!(telemetry::CHAT, "chat");
//! assert!(telemetry::SEMCONV_VERSION.starts_with("1."));
//! ```

mod trace;

pub use trace::{TraceContext, TraceParent, TraceParentError};

/// The version of the OpenTelemetry semantic conventions these names follow: the `GenAI`
/// conventions' development line on 1.42.0. The `GenAI` conventions left the core
/// `semantic-conventions` repository for `semantic-conventions-genai`, which has tagged no
/// release yet; every `gen_ai.*` name here was checked against that repository's attribute
/// registry (`model/gen-ai/registry.yaml`), and the cache token counts are the dotted names
/// it defines (`gen_ai.usage.cache_read.input_tokens`).
pub const SEMCONV_VERSION: &str = "1.42.0";
/// The schema URL of [`SEMCONV_VERSION`].
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.42.0";

/// The `tracing` target of every span and event meant for export.
pub const TARGET: &str = "rein::telemetry";
/// The `tracing` target of events that carry content: exported only when the user opts in.
pub const CONTENT_TARGET: &str = "rein::content";

// Span names (the `tracing` name; the exported name is in the `otel.name` field).

/// The span of one run (`invoke_agent {agent}`).
pub const INVOKE_AGENT: &str = "invoke_agent";
/// The span of one model call (`chat {model}`).
pub const CHAT: &str = "chat";
/// The span of one tool call (`execute_tool {tool}`).
pub const EXECUTE_TOOL: &str = "execute_tool";
/// The span of one step of a run (rein's own).
pub const STEP: &str = "rein.step";
/// The span of one planner call of a step (rein's own; a model call is its child).
pub const PLAN: &str = "rein.plan";

// Fields tracing-opentelemetry reads as the span's own properties.

/// The exported span name.
pub const OTEL_NAME: &str = "otel.name";
/// The span kind (`client`, `internal`).
pub const OTEL_KIND: &str = "otel.kind";
/// The span status (`ok`, `error`).
pub const OTEL_STATUS_CODE: &str = "otel.status_code";

// GenAI attributes.

/// The operation (`invoke_agent`, `chat`, `execute_tool`).
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// The model provider (`openai`, `anthropic`).
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The agent's name.
pub const AGENT_NAME: &str = "gen_ai.agent.name";
/// The conversation a span belongs to: the run's id, which a resumed run keeps.
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// The model asked for.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// The model that answered.
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// Why the model stopped.
pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// Prompt tokens.
pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Generated tokens.
pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Prompt tokens read from the provider's cache.
pub const CACHE_READ_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// Prompt tokens written to the provider's cache.
pub const CACHE_CREATION_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
/// The tool's name.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// The tool call's id (rein's: the run's id and the `tool_call` entry's sequence number).
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// The class of error an operation ended with.
pub const ERROR_TYPE: &str = "error.type";
/// The host of the server a call went to.
pub const SERVER_ADDRESS: &str = "server.address";
/// The port of the server a call went to.
pub const SERVER_PORT: &str = "server.port";
/// The prompt, as sent (content).
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// The reply (content).
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// A tool call's input (content).
pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// A tool call's output (content).
pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// The event that carries a model call's content.
pub const INFERENCE_DETAILS: &str = "gen_ai.client.inference.operation.details";

// Operation names.

/// `gen_ai.operation.name` of a run.
pub const OP_INVOKE_AGENT: &str = "invoke_agent";
/// `gen_ai.operation.name` of a model call.
pub const OP_CHAT: &str = "chat";
/// `gen_ai.operation.name` of a tool call.
pub const OP_EXECUTE_TOOL: &str = "execute_tool";

// rein's own attributes.

/// The run's id.
pub const RUN_ID: &str = "rein.run.id";
/// The run's state machine state.
pub const STATE: &str = "rein.state";
/// The run's step number.
pub const STEP_NUMBER: &str = "rein.step";
/// How a run's drive ended (`completed`, `failed`, `paused`, …).
pub const RUN_STATUS: &str = "rein.run.status";
/// Whether this drive resumed a run that had been driven before.
pub const RESUMED: &str = "rein.run.resumed";
/// The W3C trace context header sent with model and MCP HTTP requests (and the MCP
/// `_meta` key of the same name).
pub const TRACEPARENT: &str = "traceparent";
/// How a tool call ended (`ok`, `error`, `refused`).
pub const TOOL_OUTCOME: &str = "rein.tool.outcome";
/// A ledger entry's sequence number.
pub const LEDGER_SEQ: &str = "rein.ledger.seq";
/// A ledger entry's hash (hex).
pub const LEDGER_HASH: &str = "rein.ledger.hash";
/// A ledger entry's kind (its `type` tag).
pub const ENTRY_KIND: &str = "rein.entry.kind";
/// An approval's verdict (`granted`, `denied`, `requested`, `pending`).
pub const APPROVAL_VERDICT: &str = "rein.approval.verdict";
/// Who decided an approval.
pub const APPROVER: &str = "rein.approver";
/// A budget's name.
pub const BUDGET_NAME: &str = "rein.budget.name";
/// An amount charged or asked of a budget.
pub const BUDGET_AMOUNT: &str = "rein.budget.amount";
/// What had been used of a budget.
pub const BUDGET_USED: &str = "rein.budget.used";
/// A budget's limit.
pub const BUDGET_LIMIT: &str = "rein.budget.limit";
/// The rule a rejected decision broke.
pub const VIOLATION: &str = "rein.violation";
/// Why (an approval's or a rejection's reason; content: it may quote the model).
pub const REASON: &str = "rein.reason";
/// The tool an entry is about.
pub const ENTRY_TOOL: &str = "rein.tool";

// Span event names: a governed decision's ledger entry is an event of its own name; every
// other entry is a [`EVENT_LEDGER_ENTRY`] naming its kind, so each span can be matched to
// the entries recorded while it was open.

/// The event of any other ledger entry (its kind in [`ENTRY_KIND`]).
pub const EVENT_LEDGER_ENTRY: &str = "rein.ledger.entry";
/// The event of an approval asked for.
pub const EVENT_APPROVAL_REQUESTED: &str = "rein.approval_requested";
/// The event of an approval left waiting (a durable approval).
pub const EVENT_APPROVAL_PENDING: &str = "rein.approval_pending";
/// The event of a denied approval.
pub const EVENT_APPROVAL_DENIED: &str = "rein.approval_denied";
/// The event of a granted approval.
pub const EVENT_APPROVAL_GRANTED: &str = "rein.approval_granted";
/// The event of a refused budget charge.
pub const EVENT_BUDGET_EXHAUSTED: &str = "rein.budget_exhausted";
/// The event of a charge past a budget's limit (a model's reported usage).
pub const EVENT_BUDGET_OVERRUN: &str = "rein.budget_overrun";
/// The event of a budget charge.
pub const EVENT_BUDGET_CONSUMED: &str = "rein.budget_consumed";
/// The event of a rejected decision (a refusal by a policy).
pub const EVENT_POLICY_VIOLATION: &str = "rein.policy_violation";
/// The event of a run's first entry.
pub const EVENT_RUN_STARTED: &str = "rein.run_started";
/// The event of a content capture of a tool call (input or output).
pub const EVENT_TOOL_CONTENT: &str = "rein.tool.content";

// Metric names.

/// The convention's token usage histogram.
pub const METRIC_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// The convention's operation duration histogram.
pub const METRIC_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// The token type attribute of [`METRIC_TOKEN_USAGE`].
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
/// Runs started.
pub const METRIC_RUNS_STARTED: &str = "rein.runs.started";
/// Runs' drives ended, by [`RUN_STATUS`].
pub const METRIC_RUNS_ENDED: &str = "rein.runs.ended";
/// Tool calls, by [`TOOL_OUTCOME`].
pub const METRIC_TOOL_CALLS: &str = "rein.tool.calls";
/// Approvals, by [`APPROVAL_VERDICT`].
pub const METRIC_APPROVALS: &str = "rein.approvals";
/// Budget exhaustions and overruns, by [`BUDGET_NAME`].
pub const METRIC_BUDGET_EXHAUSTIONS: &str = "rein.budget.exhaustions";

/// A count as an attribute value: tracing-opentelemetry exports `i64` fields as integers
/// but `u64` ones as text, so counts are written through this (saturating).
///
/// ```
/// assert_eq!(rein_run::telemetry::int(7), 7_i64);
/// assert_eq!(rein_run::telemetry::int(u64::MAX), i64::MAX);
/// ```
#[must_use]
pub const fn int(n: u64) -> i64 {
    if n > i64::MAX as u64 {
        i64::MAX
    } else {
        n as i64
    }
}

//! The engine's telemetry: the spans of a run, its steps, planner calls and tool calls, and
//! an event for every ledger entry, named by [`rein_run::telemetry`].
//!
//! Everything here is a plain `tracing` span or event with the `rein::telemetry` target (or
//! `rein::content` for tool inputs and outputs): with no subscriber interested, each costs
//! one check of its callsite's interest and builds nothing. Runs and tool calls are INFO
//! spans, steps and planner calls DEBUG spans (as they were before they were named for
//! export), ledger entries DEBUG events and content TRACE events, so a log formatter at
//! INFO shows no more than it did; the exporter's layer selects by target, not by level. An exporter (rein-otel) turns
//! them into OpenTelemetry spans, span events and metrics.

use rein_ledger::{Entry, EntryKind};
use rein_run::telemetry::int;
use rein_run::telemetry::{
    AGENT_NAME, APPROVAL_VERDICT, APPROVER, BUDGET_AMOUNT, BUDGET_LIMIT, BUDGET_NAME, BUDGET_USED,
    CONTENT_TARGET, CONVERSATION_ID, ENTRY_KIND, ENTRY_TOOL, ERROR_TYPE, EVENT_APPROVAL_DENIED,
    EVENT_APPROVAL_GRANTED, EVENT_APPROVAL_PENDING, EVENT_APPROVAL_REQUESTED,
    EVENT_BUDGET_CONSUMED, EVENT_BUDGET_EXHAUSTED, EVENT_BUDGET_OVERRUN, EVENT_LEDGER_ENTRY,
    EVENT_POLICY_VIOLATION, EVENT_RUN_STARTED, EVENT_TOOL_CONTENT, EXECUTE_TOOL, INVOKE_AGENT,
    LEDGER_HASH, LEDGER_SEQ, OP_EXECUTE_TOOL, OP_INVOKE_AGENT, OPERATION_NAME, OTEL_KIND,
    OTEL_NAME, OTEL_STATUS_CODE, PLAN, REASON, RESUMED, RUN_ID, RUN_STATUS, STATE, STEP,
    STEP_NUMBER, TARGET, TOOL_CALL_ARGUMENTS, TOOL_CALL_ID, TOOL_CALL_RESULT, TOOL_NAME,
    TOOL_OUTCOME, VIOLATION,
};
use rein_run::{Run, RunId, RunStatus, State};
use rein_tool::{ToolError, ToolName};
use tracing::Span;
use tracing::field::Empty;

/// The agent name of every run's span: rein drives one kind of agent.
const AGENT: &str = "rein";

/// The span of one drive of a run (`invoke_agent rein`). `resumed`: the run had been
/// driven before (its trace is a new one; the conversation id ties them). `conversation`:
/// the id of the conversation's first run — the run's own unless it follows up on another.
pub(crate) fn run_span(run: &Run, conversation: &RunId, resumed: bool) -> Span {
    tracing::info_span!(
        target: TARGET,
        INVOKE_AGENT,
        { OTEL_NAME } = %format_args!("{OP_INVOKE_AGENT} {AGENT}"),
        { OTEL_KIND } = "internal",
        { OPERATION_NAME } = OP_INVOKE_AGENT,
        { AGENT_NAME } = AGENT,
        { CONVERSATION_ID } = %conversation,
        { RUN_ID } = %run.id(),
        // Recorded once, when the drive ends: a field recorded twice is exported twice.
        { STATE } = Empty,
        { RESUMED } = resumed,
        { RUN_STATUS } = Empty,
        { OTEL_STATUS_CODE } = Empty,
        { ERROR_TYPE } = Empty,
    )
}

/// Records how a drive ended on its span: the run's state and status, an error status
/// when the run failed or the engine did.
pub(crate) fn run_ended<E>(span: &Span, run: &Run, result: &Result<(), E>) {
    if span.is_disabled() {
        return;
    }
    span.record(STATE, tracing::field::display(run.state()));
    match result {
        Ok(()) => {
            span.record(RUN_STATUS, tracing::field::display(run.status()));
            if run.status() == RunStatus::Failed {
                span.record(OTEL_STATUS_CODE, "error");
                if let Some(failure) = run.failure() {
                    span.record(ERROR_TYPE, tracing::field::debug(failure.kind));
                }
            }
        }
        Err(_) => {
            span.record(RUN_STATUS, "engine_error");
            span.record(OTEL_STATUS_CODE, "error");
            span.record(ERROR_TYPE, "engine_error");
        }
    }
}

/// The span of one step.
pub(crate) fn step_span(step: u32, state: State) -> Span {
    tracing::debug_span!(
        target: TARGET,
        STEP,
        { OTEL_NAME } = %format_args!("{STEP} {step}"),
        { OTEL_KIND } = "internal",
        { STEP_NUMBER } = i64::from(step),
        { STATE } = %state,
    )
}

/// The span of one planner call (a model call, if the planner makes one, is its child).
pub(crate) fn plan_span(step: u32, state: State) -> Span {
    tracing::debug_span!(
        target: TARGET,
        PLAN,
        { OTEL_KIND } = "internal",
        { STEP_NUMBER } = i64::from(step),
        { STATE } = %state,
    )
}

/// The span of one tool call (`execute_tool {tool}`), matched to its `tool_call` entry.
pub(crate) fn tool_span(tool: &ToolName, state: State, entry: &Entry) -> Span {
    tracing::info_span!(
        target: TARGET,
        EXECUTE_TOOL,
        { OTEL_NAME } = %format_args!("{OP_EXECUTE_TOOL} {tool}"),
        { OTEL_KIND } = "internal",
        { OPERATION_NAME } = OP_EXECUTE_TOOL,
        { TOOL_NAME } = %tool,
        { TOOL_CALL_ID } = %format_args!("{}/{}", entry.run_id(), entry.seq()),
        { STATE } = %state,
        { LEDGER_SEQ } = int(entry.seq()),
        { LEDGER_HASH } = %entry.hash(),
        { TOOL_OUTCOME } = Empty,
        { OTEL_STATUS_CODE } = Empty,
        { ERROR_TYPE } = Empty,
    )
}

/// Records how a tool call ended on its span.
pub(crate) fn tool_ended<T>(span: &Span, outcome: &Result<T, ToolError>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(_) => span.record(TOOL_OUTCOME, "ok"),
        Err(error) => {
            span.record(TOOL_OUTCOME, "error");
            span.record(OTEL_STATUS_CODE, "error");
            span.record(ERROR_TYPE, error.kind())
        }
    };
}

/// Tells the current span about an entry just sealed into the run's ledger: its sequence
/// number and hash, and for a governed decision (approvals, budgets, refusals) what was
/// decided. Reasons and messages may quote the model, and tool inputs and outputs are
/// content: they go out only as `rein::content` events.
pub(crate) fn entry_recorded(entry: &Entry) {
    macro_rules! event {
        ($name:expr $(, $key:expr => $value:expr)* $(,)?) => {
            tracing::event!(
                name: $name,
                target: TARGET,
                tracing::Level::DEBUG,
                {
                    { LEDGER_SEQ } = int(entry.seq()),
                    { LEDGER_HASH } = %entry.hash(),
                    { STATE } = %entry.state()
                    $(, { $key } = $value)*
                }
            )
        };
    }
    match entry.event() {
        EntryKind::RunStarted { .. } => event!(EVENT_RUN_STARTED),
        EntryKind::ApprovalRequested { tool, .. } => event!(
            EVENT_APPROVAL_REQUESTED,
            ENTRY_TOOL => display(tool),
            APPROVAL_VERDICT => "requested",
        ),
        EntryKind::ApprovalPending { pending } => event!(
            EVENT_APPROVAL_PENDING,
            ENTRY_TOOL => display(&pending.tool),
            APPROVAL_VERDICT => "pending",
        ),
        EntryKind::ApprovalGranted {
            tool,
            approver,
            reason,
            ..
        } => {
            event!(EVENT_APPROVAL_GRANTED, ENTRY_TOOL => display(tool), APPROVAL_VERDICT => "granted",
                APPROVER => display(approver));
            content_reason(reason);
        }
        EntryKind::ApprovalDenied {
            tool,
            approver,
            reason,
            ..
        } => {
            event!(EVENT_APPROVAL_DENIED, ENTRY_TOOL => display(tool), APPROVAL_VERDICT => "denied",
                APPROVER => display(approver));
            content_reason(reason);
        }
        EntryKind::BudgetConsumed {
            name,
            amount,
            used,
            limit,
        } => event!(
            EVENT_BUDGET_CONSUMED,
            BUDGET_NAME => display(name),
            BUDGET_AMOUNT => int(*amount),
            BUDGET_USED => int(*used),
            BUDGET_LIMIT => limit.map(int),
        ),
        EntryKind::BudgetExhausted {
            name,
            limit,
            used,
            requested,
        } => event!(
            EVENT_BUDGET_EXHAUSTED,
            BUDGET_NAME => display(name),
            BUDGET_AMOUNT => int(*requested),
            BUDGET_USED => int(*used),
            BUDGET_LIMIT => int(*limit),
        ),
        EntryKind::BudgetOverrun {
            name,
            amount,
            used,
            limit,
        } => event!(
            EVENT_BUDGET_OVERRUN,
            BUDGET_NAME => display(name),
            BUDGET_AMOUNT => int(*amount),
            BUDGET_USED => int(*used),
            BUDGET_LIMIT => int(*limit),
        ),
        EntryKind::PolicyViolation {
            violation, message, ..
        } => {
            event!(EVENT_POLICY_VIOLATION, VIOLATION => display(violation));
            content_reason(message);
        }
        EntryKind::ToolCall { tool, input, .. } => {
            event!(EVENT_LEDGER_ENTRY, ENTRY_KIND => entry.event().name(), ENTRY_TOOL => display(tool));
            tool_content(tool, ToolPart::Input, input);
        }
        EntryKind::ToolResult { tool, output, .. } => {
            event!(EVENT_LEDGER_ENTRY, ENTRY_KIND => entry.event().name(), ENTRY_TOOL => display(tool));
            tool_content(tool, ToolPart::Output, output);
        }
        other => event!(EVENT_LEDGER_ENTRY, ENTRY_KIND => other.name()),
    }
}

/// A reason or message of a governed decision, as content.
fn content_reason(reason: &str) {
    tracing::event!(
        name: EVENT_TOOL_CONTENT,
        target: CONTENT_TARGET,
        tracing::Level::TRACE,
        { { REASON } = reason }
    );
}

/// A tool call's input or output, as content.
fn tool_content(tool: &ToolName, part: ToolPart, value: &impl serde::Serialize) {
    match part {
        ToolPart::Input => tracing::event!(
            name: EVENT_TOOL_CONTENT,
            target: CONTENT_TARGET,
            tracing::Level::TRACE,
            { { TOOL_NAME } = %tool, { TOOL_CALL_ARGUMENTS } = %Json(value) }
        ),
        ToolPart::Output => tracing::event!(
            name: EVENT_TOOL_CONTENT,
            target: CONTENT_TARGET,
            tracing::Level::TRACE,
            { { TOOL_NAME } = %tool, { TOOL_CALL_RESULT } = %Json(value) }
        ),
    }
}

/// Which part of a tool call a content event carries.
#[derive(Clone, Copy)]
enum ToolPart {
    Input,
    Output,
}

/// Shows a value as its JSON, written only when an event is recorded.
struct Json<'a, T>(&'a T);

impl<T: serde::Serialize> std::fmt::Display for Json<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string(self.0).map_err(|_| std::fmt::Error)?)
    }
}

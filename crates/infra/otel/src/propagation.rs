//! `SpanContexts`: rein's [`TraceContext`] port over the spans `tracing-opentelemetry`
//! builds, so the engine, the model providers and the MCP client can send and link trace
//! contexts without depending on this crate.

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use rein_run::telemetry::{TraceContext, TraceParent};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The trace context of the current `tracing` span, as the layer of a [`Telemetry`] built
/// it. A span the layer leaves out (or any span, with no such layer in the current
/// subscriber) has none.
///
/// [`Telemetry`]: crate::Telemetry
#[derive(Debug, Clone, Copy, Default)]
pub struct SpanContexts;

impl TraceContext for SpanContexts {
    fn current(&self) -> Option<TraceParent> {
        let context = tracing::Span::current().context();
        let span = context.span();
        let span = span.span_context();
        if !span.is_valid() {
            return None;
        }
        TraceParent::from_parts(
            span.trace_id().to_bytes(),
            span.span_id().to_bytes(),
            span.trace_flags().to_u8(),
        )
        .ok()
    }

    fn link_current(&self, to: &TraceParent) {
        tracing::Span::current().add_link(SpanContext::new(
            TraceId::from_bytes(to.trace_id_bytes()),
            SpanId::from_bytes(to.span_id_bytes()),
            TraceFlags::new(to.flags()),
            true,
            TraceState::default(),
        ));
    }
}

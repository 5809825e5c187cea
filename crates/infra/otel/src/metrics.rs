//! `SpanMetrics`: the metrics rein exports, read off its finished spans and their events
//! (one mechanism: a span already carries every fact a metric counts).
//!
//! - `gen_ai.client.operation.duration` (s) and `gen_ai.client.token.usage` ({token}, by
//!   `gen_ai.token.type`) per model call, as the `GenAI` conventions define them;
//! - `rein.runs.started` (drives of new runs) and `rein.runs.ended` (by `rein.run.status`),
//!   counted when a run's drive ends;
//! - `rein.tool.calls` by `rein.tool.outcome`;
//! - `rein.approvals` by `rein.approval.verdict` (granted, denied);
//! - `rein.budget.exhaustions` by `rein.budget.name` (refused charges and overruns).

use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use rein_run::telemetry as names;

/// A span processor that records rein's metrics from its finished spans. [`Telemetry`]
/// installs one; with a tracer provider of your own, add one to it:
///
/// ```
/// use opentelemetry::metrics::MeterProvider as _;
/// use opentelemetry_sdk::metrics::SdkMeterProvider;
/// use opentelemetry_sdk::trace::SdkTracerProvider;
/// let meters = SdkMeterProvider::builder().build();
/// let tracer_provider = SdkTracerProvider::builder()
///     .with_span_processor(rein_otel::SpanMetrics::new(&meters.meter("rein")))
///     .build();
/// # drop(tracer_provider);
/// ```
///
/// [`Telemetry`]: crate::Telemetry
#[derive(Debug)]
pub struct SpanMetrics {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    runs_started: Counter<u64>,
    runs_ended: Counter<u64>,
    tool_calls: Counter<u64>,
    approvals: Counter<u64>,
    exhaustions: Counter<u64>,
}

impl SpanMetrics {
    /// Instruments on `meter`.
    #[must_use]
    pub fn new(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram(names::METRIC_OPERATION_DURATION)
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(vec![
                    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92,
                ])
                .build(),
            tokens: meter
                .u64_histogram(names::METRIC_TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Measures number of input and output tokens used")
                .with_boundaries(vec![
                    1.0,
                    4.0,
                    16.0,
                    64.0,
                    256.0,
                    1024.0,
                    4096.0,
                    16384.0,
                    65536.0,
                    262_144.0,
                    1_048_576.0,
                    4_194_304.0,
                    16_777_216.0,
                    67_108_864.0,
                ])
                .build(),
            runs_started: counter(meter, names::METRIC_RUNS_STARTED, "{run}", "Runs started"),
            runs_ended: counter(
                meter,
                names::METRIC_RUNS_ENDED,
                "{run}",
                "Drives of runs ended, by status",
            ),
            tool_calls: counter(
                meter,
                names::METRIC_TOOL_CALLS,
                "{call}",
                "Tool calls, by outcome",
            ),
            approvals: counter(
                meter,
                names::METRIC_APPROVALS,
                "{approval}",
                "Approval verdicts",
            ),
            exhaustions: counter(
                meter,
                names::METRIC_BUDGET_EXHAUSTIONS,
                "{charge}",
                "Budget charges refused or past the limit",
            ),
        }
    }

    fn record(&self, span: &SpanData) {
        match text(span.attributes.as_slice(), names::OPERATION_NAME).as_deref() {
            Some(names::OP_CHAT) => self.record_chat(span),
            Some(names::OP_INVOKE_AGENT) => {
                let attrs = span.attributes.as_slice();
                if !matches!(find(attrs, names::RESUMED), Some(Value::Bool(true))) {
                    self.runs_started.add(1, &[]);
                }
                let status = text(attrs, names::RUN_STATUS).unwrap_or_else(|| "unknown".into());
                self.runs_ended
                    .add(1, &[KeyValue::new(names::RUN_STATUS, status)]);
            }
            Some(names::OP_EXECUTE_TOOL) => {
                let attrs = span.attributes.as_slice();
                let outcome = text(attrs, names::TOOL_OUTCOME).unwrap_or_else(|| "unknown".into());
                let mut labels = vec![KeyValue::new(names::TOOL_OUTCOME, outcome)];
                if let Some(tool) = text(attrs, names::TOOL_NAME) {
                    labels.push(KeyValue::new(names::TOOL_NAME, tool));
                }
                self.tool_calls.add(1, &labels);
            }
            _ => {}
        }
        for event in span.events.iter() {
            let attrs = event.attributes.as_slice();
            match event.name.as_ref() {
                names::EVENT_APPROVAL_GRANTED | names::EVENT_APPROVAL_DENIED => {
                    let verdict = text(attrs, names::APPROVAL_VERDICT).unwrap_or_default();
                    self.approvals
                        .add(1, &[KeyValue::new(names::APPROVAL_VERDICT, verdict)]);
                }
                names::EVENT_BUDGET_EXHAUSTED | names::EVENT_BUDGET_OVERRUN => {
                    let budget = text(attrs, names::BUDGET_NAME).unwrap_or_default();
                    self.exhaustions
                        .add(1, &[KeyValue::new(names::BUDGET_NAME, budget)]);
                }
                _ => {}
            }
        }
    }

    fn record_chat(&self, span: &SpanData) {
        let attrs = span.attributes.as_slice();
        let mut labels = vec![KeyValue::new(names::OPERATION_NAME, names::OP_CHAT)];
        for key in [
            names::PROVIDER_NAME,
            names::REQUEST_MODEL,
            names::SERVER_ADDRESS,
        ] {
            if let Some(value) = text(attrs, key) {
                labels.push(KeyValue::new(key, value));
            }
        }
        let tokens = labels.clone();
        if let Some(error) = text(attrs, names::ERROR_TYPE) {
            labels.push(KeyValue::new(names::ERROR_TYPE, error));
        }
        let elapsed = span
            .end_time
            .duration_since(span.start_time)
            .unwrap_or(Duration::ZERO);
        self.duration.record(elapsed.as_secs_f64(), &labels);
        for (key, kind) in [
            (names::INPUT_TOKENS, "input"),
            (names::OUTPUT_TOKENS, "output"),
        ] {
            if let Some(Value::I64(n)) = find(attrs, key) {
                let mut labels = tokens.clone();
                labels.push(KeyValue::new(names::TOKEN_TYPE, kind));
                self.tokens
                    .record(u64::try_from(*n).unwrap_or_default(), &labels);
            }
        }
    }
}

impl SpanProcessor for SpanMetrics {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.record(&span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

fn counter(
    meter: &Meter,
    name: &'static str,
    unit: &'static str,
    about: &'static str,
) -> Counter<u64> {
    meter
        .u64_counter(name)
        .with_unit(unit)
        .with_description(about)
        .build()
}

fn find<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(attrs: &[KeyValue], key: &str) -> Option<String> {
    find(attrs, key).map(Value::to_string)
}

//! Export at the crate's level: spans written with rein's telemetry names reach an OTLP/HTTP
//! receiver as protobuf with their names, kinds, parents and attributes; content stays out
//! unless captured; metrics follow; a bad endpoint is an error at start; an unreachable or
//! hanging collector never fails the caller, and a full queue drops and counts.

use std::time::Duration;

use rein_otel::receiver::{Receiver, attribute, proto};
use rein_otel::{Content, EndpointProblem, OtelConfig, OtelError, Telemetry};
use rein_run::telemetry as names;
use tracing_subscriber::layer::SubscriberExt as _;

const PROMPT: &str = "the secret recipe is 42 parts basil";

/// Writes what the engine and a model call write: a run with a step, a model call and a
/// tool call, an approval denied and a budget exhausted, and content events.
fn write_a_run() {
    let run = tracing::info_span!(
        target: names::TARGET,
        names::INVOKE_AGENT,
        { names::OTEL_NAME } = "invoke_agent rein",
        { names::OTEL_KIND } = "internal",
        { names::OPERATION_NAME } = names::OP_INVOKE_AGENT,
        { names::RUN_ID } = "run-1",
        { names::RESUMED } = false,
        { names::RUN_STATUS } = tracing::field::Empty,
    );
    run.in_scope(|| {
        let chat = tracing::info_span!(
            target: names::TARGET,
            names::CHAT,
            { names::OTEL_NAME } = "chat m1",
            { names::OTEL_KIND } = "client",
            { names::OPERATION_NAME } = names::OP_CHAT,
            { names::REQUEST_MODEL } = "m1",
            { names::INPUT_TOKENS } = 12_i64,
            { names::OUTPUT_TOKENS } = 5_i64,
        );
        chat.in_scope(|| {
            tracing::event!(
                name: names::INFERENCE_DETAILS,
                target: names::CONTENT_TARGET,
                tracing::Level::INFO,
                { { names::INPUT_MESSAGES } = PROMPT }
            );
        });
        let tool = tracing::info_span!(
            target: names::TARGET,
            names::EXECUTE_TOOL,
            { names::OTEL_NAME } = "execute_tool deploy",
            { names::OPERATION_NAME } = names::OP_EXECUTE_TOOL,
            { names::TOOL_NAME } = "deploy",
            { names::TOOL_OUTCOME } = "error",
        );
        tool.in_scope(|| {
            tracing::event!(
                name: names::EVENT_APPROVAL_DENIED,
                target: names::TARGET,
                tracing::Level::INFO,
                { { names::APPROVAL_VERDICT } = "denied", { names::LEDGER_SEQ } = 7_i64 }
            );
            tracing::event!(
                name: names::EVENT_BUDGET_EXHAUSTED,
                target: names::TARGET,
                tracing::Level::INFO,
                { { names::BUDGET_NAME } = "tool_calls" }
            );
        });
        // rein's other logs are never exported (they may quote a model).
        let _ = tracing::info_span!(target: "rein_engine::driver", "a log line").entered();
        tracing::info!(target: "rein_engine::apply", "decision rejected: {PROMPT}");
    });
    run.record(names::RUN_STATUS, "failed");
}

/// Starts export to `receiver` with `content`, writes a run, shuts down.
fn export_a_run(receiver: &Receiver, content: Content) -> rein_otel::ShutdownReport {
    let config = OtelConfig::new(&receiver.url())
        .expect("a valid endpoint")
        .with_content(content);
    let telemetry = Telemetry::start(&config).expect("export starts");
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, write_a_run);
    telemetry.shutdown()
}

fn span<'a>(spans: &'a [proto::trace::v1::Span], name: &str) -> &'a proto::trace::v1::Span {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name} among {:?}", names_of(spans)))
}

fn names_of(spans: &[proto::trace::v1::Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn spans_reach_the_collector_with_their_names_kinds_parents_and_events() {
    let receiver = Receiver::start().expect("receiver");
    let report = export_a_run(&receiver, Content::Omitted);
    assert!(report.flushed, "{report:?}");
    assert_eq!((report.dropped_spans, report.failed_spans), (0, 0));
    let requests = receiver.trace_requests();
    let resource = requests[0].resource_spans[0]
        .resource
        .as_ref()
        .expect("a resource");
    assert_eq!(
        attribute(&resource.attributes, "service.name").as_deref(),
        Some("rein")
    );
    let spans = receiver.spans();
    let mut got = names_of(&spans);
    got.sort_unstable();
    assert_eq!(got, ["chat m1", "execute_tool deploy", "invoke_agent rein"]);

    use proto::trace::v1::span::SpanKind;
    let run = span(&spans, "invoke_agent rein");
    let chat = span(&spans, "chat m1");
    let tool = span(&spans, "execute_tool deploy");
    assert_eq!(run.kind, SpanKind::Internal as i32);
    assert_eq!(chat.kind, SpanKind::Client as i32);
    assert!(run.parent_span_id.is_empty(), "the run is a root");
    for child in [chat, tool] {
        assert_eq!(child.parent_span_id, run.span_id);
        assert_eq!(child.trace_id, run.trace_id);
    }
    assert_eq!(
        attribute(&run.attributes, names::RUN_STATUS).as_deref(),
        Some("failed")
    );
    assert_eq!(
        attribute(&run.attributes, names::RUN_ID).as_deref(),
        Some("run-1")
    );
    assert_eq!(
        attribute(&chat.attributes, names::INPUT_TOKENS).as_deref(),
        Some("12")
    );
    let events: Vec<_> = tool.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        events,
        [names::EVENT_APPROVAL_DENIED, names::EVENT_BUDGET_EXHAUSTED]
    );
    assert_eq!(
        attribute(&tool.events[0].attributes, names::LEDGER_SEQ).as_deref(),
        Some("7")
    );
    assert!(chat.events.is_empty(), "content is off: no content event");
    assert!(
        !contains(&receiver.raw(), PROMPT.as_bytes()),
        "the prompt is in no exported byte"
    );
}

#[test]
fn a_run_inside_a_span_of_the_callers_is_its_child() {
    let receiver = Receiver::start().expect("receiver");
    let config = OtelConfig::new(&receiver.url()).expect("a valid endpoint");
    let telemetry = Telemetry::start(&config).expect("export starts");
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info_span!("handle_request").in_scope(write_a_run);
    });
    assert!(telemetry.shutdown().flushed);
    let spans = receiver.spans();
    let caller = span(&spans, "handle_request");
    let run = span(&spans, "invoke_agent rein");
    assert_eq!(run.parent_span_id, caller.span_id);
    assert_eq!(run.trace_id, caller.trace_id);
}

#[test]
fn captured_content_goes_out_as_an_event() {
    let receiver = Receiver::start().expect("receiver");
    let report = export_a_run(&receiver, Content::Captured);
    assert!(report.flushed, "{report:?}");
    let spans = receiver.spans();
    let chat = span(&spans, "chat m1");
    assert_eq!(chat.events.len(), 1);
    assert_eq!(
        attribute(&chat.events[0].attributes, names::INPUT_MESSAGES).as_deref(),
        Some(PROMPT)
    );
}

#[test]
fn metrics_are_read_off_the_spans() {
    let receiver = Receiver::start().expect("receiver");
    let report = export_a_run(&receiver, Content::Omitted);
    assert!(report.flushed && report.metrics_sent, "{report:?}");
    let mut metrics: Vec<String> = receiver
        .metric_requests()
        .into_iter()
        .flat_map(|r| r.resource_metrics)
        .flat_map(|r| r.scope_metrics)
        .flat_map(|s| s.metrics)
        .map(|m| m.name)
        .collect();
    metrics.sort_unstable();
    metrics.dedup();
    for name in [
        names::METRIC_TOKEN_USAGE,
        names::METRIC_OPERATION_DURATION,
        names::METRIC_RUNS_STARTED,
        names::METRIC_RUNS_ENDED,
        names::METRIC_TOOL_CALLS,
        names::METRIC_APPROVALS,
        names::METRIC_BUDGET_EXHAUSTIONS,
    ] {
        assert!(
            metrics.iter().any(|m| m == name),
            "{name} missing from {metrics:?}"
        );
    }
}

#[test]
fn an_unreachable_collector_fails_no_caller_and_is_counted() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let config = OtelConfig::new(&format!("http://127.0.0.1:{port}"))
        .expect("a valid endpoint")
        .with_export_timeout(Duration::from_secs(2));
    let telemetry = Telemetry::start(&config).expect("export starts all the same");
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, write_a_run);
    let report = telemetry.shutdown();
    assert_eq!(report.exported_spans, 0);
    assert_eq!(report.failed_spans, 3, "{report:?}");
}

#[test]
fn a_full_queue_drops_spans_and_counts_them_and_shutdown_is_bounded() {
    // A collector that accepts connections and never answers: the first export hangs, so
    // the queue holds what it was given and drops the rest.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let config = OtelConfig::new(&format!("http://{}", hanging.local_addr().expect("addr")))
        .expect("a valid endpoint")
        .with_queue_capacity(1)
        .expect("a capacity")
        .with_export_timeout(Duration::from_secs(600))
        .with_flush_timeout(Duration::from_millis(100));
    let telemetry = Telemetry::start(&config).expect("export starts");
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, write_a_run);
    assert_eq!(telemetry.dropped_spans(), 2, "three spans ended, one held");
    let report = telemetry.shutdown();
    assert_eq!(report.dropped_spans, 2);
    assert!(
        !report.flushed,
        "the hanging export is given up at the flush timeout"
    );
}

#[test]
fn a_malformed_endpoint_is_a_clear_error_at_start() {
    let check = |url: &str, problem: EndpointProblem| {
        let error = OtelConfig::new(url).expect_err(url);
        assert_eq!(
            error,
            OtelError::InvalidEndpoint {
                endpoint: url.to_owned(),
                problem
            }
        );
        let message = error.to_string();
        assert!(
            message.contains(url) && message.contains("http://127.0.0.1:4318"),
            "{message}"
        );
    };
    check("localhost:4318", EndpointProblem::Scheme);
    check("ftp://collector:4318", EndpointProblem::Scheme);
    check("http://", EndpointProblem::NotUrl);
    check("http://collector:4318/?a=b", EndpointProblem::Query);
    check("not a url", EndpointProblem::NotUrl);

    let error = OtelConfig::new("http://user:hunter2@collector:4318").expect_err("credentials");
    assert_eq!(error, OtelError::EndpointCredentials);
    assert!(!error.to_string().contains("hunter2"));
    assert!(!format!("{error:?}").contains("hunter2"));
}

#[test]
fn the_standard_variables_configure_export() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    assert!(
        OtelConfig::from_env(vars(&[]))
            .expect("no endpoint")
            .is_none()
    );
    assert!(
        OtelConfig::from_env(vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]))
            .expect("an empty endpoint")
            .is_none()
    );
    let config = OtelConfig::from_env(vars(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
        ("OTEL_SERVICE_NAME", "billing"),
    ]))
    .expect("valid")
    .expect("export on");
    assert_eq!(config.service_name(), "billing");
    assert_eq!(
        config.endpoint().traces(),
        "http://127.0.0.1:4318/v1/traces"
    );
    assert_eq!(
        OtelConfig::from_env(vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector")]))
            .expect_err("no scheme"),
        OtelError::InvalidEndpoint {
            endpoint: "collector".into(),
            problem: EndpointProblem::Scheme
        }
    );
    assert_eq!(
        OtelConfig::from_env(vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SERVICE_NAME", "")
        ]))
        .expect_err("empty name"),
        OtelError::EmptyServiceName
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

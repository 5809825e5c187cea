//! `Telemetry`: the running export (or a tracer provider of the user's) and the `tracing`
//! layer that feeds it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::SpanExporter as _;
use rein_run::telemetry::{CONTENT_TARGET, SCHEMA_URL, TARGET};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

use crate::config::{Content, OtelConfig};
use crate::error::OtelError;
use crate::metrics::SpanMetrics;
use crate::propagation::SpanContexts;
use crate::queue::{ExportQueue, QueueBounds, QueueStats};

/// rein's telemetry export: a tracer provider (rein's, exporting over OTLP/HTTP with
/// protobuf, or one handed in) and, for rein's, a meter provider; [`Telemetry::layer`] is
/// the `tracing` layer to install. Call [`Telemetry::shutdown`] before the process ends:
/// it sends what is queued, within the configured flush timeout.
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt as _;
/// use rein_otel::{OtelConfig, Telemetry};
/// let telemetry = Telemetry::start(&OtelConfig::new("http://127.0.0.1:4318")?)?;
/// let subscriber = tracing_subscriber::registry().with(telemetry.layer());
/// tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
/// // … run agents …
/// let report = telemetry.shutdown();
/// assert_eq!(report.dropped_spans, 0);
/// # Ok::<(), rein_otel::OtelError>(())
/// ```
#[derive(Debug)]
pub struct Telemetry {
    tracer_provider: SdkTracerProvider,
    meter_provider: Option<SdkMeterProvider>,
    content: Content,
    stats: Option<Arc<QueueStats>>,
    flush_timeout: Duration,
}

/// What shutdown could send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Spans delivered to the collector.
    pub exported_spans: u64,
    /// Spans dropped because the export queue was full.
    pub dropped_spans: u64,
    /// Spans whose export failed (collector unreachable, refusing or too slow).
    pub failed_spans: u64,
    /// Whether every queued span was sent (or given up) within the flush timeout.
    pub flushed: bool,
    /// Whether the last metrics were delivered (false too when the collector takes no
    /// metrics: some trace backends accept `/v1/traces` only).
    pub metrics_sent: bool,
}

impl Telemetry {
    /// Starts exporting spans and metrics to `config`'s collector. Nothing is sent until
    /// spans end; an unreachable collector is no error here (exports to it fail, are
    /// counted, and never slow a run).
    ///
    /// # Errors
    /// [`OtelError::Exporter`] when an exporter cannot be built, [`OtelError::Thread`]
    /// when the export thread cannot start.
    pub fn start(config: &OtelConfig) -> Result<Self, OtelError> {
        let resource = Resource::builder()
            .with_service_name(config.service_name().to_owned())
            .build();
        let mut spans = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(config.endpoint().traces())
            .with_timeout(config.export_timeout())
            .build()
            .map_err(|e| OtelError::Exporter {
                signal: "traces",
                message: e.to_string(),
            })?;
        let metrics = MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(config.endpoint().metrics())
            .with_timeout(config.export_timeout())
            .build()
            .map_err(|e| OtelError::Exporter {
                signal: "metrics",
                message: e.to_string(),
            })?;
        let meter_provider = SdkMeterProvider::builder()
            .with_resource(resource.clone())
            .with_reader(
                PeriodicReader::builder(metrics)
                    .with_interval(config.metrics_interval())
                    .build(),
            )
            .build();
        // The queue owns the exporter on its thread: it learns the resource here, once.
        spans.set_resource(&resource);
        let stats = Arc::new(QueueStats::default());
        let queue = ExportQueue::start(
            spans,
            QueueBounds {
                capacity: config.queue_capacity(),
                max_batch: config.max_batch(),
                delay: config.batch_delay(),
            },
            Arc::clone(&stats),
        )?;
        let tracer_provider = SdkTracerProvider::builder()
            .with_resource(resource)
            // First: the metrics read each span before the queue takes it.
            .with_span_processor(SpanMetrics::new(&meter_provider.meter_with_scope(scope())))
            .with_span_processor(queue)
            .build();
        Ok(Self {
            tracer_provider,
            meter_provider: Some(meter_provider),
            content: config.content(),
            stats: Some(stats),
            flush_timeout: config.flush_timeout(),
        })
    }

    /// Uses a tracer provider of your own (its processors and exporters are yours; add a
    /// [`SpanMetrics`] to it for rein's metrics). `content` says whether content goes into
    /// its spans.
    #[must_use]
    pub fn with_tracer_provider(provider: SdkTracerProvider, content: Content) -> Self {
        Self {
            tracer_provider: provider,
            meter_provider: None,
            content,
            stats: None,
            flush_timeout: Duration::from_secs(5),
        }
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans: rein's telemetry
    /// spans and events (the `rein::telemetry` target); content (the `rein::content`
    /// target) only when it is captured; none of rein's other logs (they may quote a
    /// model); and the caller's own spans and events at INFO and above, so that a run
    /// started inside a span of the caller's is that span's child. The HTTP crates the
    /// exporter itself uses are left out.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let content = match self.content {
            Content::Captured => LevelFilter::TRACE,
            Content::Omitted => LevelFilter::OFF,
        };
        let targets = Targets::new()
            .with_default(LevelFilter::INFO)
            // Matched by prefix, the most specific first: `rein` covers every crate of
            // rein's (`rein_engine`, `rein_llm`, …).
            .with_target("rein", LevelFilter::OFF)
            .with_target(TARGET, LevelFilter::TRACE)
            .with_target(CONTENT_TARGET, content)
            .with_targets(
                ["opentelemetry", "hyper", "h2", "reqwest", "tower", "rustls"]
                    .map(|t| (t, LevelFilter::OFF)),
            );
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer_provider.tracer_with_scope(scope()))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(targets)
    }

    /// Installs [`Telemetry::layer`] as the process's global `tracing` subscriber (on a
    /// registry of its own). To add other layers (a log formatter), compose them with
    /// [`tracing_subscriber`](crate::tracing_subscriber) instead.
    ///
    /// # Errors
    /// [`OtelError::SubscriberSet`] when the process already has one.
    pub fn install(&self) -> Result<(), OtelError> {
        use tracing_subscriber::layer::SubscriberExt as _;
        let subscriber = tracing_subscriber::registry().with(self.layer());
        tracing::subscriber::set_global_default(subscriber).map_err(|_| OtelError::SubscriberSet)
    }

    /// The trace context port to hand the engine (`EngineBuilder::trace_context`), the
    /// model providers and the MCP client (their `with_trace_context`): the context of the
    /// current span as this export's layer builds it.
    #[must_use]
    pub fn trace_context(&self) -> Arc<dyn rein_run::telemetry::TraceContext> {
        Arc::new(SpanContexts)
    }

    /// The tracer provider spans go to.
    #[must_use]
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer_provider
    }

    /// Spans dropped so far because the export queue was full (0 with a provider of
    /// your own).
    #[must_use]
    pub fn dropped_spans(&self) -> u64 {
        self.stats
            .as_ref()
            .map_or(0, |s| s.dropped.load(Ordering::Relaxed))
    }

    /// Sends what is queued and stops, waiting at most the flush timeout for spans and
    /// as long again for metrics.
    #[must_use = "the report says whether spans were lost"]
    pub fn shutdown(self) -> ShutdownReport {
        let timeout = self.flush_timeout;
        let traces = self.tracer_provider.shutdown_with_timeout(timeout);
        let metrics = self
            .meter_provider
            .as_ref()
            .map_or(Ok(()), |m| m.shutdown_with_timeout(timeout));
        let count = |f: fn(&QueueStats) -> u64| self.stats.as_deref().map_or(0, f);
        ShutdownReport {
            exported_spans: count(|s| s.exported.load(Ordering::Relaxed)),
            dropped_spans: count(|s| s.dropped.load(Ordering::Relaxed)),
            failed_spans: count(|s| s.failed.load(Ordering::Relaxed)),
            flushed: traces.is_ok(),
            metrics_sent: metrics.is_ok(),
        }
    }
}

/// The instrumentation scope of rein's spans and metrics.
fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("rein")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_schema_url(SCHEMA_URL)
        .build()
}

//! A loopback OTLP/HTTP receiver for tests (feature `receiver`): it accepts
//! `POST /v1/traces` and `POST /v1/metrics` with protobuf bodies, keeps every body as sent,
//! and decodes them with the OpenTelemetry protocol's own types.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

pub use opentelemetry_proto::tonic as proto;

/// What was posted to a [`Receiver`].
#[derive(Debug, Default)]
struct Posted {
    traces: Vec<Bytes>,
    metrics: Vec<Bytes>,
}

/// A loopback OTLP/HTTP receiver serving on a thread of its own (so a test's runtime, or
/// a blocking shutdown, never holds it up); it stops when dropped.
#[derive(Debug)]
pub struct Receiver {
    addr: SocketAddr,
    posted: Arc<Mutex<Posted>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Receiver {
    /// Starts one on a free loopback port.
    ///
    /// # Errors
    /// When no port can be bound or no thread started.
    pub fn start() -> std::io::Result<Self> {
        let posted = Arc::new(Mutex::new(Posted::default()));
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .with_state(Arc::clone(&posted));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })?;
        Ok(Self {
            addr,
            posted,
            stop: Some(stop),
        })
    }

    /// Its base URL (`http://127.0.0.1:PORT`).
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every byte posted to it, traces and metrics.
    #[must_use]
    pub fn raw(&self) -> Vec<u8> {
        let posted = self.posted.lock().unwrap_or_else(PoisonError::into_inner);
        posted
            .traces
            .iter()
            .chain(&posted.metrics)
            .flat_map(|b| b.iter().copied())
            .collect()
    }

    /// The trace requests received, decoded (a body that does not decode is skipped).
    #[must_use]
    pub fn trace_requests(&self) -> Vec<ExportTraceServiceRequest> {
        let posted = self.posted.lock().unwrap_or_else(PoisonError::into_inner);
        posted
            .traces
            .iter()
            .filter_map(|b| ExportTraceServiceRequest::decode(b.as_ref()).ok())
            .collect()
    }

    /// Every span received, in the order received.
    #[must_use]
    pub fn spans(&self) -> Vec<Span> {
        self.trace_requests()
            .into_iter()
            .flat_map(|r| r.resource_spans)
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    /// The metric requests received, decoded.
    #[must_use]
    pub fn metric_requests(&self) -> Vec<ExportMetricsServiceRequest> {
        let posted = self.posted.lock().unwrap_or_else(PoisonError::into_inner);
        posted
            .metrics
            .iter()
            .filter_map(|b| ExportMetricsServiceRequest::decode(b.as_ref()).ok())
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn traces(State(posted): State<Arc<Mutex<Posted>>>, body: Bytes) -> StatusCode {
    posted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .traces
        .push(body);
    StatusCode::OK
}

async fn metrics(State(posted): State<Arc<Mutex<Posted>>>, body: Bytes) -> StatusCode {
    posted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .metrics
        .push(body);
    StatusCode::OK
}

/// The value of attribute `key` in `attributes`, as text (numbers and booleans written
/// out), if present.
#[must_use]
pub fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(text)
}

fn text(value: &AnyValue) -> Option<String> {
    Some(match value.value.as_ref()? {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::BoolValue(b) => b.to_string(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::DoubleValue(d) => d.to_string(),
        _ => return None,
    })
}

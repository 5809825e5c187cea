//! `ExportQueue`: a span processor that hands finished spans to an export thread through a
//! bounded queue, so a slow or absent collector never slows a run: past the bound, spans
//! are dropped and counted (the first drop is reported once), and shutdown waits for the
//! queue's flush for a bounded time only.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use crate::error::OtelError;

/// What the export thread is told.
enum Message {
    Span(Box<SpanData>),
    /// Export everything queued before this message, then answer.
    Flush(Sender<()>),
    /// Flush, shut the exporter down, answer and stop.
    Shutdown(Sender<()>),
}

/// The queue's counts, shared with the [`Telemetry`](crate::Telemetry) handle.
#[derive(Debug, Default)]
pub(crate) struct QueueStats {
    /// Spans dropped because the queue was full.
    pub(crate) dropped: AtomicU64,
    /// Spans an export failed to deliver (the collector unreachable, refusing, slow).
    pub(crate) failed: AtomicU64,
    /// Spans delivered.
    pub(crate) exported: AtomicU64,
    /// Whether a failed export has been reported.
    failure_reported: AtomicBool,
}

/// The bounds of an [`ExportQueue`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueBounds {
    pub(crate) capacity: usize,
    pub(crate) max_batch: usize,
    pub(crate) delay: Duration,
}

/// A span processor exporting on its own thread through a bounded queue.
#[derive(Debug)]
pub(crate) struct ExportQueue {
    tx: Mutex<Sender<Message>>,
    /// Spans held (sent to the export thread and not yet exported or given up): the
    /// bound is on every span in memory, so a collector that hangs cannot grow it.
    queued: Arc<AtomicUsize>,
    capacity: usize,
    stats: Arc<QueueStats>,
}

impl ExportQueue {
    /// Starts the export thread for `exporter`.
    pub(crate) fn start<E: SpanExporter + 'static>(
        exporter: E,
        bounds: QueueBounds,
        stats: Arc<QueueStats>,
    ) -> Result<Self, OtelError> {
        let (tx, rx) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let worker = Worker {
            exporter,
            rx,
            queued: Arc::clone(&queued),
            bounds,
            stats: Arc::clone(&stats),
        };
        std::thread::Builder::new()
            .name("rein-otel-export".into())
            .spawn(move || worker.run())
            .map_err(|e| OtelError::Thread(e.to_string()))?;
        Ok(Self {
            tx: Mutex::new(tx),
            queued,
            capacity: bounds.capacity,
            stats,
        })
    }

    fn send(&self, message: Message) -> bool {
        self.tx.lock().is_ok_and(|tx| tx.send(message).is_ok())
    }

    /// Sends `make`'s message and waits at most `timeout` for the export thread's answer.
    fn ask(&self, make: impl FnOnce(Sender<()>) -> Message, timeout: Duration) -> OTelSdkResult {
        let (ack, done) = mpsc::channel();
        if !self.send(make(ack)) {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        done.recv_timeout(timeout)
            .map_err(|_| OTelSdkError::Timeout(timeout))
    }
}

impl SpanProcessor for ExportQueue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.capacity {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            if self.stats.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    target: "rein_otel",
                    capacity = self.capacity,
                    "the telemetry export queue is full: spans are being dropped (the \
                     collector is slow or unreachable); the count is reported at shutdown"
                );
            }
            return;
        }
        if !self.send(Message::Span(Box::new(span))) {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Message::Flush, Duration::from_secs(30))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.ask(Message::Shutdown, timeout)
    }
}

/// The export thread.
struct Worker<E> {
    exporter: E,
    rx: Receiver<Message>,
    queued: Arc<AtomicUsize>,
    bounds: QueueBounds,
    stats: Arc<QueueStats>,
}

impl<E: SpanExporter> Worker<E> {
    fn run(mut self) {
        let mut batch = Vec::with_capacity(self.bounds.max_batch);
        let mut due: Option<Instant> = None;
        loop {
            let message = match due {
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(at) => self
                    .rx
                    .recv_timeout(at.saturating_duration_since(Instant::now())),
            };
            match message {
                Ok(Message::Span(span)) => {
                    batch.push(*span);
                    if batch.len() >= self.bounds.max_batch {
                        self.export(&mut batch);
                        due = None;
                    } else if due.is_none() {
                        due = Some(Instant::now() + self.bounds.delay);
                    }
                }
                Ok(Message::Flush(ack)) => {
                    self.export(&mut batch);
                    due = None;
                    let _ = ack.send(());
                }
                Ok(Message::Shutdown(ack)) => {
                    self.export(&mut batch);
                    let _ = self.exporter.shutdown();
                    let _ = ack.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.export(&mut batch);
                    due = None;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.export(&mut batch);
                    let _ = self.exporter.shutdown();
                    return;
                }
            }
        }
    }

    /// Exports `batch` (emptying it), at most `max_batch` spans per request.
    fn export(&mut self, batch: &mut Vec<SpanData>) {
        while !batch.is_empty() {
            let take = batch.len().min(self.bounds.max_batch);
            let chunk: Vec<SpanData> = batch.drain(..take).collect();
            let count = chunk.len() as u64;
            let outcome = futures_executor::block_on(self.exporter.export(chunk));
            self.queued.fetch_sub(take, Ordering::AcqRel);
            match outcome {
                Ok(()) => {
                    self.stats.exported.fetch_add(count, Ordering::Relaxed);
                }
                Err(error) => {
                    self.stats.failed.fetch_add(count, Ordering::Relaxed);
                    if !self.stats.failure_reported.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            target: "rein_otel",
                            %error,
                            "a telemetry export failed (the collector is unreachable or \
                             refused it); runs go on, and the count is reported at shutdown"
                        );
                    }
                }
            }
        }
    }
}

//! The attempt layer: asks the caller's observer before each attempt and tells it how the
//! attempt ended.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use rein_tool::{ToolError, ToolName, ToolOutput};
use tokio::time::Instant;
use tower::{Layer, Service};

use super::Failure;
use crate::{AttemptObserver, AttemptReport, ToolCall};

/// Wraps a service in [`Attempt`].
#[derive(Debug, Clone)]
pub(crate) struct AttemptLayer {
    tool: Arc<ToolName>,
}

/// Runs the [`AttemptObserver`] protocol around each call of the inner service. Calls without
/// an observer pass straight through.
#[derive(Debug, Clone)]
pub(crate) struct Attempt<S> {
    inner: S,
    tool: Arc<ToolName>,
}

pin_project! {
    /// The future of [`Attempt`].
    #[project = AttemptProj]
    pub(crate) enum AttemptFuture<F> {
        Unobserved { #[pin] future: F },
        Observed { #[pin] future: F, report: Report },
        Vetoed { error: Option<ToolError> },
    }
}

/// An attempt that started and owes its observer one `after_attempt`; paid on completion,
/// or with `Cancelled` when dropped first.
pub(crate) struct Report {
    observer: Arc<dyn AttemptObserver>,
    tool: Arc<ToolName>,
    attempt: u32,
    started: Instant,
    sent: bool,
}

impl AttemptLayer {
    /// A layer reporting attempts of `tool`.
    pub(crate) fn new(tool: ToolName) -> Self {
        Self {
            tool: Arc::new(tool),
        }
    }
}

impl<S> Layer<S> for AttemptLayer {
    type Service = Attempt<S>;

    fn layer(&self, inner: S) -> Attempt<S> {
        Attempt {
            inner,
            tool: Arc::clone(&self.tool),
        }
    }
}

impl<S> Service<ToolCall> for Attempt<S>
where
    S: Service<ToolCall, Response = ToolOutput, Error = ToolError>,
{
    type Response = ToolOutput;
    type Error = Failure;
    type Future = AttemptFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        self.inner.poll_ready(cx).map_err(Failure::Tool)
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        let Some(observer) = call.observer.clone() else {
            return AttemptFuture::Unobserved {
                future: self.inner.call(call),
            };
        };
        let attempt = call.attempt;
        if let Err(error) = observer.before_attempt(&self.tool, attempt) {
            tracing::debug!(tool = %self.tool, attempt, %error, "attempt vetoed by the caller");
            return AttemptFuture::Vetoed { error: Some(error) };
        }
        let report = Report {
            observer,
            tool: Arc::clone(&self.tool),
            attempt,
            started: Instant::now(),
            sent: false,
        };
        AttemptFuture::Observed {
            future: self.inner.call(call),
            report,
        }
    }
}

impl<F> Future for AttemptFuture<F>
where
    F: Future<Output = Result<ToolOutput, ToolError>>,
{
    type Output = Result<ToolOutput, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AttemptProj::Unobserved { future } => {
                Poll::Ready(ready!(future.poll(cx)).map_err(Failure::Tool))
            }
            AttemptProj::Observed { future, report } => {
                let outcome = ready!(future.poll(cx));
                report.send(&outcome);
                Poll::Ready(outcome.map_err(Failure::Tool))
            }
            AttemptProj::Vetoed { error } => Poll::Ready(Err(Failure::Vetoed(
                error.take().expect("AttemptFuture polled after completion"),
            ))),
        }
    }
}

impl Report {
    /// Tells the observer how the attempt ended, once.
    fn send(&mut self, outcome: &Result<ToolOutput, ToolError>) {
        if !self.sent {
            self.sent = true;
            self.observer.after_attempt(&AttemptReport {
                tool: &self.tool,
                attempt: self.attempt,
                outcome,
                elapsed: self.started.elapsed(),
            });
        }
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if !self.sent {
            self.send(&Err(ToolError::Cancelled));
        }
    }
}

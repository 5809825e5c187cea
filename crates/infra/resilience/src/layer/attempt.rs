//! The attempt layer: asks the caller's observer before each attempt (waiting for its
//! answer when it has to) and tells it how the attempt ended.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use rein_tool::{BoxFuture, ToolError, ToolName, ToolOutput};
use tokio::time::Instant;
use tower::{Layer, Service};

use super::Failure;
use crate::call::Admit;
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
    pub(crate) enum AttemptFuture<S>
    where
        S: Service<ToolCall>,
    {
        Unobserved { #[pin] future: S::Future },
        /// The observer answered [`Admission::wait`]: the attempt starts when it says so.
        Admitting {
            admission: BoxFuture<'static, Result<(), ToolError>>,
            pending: Option<Pending<S>>,
        },
        Observed { #[pin] future: S::Future, report: Report },
        Vetoed { error: Option<ToolError> },
    }
}

/// An attempt waiting for its admission: the ready inner service and the call it will make.
pub(crate) struct Pending<S> {
    inner: S,
    call: ToolCall,
    observer: Arc<dyn AttemptObserver>,
    tool: Arc<ToolName>,
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
    S: Service<ToolCall, Response = ToolOutput, Error = ToolError> + Clone,
{
    type Response = ToolOutput;
    type Error = Failure;
    type Future = AttemptFuture<S>;

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
        match observer.before_attempt(&self.tool, attempt).0 {
            Admit::Allow => AttemptFuture::Observed {
                report: Report::start(observer, Arc::clone(&self.tool), attempt),
                future: self.inner.call(call),
            },
            Admit::Deny(error) => {
                tracing::debug!(tool = %self.tool, attempt, %error, "attempt vetoed by the caller");
                AttemptFuture::Vetoed { error: Some(error) }
            }
            Admit::Wait(admission) => {
                // The service `poll_ready` readied goes with the call; a clone stays behind.
                let clone = self.inner.clone();
                let inner = std::mem::replace(&mut self.inner, clone);
                AttemptFuture::Admitting {
                    admission,
                    pending: Some(Pending {
                        inner,
                        call,
                        observer,
                        tool: Arc::clone(&self.tool),
                    }),
                }
            }
        }
    }
}

impl<S> Future for AttemptFuture<S>
where
    S: Service<ToolCall, Response = ToolOutput, Error = ToolError>,
{
    type Output = Result<ToolOutput, Failure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                AttemptProj::Unobserved { future } => {
                    return Poll::Ready(ready!(future.poll(cx)).map_err(Failure::Tool));
                }
                AttemptProj::Admitting { admission, pending } => {
                    let admitted = ready!(admission.as_mut().poll(cx));
                    let Pending {
                        mut inner,
                        call,
                        observer,
                        tool,
                    } = pending
                        .take()
                        .expect("AttemptFuture polled after completion");
                    let attempt = call.attempt;
                    if let Err(error) = admitted {
                        tracing::debug!(tool = %tool, attempt, %error, "attempt vetoed by the caller");
                        self.set(AttemptFuture::Vetoed { error: None });
                        return Poll::Ready(Err(Failure::Vetoed(error)));
                    }
                    let report = Report::start(observer, tool, attempt);
                    let future = inner.call(call);
                    self.set(AttemptFuture::Observed { future, report });
                }
                AttemptProj::Observed { future, report } => {
                    let outcome = ready!(future.poll(cx));
                    report.send(&outcome);
                    return Poll::Ready(outcome.map_err(Failure::Tool));
                }
                AttemptProj::Vetoed { error } => {
                    return Poll::Ready(Err(Failure::Vetoed(
                        error.take().expect("AttemptFuture polled after completion"),
                    )));
                }
            }
        }
    }
}

impl Report {
    /// A report owed for `attempt`, which starts now.
    fn start(observer: Arc<dyn AttemptObserver>, tool: Arc<ToolName>, attempt: u32) -> Self {
        Self {
            observer,
            tool,
            attempt,
            started: Instant::now(),
            sent: false,
        }
    }

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

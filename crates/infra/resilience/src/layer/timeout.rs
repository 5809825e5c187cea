//! The timeout layer: one attempt that outlives its timeout is dropped and becomes
//! `ToolError::TimedOut`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use rein_tool::{ToolError, ToolOutput};
use tokio::time::Sleep;
use tower::{Layer, Service};

use crate::ToolCall;

/// Wraps a service in [`Timeout`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeoutLayer {
    after: Duration,
}

/// Fails a call with `ToolError::TimedOut` when it has not finished `after` its start, on
/// tokio's clock. Unlike tower's `Timeout` it keeps the error typed.
#[derive(Debug, Clone)]
pub(crate) struct Timeout<S> {
    inner: S,
    after: Duration,
}

pin_project! {
    /// The future of [`Timeout`]: the inner future raced against a sleep.
    pub(crate) struct TimeoutFuture<F> {
        #[pin]
        future: F,
        #[pin]
        sleep: Sleep,
        after: Duration,
    }
}

impl TimeoutLayer {
    /// A layer timing out each call after `after`.
    pub(crate) const fn new(after: Duration) -> Self {
        Self { after }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            after: self.after,
        }
    }
}

impl<S> Service<ToolCall> for Timeout<S>
where
    S: Service<ToolCall, Response = ToolOutput, Error = ToolError>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = TimeoutFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        TimeoutFuture {
            future: self.inner.call(call),
            sleep: tokio::time::sleep(self.after),
            after: self.after,
        }
    }
}

impl<F> Future for TimeoutFuture<F>
where
    F: Future<Output = Result<ToolOutput, ToolError>>,
{
    type Output = Result<ToolOutput, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(outcome) = this.future.poll(cx) {
            return Poll::Ready(outcome);
        }
        ready!(this.sleep.poll(cx));
        Poll::Ready(Err(ToolError::TimedOut { after: *this.after }))
    }
}

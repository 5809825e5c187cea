//! The timeout layer: one attempt that outlives its timeout is dropped and becomes
//! `ToolError::TimedOut`.
//!
//! The deadline is fixed when the attempt starts, but the timer is armed only if the attempt
//! is still running after its first poll: a tool that answers at once (most calls) costs a
//! clock read, never a timer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use rein_tool::{ToolError, ToolOutput};
use tokio::time::{Instant, Sleep};
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
    /// The future of [`Timeout`]: the inner future raced against a sleep until `deadline`,
    /// made the first time the inner future is pending.
    pub(crate) struct TimeoutFuture<F> {
        #[pin]
        future: F,
        #[pin]
        sleep: Option<Sleep>,
        deadline: Instant,
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
        // The deadline counts from the call, as `tokio::time::sleep` made here would.
        let deadline = Instant::now() + self.after;
        TimeoutFuture {
            future: self.inner.call(call),
            sleep: None,
            deadline,
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
        let mut this = self.project();
        if let Poll::Ready(outcome) = this.future.poll(cx) {
            return Poll::Ready(outcome);
        }
        if this.sleep.is_none() {
            this.sleep
                .set(Some(tokio::time::sleep_until(*this.deadline)));
        }
        if let Some(sleep) = this.sleep.as_pin_mut() {
            ready!(sleep.poll(cx));
        }
        Poll::Ready(Err(ToolError::TimedOut { after: *this.after }))
    }
}

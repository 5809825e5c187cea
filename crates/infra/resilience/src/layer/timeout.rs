//! The timeout step: an attempt that outlives its timeout is dropped and becomes
//! `ToolError::TimedOut`.
//!
//! The timer is armed only when the attempt first has to wait, and the timeout counts from
//! then: a tool that answers at once (most calls) costs neither a clock read nor a timer. On
//! tokio's clock an attempt's first poll takes no time, so that is also when it started.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use rein_tool::{ToolError, ToolOutput};
use tokio::time::Sleep;

pin_project! {
    /// `future` raced against a timer of `after`, made the first time `future` is pending
    /// (boxed, so that a call that never waits carries no timer in its future).
    pub(crate) struct TimeoutFuture<F> {
        #[pin]
        future: F,
        sleep: Option<Pin<Box<Sleep>>>,
        after: Duration,
    }
}

/// Fails `future` with `ToolError::TimedOut` when it has not finished `after` it first had
/// to wait, on tokio's clock. Unlike tower's `Timeout` it keeps the error typed.
pub(crate) const fn timeout<F>(future: F, after: Duration) -> TimeoutFuture<F> {
    TimeoutFuture {
        future,
        sleep: None,
        after,
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
        let after = *this.after;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(after)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(Err(ToolError::TimedOut { after }))
    }
}

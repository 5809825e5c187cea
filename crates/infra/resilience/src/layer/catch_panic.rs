//! The panic layer: a panic in the tool or in a user layer becomes `ToolError::Panicked`.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::FutureExt as _;
use futures_util::future::CatchUnwind;
use pin_project_lite::pin_project;
use rein_tool::{ToolError, ToolOutput};
use tower::{Layer, Service};

use crate::ToolCall;

/// Wraps a service in [`CatchPanic`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CatchPanicLayer;

/// Catches panics of the inner service's `call` and of its future, with their message.
///
/// A panic only unwinds to here when the binary is built with `panic = "unwind"` (Rust's
/// default); with `panic = "abort"` the process ends.
#[derive(Debug, Clone)]
pub(crate) struct CatchPanic<S> {
    inner: S,
}

pin_project! {
    /// The future of [`CatchPanic`].
    #[project = CatchPanicProj]
    pub(crate) enum CatchPanicFuture<F> {
        Running { #[pin] future: CatchUnwind<AssertUnwindSafe<F>> },
        Panicked { error: Option<ToolError> },
    }
}

impl<S> Layer<S> for CatchPanicLayer {
    type Service = CatchPanic<S>;

    fn layer(&self, inner: S) -> CatchPanic<S> {
        CatchPanic { inner }
    }
}

impl<S> Service<ToolCall> for CatchPanic<S>
where
    S: Service<ToolCall, Response = ToolOutput, Error = ToolError>,
{
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = CatchPanicFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(call))) {
            Ok(future) => CatchPanicFuture::Running {
                future: AssertUnwindSafe(future).catch_unwind(),
            },
            Err(payload) => CatchPanicFuture::Panicked {
                error: Some(panicked(&*payload)),
            },
        }
    }
}

impl<F> Future for CatchPanicFuture<F>
where
    F: Future<Output = Result<ToolOutput, ToolError>>,
{
    type Output = Result<ToolOutput, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CatchPanicProj::Running { future } => Poll::Ready(
                ready!(future.poll(cx)).unwrap_or_else(|payload| Err(panicked(&*payload))),
            ),
            CatchPanicProj::Panicked { error } => Poll::Ready(Err(error
                .take()
                .expect("CatchPanicFuture polled after completion"))),
        }
    }
}

/// `ToolError::Panicked` with the panic's message (`panic!` payloads are `&str` or `String`).
fn panicked(payload: &(dyn Any + Send)) -> ToolError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic payload is not a string".to_owned());
    tracing::warn!(%message, "tool panicked");
    ToolError::Panicked { message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_str_payloads_keep_their_message() {
        let str_payload: Box<dyn Any + Send> = Box::new("static message");
        let string_payload: Box<dyn Any + Send> = Box::new(format!("formatted {}", 42));
        let other: Box<dyn Any + Send> = Box::new(7_u32);
        let message = |payload: Box<dyn Any + Send>| match panicked(&*payload) {
            ToolError::Panicked { message } => message,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(message(str_payload), "static message");
        assert_eq!(message(string_payload), "formatted 42");
        assert_eq!(message(other), "panic payload is not a string");
    }
}

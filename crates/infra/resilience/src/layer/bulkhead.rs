//! The bulkhead: tower's `ConcurrencyLimit` (callers queue), optionally behind `Shed`, a
//! typed twin of tower's `LoadShed` (callers fail fast with `ToolError::Overloaded`).

use std::future::{Ready, ready};
use std::task::{Context, Poll};

use futures_util::future::Either as EitherFuture;
use rein_tool::{ToolError, ToolName};
use tower::Service;
use tower::limit::ConcurrencyLimit;
use tower::util::Either;

use super::Failure;
use crate::Bulkhead;

/// A service behind the bulkhead `bulkhead` builds.
pub(crate) type BulkheadService<S> =
    Either<Either<ConcurrencyLimit<S>, Shed<ConcurrencyLimit<S>>>, S>;

/// Puts `inner` behind `config`'s bulkhead. Clones of the result share its permits.
pub(crate) fn bulkhead<S>(inner: S, config: Bulkhead, tool: &ToolName) -> BulkheadService<S> {
    match config {
        Bulkhead::Unlimited => Either::Right(inner),
        Bulkhead::Queue { max_concurrent } => Either::Left(Either::Left(ConcurrencyLimit::new(
            inner,
            max_concurrent.get(),
        ))),
        Bulkhead::FailFast { max_concurrent } => Either::Left(Either::Right(Shed {
            inner: ConcurrencyLimit::new(inner, max_concurrent.get()),
            tool: tool.clone(),
            ready: false,
        })),
    }
}

/// Turns "not ready" from the inner service into an immediate `ToolError::Overloaded`.
#[derive(Debug, Clone)]
pub(crate) struct Shed<S> {
    inner: S,
    tool: ToolName,
    ready: bool,
}

impl<S, Request> Service<Request> for Shed<S>
where
    S: Service<Request, Error = Failure>,
{
    type Response = S::Response;
    type Error = Failure;
    type Future = EitherFuture<S::Future, Ready<Result<S::Response, Failure>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        // Always ready: the call decides between the inner service and `Overloaded`.
        self.ready = match self.inner.poll_ready(cx) {
            Poll::Ready(result) => {
                result?;
                true
            }
            Poll::Pending => false,
        };
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if std::mem::take(&mut self.ready) {
            EitherFuture::Left(self.inner.call(request))
        } else {
            tracing::debug!(tool = %self.tool, "bulkhead full: call rejected");
            EitherFuture::Right(ready(Err(Failure::Tool(ToolError::Overloaded {
                tool: self.tool.clone(),
            }))))
        }
    }
}

//! `ChildTask`: a child run driven on a task of its own, which its parent awaits (see
//! `subrun`). Kept apart so the sub-run mechanism reads without the task plumbing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use rein_run::{Run, RunId};
use tracing::Instrument as _;

use crate::driver::Driver;
use crate::error::EngineError;
use crate::shared::ActiveGuard;

/// A child run driven on a task of its own. Dropped, it aborts the task, as dropping the
/// child's future would have: a parent that stops waiting leaves no child running.
pub(crate) struct ChildTask {
    id: RunId,
    task: tokio::task::JoinHandle<Result<Run, EngineError>>,
}

impl ChildTask {
    /// Drives `child` on a new task, which holds the child's guard until the drive ends.
    pub(crate) fn spawn(child: Driver, guard: ActiveGuard) -> Self {
        let id = child.run().id().clone();
        let drive = async move {
            let _guard = guard;
            child.drive().await
        };
        Self {
            id,
            task: tokio::spawn(drive.instrument(tracing::Span::current())),
        }
    }
}

impl Future for ChildTask {
    type Output = Result<Run, EngineError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let joined = std::task::ready!(Pin::new(&mut self.task).poll(cx));
        Poll::Ready(match joined {
            Ok(result) => result,
            // A panic in the child's drive goes on up, as it did through a nested future.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(EngineError::TaskFailed {
                id: self.id.clone(),
                source: Box::new(e),
            }),
        })
    }
}

impl Drop for ChildTask {
    fn drop(&mut self) {
        self.task.abort();
    }
}

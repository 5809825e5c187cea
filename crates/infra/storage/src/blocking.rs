//! Runs blocking filesystem work off the async executor, one hop per store operation.

use std::io;

/// Runs `work` on tokio's blocking pool when a tokio runtime is current, inline otherwise.
///
/// One store operation (open, write, fsync, rename…) is one hop, not one hop per system
/// call as with `tokio::fs`. Running inline without a runtime keeps the stores usable from
/// any executor and from plain threads, and means no store call ever panics for want of a
/// runtime. A panic inside `work` (a bug) comes back as an [`io::Error`], never unwinds
/// into the caller's task.
pub(crate) async fn run<T, F>(work: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => match handle.spawn_blocking(work).await {
            Ok(result) => result,
            Err(join) => Err(io::Error::other(format!(
                "the storage task did not finish ({join}); the runtime may be shutting down"
            ))),
        },
        Err(_) => work(),
    }
}

/// Content at least this large is hashed on the blocking pool rather than on the caller's
/// task: SHA-256 of 256 KiB takes on the order of a millisecond, too long to hold an
/// executor thread; below it, the hop to another thread would cost more than the hash.
pub(crate) const HASH_OFF_THREAD_BYTES: usize = 256 * 1024;

/// Runs CPU-bound `work` over `len` bytes: inline when small, on the blocking pool when
/// `len` reaches [`HASH_OFF_THREAD_BYTES`].
pub(crate) async fn compute<T, F>(len: usize, work: F) -> io::Result<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if len < HASH_OFF_THREAD_BYTES {
        Ok(work())
    } else {
        run(move || Ok(work())).await
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// Polls `future` once outside any runtime.
    fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
        std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn without_a_runtime_work_runs_inline() {
        let thread = std::thread::current().id();
        let ran_on = poll_once(run(move || Ok(std::thread::current().id())));
        assert!(matches!(ran_on, Poll::Ready(Ok(id)) if id == thread));
        assert!(matches!(
            poll_once(compute(HASH_OFF_THREAD_BYTES, || 7)),
            Poll::Ready(Ok(7))
        ));
    }

    #[tokio::test]
    async fn a_panic_in_blocking_work_is_an_error_not_an_unwind() {
        let result: io::Result<()> = run(|| panic!("bug in storage")).await;
        let err = result.unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
    }
}

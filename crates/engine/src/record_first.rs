//! On the record before it runs: the one place the driver waits on work it does not own (a
//! tool call and its retries, a planner and its model calls, a batch, an approver, a child
//! run) while something else may ask it to record first or to give up. Every such wait is
//! [`Watch::next`]: the run's abort and stop signals win, then — in the order the caller
//! chose — the work's end or a message from the work (an attempt to put on record, a
//! control to forward). The caller records the message and waits again, so an attempt is
//! on the record before it runs, by one mechanism for tool and model attempts alike.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// A link the work announces through (`L`: the tool stack's attempt observer, the
/// planner's sink) and the driver's end of it, carrying `M`. One per run: calls and steps
/// are one at a time, so every one reuses it (a channel allocates its first block of slots
/// on first use), and it is empty between them.
#[derive(Debug)]
pub(crate) struct RecordFirst<L, M> {
    /// What the work holds, to announce through.
    pub(crate) link: Arc<L>,
    /// Where the driver takes the announcements, in [`Watch::next`].
    pub(crate) rx: mpsc::UnboundedReceiver<M>,
}

impl<L, M> RecordFirst<L, M> {
    /// A channel and the link `link` makes of its sending end.
    pub(crate) fn new(link: impl FnOnce(mpsc::UnboundedSender<M>) -> L) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            link: Arc::new(link(tx)),
            rx,
        }
    }
}

/// What ended one wait.
#[derive(Debug)]
pub(crate) enum Next<M, T> {
    /// The work sent a message: record it (and answer it) before waiting again.
    Message(M),
    /// The work ended.
    Done(T),
    /// The run was aborted meanwhile.
    Aborted,
    /// The run was stopped meanwhile.
    Stopped,
}

/// Which of the work's end and its messages is taken first when both are ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum First {
    /// Messages first: what the work asked to record is recorded before its end is taken
    /// (attempts: a retry waits on its admission while the call is polled).
    Messages,
    /// The work's end first: messages left over stay in their channel for later (a child
    /// run that ended takes no more controls).
    Work,
}

/// A run's abort and stop signals, shared by its handle (when it has one), the engine's
/// stop requests and every wait of its driver. Behind one `Arc`: a wait takes them with
/// one reference count, not a token clone (a lock) each.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// An abort: see [`RunHandle::abort`](crate::RunHandle::abort).
    pub(crate) cancel: CancellationToken,
    /// A stop: see [`RunHandle::stop`](crate::RunHandle::stop).
    pub(crate) stop: CancellationToken,
}

impl Signals {
    /// Whether the run was aborted.
    pub(crate) fn aborted(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Whether the run was stopped.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.is_cancelled()
    }
}

/// The signals a wait gives up on and the order it takes the rest in; one per wait loop.
///
/// Its waits take the work as a `dyn Future`: generic over the work's type, the run's
/// future loses the lifetimes of the closures inside it and is no longer provably `Send`.
pub(crate) struct Watch {
    signals: Option<Arc<Signals>>,
    /// Whether a stop ends the wait too (an abort always does).
    and_stop: bool,
    /// Registered with the signals on the first poll that finds the work pending, and
    /// boxed then (a signal's wait must stay pinned from one poll to the next): work ready
    /// at once — most tool calls, a scripted planner — never registers with them.
    cancelled: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    stopped: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    first: First,
    /// Whether the message channel may still deliver (a closed one is not polled again).
    open: bool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("signals", &self.signals.is_some())
            .field("and_stop", &self.and_stop)
            .field("cancelled", &self.cancelled.is_some())
            .field("stopped", &self.stopped.is_some())
            .field("first", &self.first)
            .field("open", &self.open)
            .finish()
    }
}

impl Watch {
    /// A wait that gives up when the run is aborted (`signals`, if given).
    pub(crate) fn new(signals: Option<Arc<Signals>>, first: First) -> Self {
        Self {
            signals,
            and_stop: false,
            cancelled: None,
            stopped: None,
            first,
            open: true,
        }
    }

    /// The same wait, giving up when the run is stopped too.
    pub(crate) fn and_stop(mut self) -> Self {
        self.and_stop = true;
        self
    }

    /// Waits for the next of: abort, stop, then a message on `messages` or the end of
    /// `work` (in the order [`First`] says). Cancel-safe: `work` is only polled, never
    /// dropped, and a message is taken only when it is returned.
    pub(crate) fn next<'a, M, T>(
        &'a mut self,
        mut work: Pin<&'a mut (dyn Future<Output = T> + Send + 'a)>,
        mut messages: Option<&'a mut mpsc::UnboundedReceiver<M>>,
    ) -> impl Future<Output = Next<M, T>> + Unpin + 'a {
        poll_fn(move |cx| {
            if let Some(signals) = &self.signals {
                if signals.aborted() {
                    return Poll::Ready(Next::Aborted);
                }
                if self.and_stop && signals.stopped() {
                    return Poll::Ready(Next::Stopped);
                }
            }
            if self.first == First::Work
                && let Poll::Ready(done) = work.as_mut().poll(cx)
            {
                return Poll::Ready(Next::Done(done));
            }
            if let (true, Some(rx)) = (self.open, messages.as_deref_mut()) {
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(message)) => return Poll::Ready(Next::Message(message)),
                    Poll::Ready(None) => self.open = false,
                    Poll::Pending => {}
                }
            }
            if self.first == First::Messages
                && let Poll::Ready(done) = work.as_mut().poll(cx)
            {
                return Poll::Ready(Next::Done(done));
            }
            // Pending: a signal must wake this wait. One that fired since the check above
            // still wins.
            self.arm(cx).map_or(Poll::Pending, Poll::Ready)
        })
    }

    /// Registers this wait with the signals it gives up on (once), and says which fired.
    fn arm<M, T>(&mut self, cx: &mut Context<'_>) -> Option<Next<M, T>> {
        let signals = self.signals.as_ref()?;
        let wait = |slot: &mut Option<Pin<Box<WaitForCancellationFutureOwned>>>,
                    token: &CancellationToken,
                    cx: &mut Context<'_>| {
            slot.get_or_insert_with(|| Box::pin(token.clone().cancelled_owned()))
                .as_mut()
                .poll(cx)
                .is_ready()
        };
        if wait(&mut self.cancelled, &signals.cancel, cx) {
            return Some(Next::Aborted);
        }
        if self.and_stop && wait(&mut self.stopped, &signals.stop, cx) {
            return Some(Next::Stopped);
        }
        None
    }

    /// Waits for `work` to end, or for abort or stop: the [`Signal`] if one came first.
    pub(crate) fn until<'a, T>(
        &'a mut self,
        work: Pin<&'a mut (dyn Future<Output = T> + Send + 'a)>,
    ) -> impl Future<Output = Result<T, Signal>> + Unpin + 'a {
        let mut next = self.next::<std::convert::Infallible, T>(work, None);
        poll_fn(move |cx| {
            Pin::new(&mut next).poll(cx).map(|next| match next {
                Next::Done(done) => Ok(done),
                Next::Aborted => Err(Signal::Aborted),
                Next::Stopped => Err(Signal::Stopped),
                Next::Message(never) => match never {},
            })
        })
    }
}

/// What a wait gave up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// The run was aborted.
    Aborted,
    /// The run was stopped.
    Stopped,
}

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use super::*;

    #[tokio::test]
    async fn a_message_is_taken_before_the_work_ends_when_messages_come_first() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(7).unwrap();
        let mut work = pin!(async { "done" });
        let mut watch = Watch::new(None, First::Messages);
        assert!(matches!(
            watch.next(work.as_mut(), Some(&mut rx)).await,
            Next::Message(7)
        ));
        assert!(matches!(
            watch.next(work.as_mut(), Some(&mut rx)).await,
            Next::Done("done")
        ));
    }

    #[tokio::test]
    async fn the_work_ends_first_and_leaves_its_messages_when_it_comes_first() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(7).unwrap();
        let mut work = pin!(async { "done" });
        let mut watch = Watch::new(None, First::Work);
        assert!(matches!(
            watch.next(work.as_mut(), Some(&mut rx)).await,
            Next::Done("done")
        ));
        assert_eq!(rx.try_recv().ok(), Some(7));
    }

    #[tokio::test]
    async fn abort_wins_over_a_ready_message_and_work_and_stop() {
        let signals = Arc::new(Signals::default());
        signals.cancel.cancel();
        signals.stop.cancel();
        let (tx, mut rx) = mpsc::unbounded_channel();
        tx.send(7).unwrap();
        let mut work = pin!(async { "done" });
        let mut watch = Watch::new(Some(signals), First::Messages).and_stop();
        assert!(matches!(
            watch.next(work.as_mut(), Some(&mut rx)).await,
            Next::Aborted
        ));
    }

    #[tokio::test]
    async fn a_closed_channel_leaves_the_work_to_end() {
        let (tx, mut rx) = mpsc::unbounded_channel::<u8>();
        drop(tx);
        let mut work = pin!(async { "done" });
        let mut watch = Watch::new(None, First::Messages);
        assert!(matches!(
            watch.next(work.as_mut(), Some(&mut rx)).await,
            Next::Done("done")
        ));
    }

    #[tokio::test]
    async fn until_gives_up_on_stop() {
        let signals = Arc::new(Signals::default());
        signals.stop.cancel();
        let mut watch = Watch::new(Some(signals), First::Work).and_stop();
        assert_eq!(
            watch.until(pin!(std::future::pending::<()>())).await,
            Err(Signal::Stopped)
        );
    }

    #[tokio::test]
    async fn an_abort_while_the_work_is_pending_wakes_the_wait() {
        let signals = Arc::new(Signals::default());
        let mut watch = Watch::new(Some(Arc::clone(&signals)), First::Work);
        let abort = async {
            tokio::task::yield_now().await;
            signals.cancel.cancel();
        };
        let mut work = pin!(std::future::pending::<()>());
        let (waited, ()) = tokio::join!(watch.until(work.as_mut()), abort);
        assert_eq!(waited, Err(Signal::Aborted));
    }

    #[tokio::test]
    async fn work_ready_at_once_never_registers_with_the_signals() {
        let signals = Arc::new(Signals::default());
        let mut watch = Watch::new(Some(signals), First::Messages).and_stop();
        assert_eq!(watch.until(pin!(async { 3 })).await, Ok(3));
        assert!(watch.cancelled.is_none() && watch.stopped.is_none());
    }

    #[tokio::test]
    async fn a_stop_does_not_end_a_wait_that_only_gives_up_on_abort() {
        let signals = Arc::new(Signals::default());
        signals.stop.cancel();
        let mut watch = Watch::new(Some(signals), First::Work);
        let mut polls = 0;
        let work = std::future::poll_fn(|cx| {
            polls += 1;
            if polls < 3 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready("done")
        });
        assert_eq!(watch.until(pin!(work)).await, Ok("done"));
    }
}

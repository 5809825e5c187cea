//! `RunHandle`: control of a run driven by its own task, and the follow-ups queued on it
//! (`QueuedFollowUp`), started when the run ends.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Mutex;

use std::sync::Arc;

use rein_run::{BoxFuture, Run, RunId};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::ConversationError;
use crate::error::EngineError;
use crate::error::NarrowingError;
use crate::events::{Published, RunEvents};
use crate::narrow::PolicyNarrowing;
use crate::spec::FollowUp;

/// What a handle sends to its run.
#[derive(Debug)]
pub(crate) enum Control {
    Steer(String),
    Interrupt,
    /// Narrow the run's policy at the next step; the reply says whether it was.
    Narrow(PolicyNarrowing, oneshot::Sender<Result<(), NarrowingError>>),
}

/// The run's end of its handle: control messages, the abort signal, the event channel
/// (none for a sub-run of a run without subscribers).
#[derive(Debug)]
pub(crate) struct Controls {
    pub(crate) rx: mpsc::UnboundedReceiver<Control>,
    pub(crate) cancel: CancellationToken,
    /// A stop: see [`RunHandle::stop`].
    pub(crate) stop: CancellationToken,
    pub(crate) events: Option<broadcast::Sender<Published>>,
}

/// A run in progress, from [`Engine::start`](crate::Engine::start).
///
/// Await it (or call [`RunHandle::wait`]) for the final [`Run`]. Dropping the handle does not
/// stop the run.
#[derive(Debug)]
#[must_use = "a run handle does nothing unless awaited or used to control the run"]
pub struct RunHandle {
    id: RunId,
    control: mpsc::UnboundedSender<Control>,
    cancel: CancellationToken,
    stop: CancellationToken,
    events: broadcast::Sender<Published>,
    first: Mutex<Option<broadcast::Receiver<Published>>>,
    task: JoinHandle<Result<Run, EngineError>>,
    /// Follow-ups queued on the run, started when it ends.
    pub(crate) queue: FollowUpQueue,
}

impl RunHandle {
    pub(crate) fn new(
        id: RunId,
        control: mpsc::UnboundedSender<Control>,
        [cancel, stop]: [CancellationToken; 2],
        events: broadcast::Sender<Published>,
        first: broadcast::Receiver<Published>,
        task: JoinHandle<Result<Run, EngineError>>,
        queue: FollowUpQueue,
    ) -> Self {
        Self {
            id,
            control,
            cancel,
            stop,
            events,
            first: Mutex::new(Some(first)),
            task,
            queue,
        }
    }

    /// The run's id.
    #[must_use]
    pub const fn id(&self) -> &RunId {
        &self.id
    }

    /// Stops the run gracefully: no further tool calls; the planner gets one more step to
    /// finish or fail, then the run is left `interrupted` (resume continues it).
    pub fn interrupt(&self) {
        self.control().interrupt();
    }

    /// Stops the run now: in-flight tool and planner futures are dropped and the run fails
    /// as aborted.
    pub fn abort(&self) {
        self.control().abort();
    }

    /// Stops the run without a wrap-up step (what `rein run` does on Ctrl-C): a model call
    /// in flight is cancelled at once and charged at its declared worst case (its outcome
    /// is unknown, as after a crash), a tool call in progress finishes and is recorded,
    /// nothing new starts — no model call, no tool call, no further member of a sequence —
    /// and the run is left `interrupted`, for [`Engine::resume`](crate::Engine::resume).
    /// [`RunHandle::interrupt`] instead gives the planner one more step to finish or fail.
    pub fn stop(&self) {
        self.control().stop();
    }

    /// Adds a note for the planner, seen as evidence before its next decision. Steering is
    /// advice: it never approves a call or widens a policy.
    pub fn steer(&self, note: impl Into<String>) {
        self.control().steer(note);
    }

    /// Queues a follow-up of this run: the user's next message, delivered when the run
    /// ends. Then a new run starts as [`Engine::follow_up`](crate::Engine::follow_up)
    /// starts it (continuing this one, its planner seeing the conversation); several queued
    /// follow-ups start one after the other, each continuing the one before. Queued after
    /// the run ended, it starts at once. Await the returned [`QueuedFollowUp`] for the
    /// follow-up's handle; a run that stops without ending (paused, interrupted) refuses
    /// its follow-ups with [`ConversationError::NotFinished`](crate::ConversationError::NotFinished).
    ///
    /// Unlike [`steer`](Self::steer), the message does not reach this run's planner: it is
    /// the next run's goal.
    pub fn follow_up(&self, message: impl Into<FollowUp>) -> QueuedFollowUp {
        let (reply, answer) = oneshot::channel();
        self.queue.push(&self.id, message.into(), reply);
        QueuedFollowUp {
            reply: answer,
            run: self.id.clone(),
        }
    }

    /// Narrows the run's policy at its next step (see [`PolicyNarrowing`]): recorded in the
    /// ledger as `policy_narrowed` before it takes effect, and kept across restarts.
    ///
    /// # Errors
    /// [`EngineError::Narrowing`] naming what the request would widen (nothing is
    /// recorded); [`EngineError::NotNarrowed`] when the run stopped (ended, paused,
    /// interrupted) before its next step — narrow it with
    /// [`Engine::narrow`](crate::Engine::narrow) then.
    pub async fn narrow(&self, narrowing: PolicyNarrowing) -> Result<(), EngineError> {
        self.control().narrow(narrowing).await
    }

    /// A cloneable remote for this run, to interrupt, abort or steer it from elsewhere —
    /// a signal handler, say — while the handle itself is being awaited.
    ///
    /// ```no_run
    /// # async fn f(engine: rein_engine::Engine) -> Result<(), rein_engine::EngineError> {
    /// let handle = engine.start("Watch the queue").await?;
    /// let control = handle.control();
    /// tokio::spawn(async move {
    ///     // … wait for a signal, a deadline, an operator …
    ///     control.interrupt(); // graceful: the run can be resumed later
    /// });
    /// let run = handle.await?;
    /// # let _ = run; Ok(()) }
    /// ```
    pub fn control(&self) -> RunControl {
        RunControl {
            id: self.id.clone(),
            control: self.control.clone(),
            cancel: self.cancel.clone(),
            stop: self.stop.clone(),
        }
    }

    /// Subscribes to the run's events. The first subscription sees every event from the
    /// start (the handle keeps the channel's first receiver until then: what the run sent
    /// waits in its ring, which holds the last `event_capacity` items, the oldest counted
    /// as [`RunEvent::Missed`](crate::RunEvent::Missed) once it wraps); later ones see
    /// events from the moment they subscribe. Until somebody reads, the run only shares
    /// each entry's JSON line with the ring: no event is built for it.
    pub fn subscribe(&self) -> RunEvents {
        let first = self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        RunEvents::new(first.unwrap_or_else(|| self.events.subscribe()))
    }

    /// Waits for the run to end, pause or stop, and returns it.
    ///
    /// # Errors
    /// [`EngineError`] when the engine could not drive the run (a store failed, …).
    pub async fn wait(self) -> Result<Run, EngineError> {
        let id = self.id;
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(EngineError::TaskFailed {
                id,
                source: Box::new(e),
            }),
        }
    }
}

/// Interrupts, aborts or steers a run from anywhere; from [`RunHandle::control`]. Sending to
/// a run that has ended does nothing.
#[derive(Debug, Clone)]
pub struct RunControl {
    id: RunId,
    control: mpsc::UnboundedSender<Control>,
    cancel: CancellationToken,
    stop: CancellationToken,
}

impl RunControl {
    /// As [`RunHandle::interrupt`].
    pub fn interrupt(&self) {
        let _ = self.control.send(Control::Interrupt);
    }

    /// As [`RunHandle::abort`].
    pub fn abort(&self) {
        self.cancel.cancel();
    }

    /// As [`RunHandle::stop`].
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// As [`RunHandle::steer`].
    pub fn steer(&self, note: impl Into<String>) {
        let _ = self.control.send(Control::Steer(note.into()));
    }

    /// As [`RunHandle::narrow`].
    ///
    /// # Errors
    /// As [`RunHandle::narrow`].
    pub async fn narrow(&self, narrowing: PolicyNarrowing) -> Result<(), EngineError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let not_narrowed = || EngineError::NotNarrowed {
            id: self.id.clone(),
        };
        self.control
            .send(Control::Narrow(narrowing, reply))
            .map_err(|_| not_narrowed())?;
        answer
            .await
            .map_err(|_| not_narrowed())?
            .map_err(|source| EngineError::Narrowing {
                id: self.id.clone(),
                source,
            })
    }
}

impl IntoFuture for RunHandle {
    type Output = Result<Run, EngineError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.wait())
    }
}

/// Starts a follow-up of a run: `Engine::follow_up`, lent to a handle by the engine that
/// spawned its run.
pub(crate) type StartFollowUp = Arc<
    dyn Fn(RunId, FollowUp) -> BoxFuture<'static, Result<RunHandle, EngineError>> + Send + Sync,
>;

/// What a queued follow-up answers: the handle of the follow-up run, once it started.
type Reply = oneshot::Sender<Result<RunHandle, EngineError>>;

/// A follow-up waiting for its run to end.
type Queued = (FollowUp, Reply);

/// The handle's end of a run's follow-up queue.
pub(crate) struct FollowUpQueue {
    tx: mpsc::UnboundedSender<Queued>,
    start: StartFollowUp,
}

impl std::fmt::Debug for FollowUpQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FollowUpQueue")
            .field("closed", &self.tx.is_closed())
            .finish_non_exhaustive()
    }
}

/// The run task's end of its follow-up queue.
#[derive(Debug)]
pub(crate) struct FollowUpInbox {
    rx: mpsc::UnboundedReceiver<Queued>,
}

/// A follow-up queue for a run: the handle's end and the task's. `start` starts one.
pub(crate) fn follow_up_queue(start: StartFollowUp) -> (FollowUpQueue, FollowUpInbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    (FollowUpQueue { tx, start }, FollowUpInbox { rx })
}

impl FollowUpQueue {
    /// Queues `follow_up` on run `run`; when the run has ended already (its task took the
    /// queue), it is started now.
    fn push(&self, run: &RunId, follow_up: FollowUp, reply: Reply) {
        if let Err(mpsc::error::SendError((follow_up, reply))) = self.tx.send((follow_up, reply)) {
            let started = (self.start)(run.clone(), follow_up);
            tokio::spawn(async move {
                let _ = reply.send(started.await);
            });
        }
    }
}

impl FollowUpInbox {
    /// Starts what was queued on run `run`, which has just ended, and closes the queue
    /// (from now on a follow-up starts at once): the first follow-up continues the run;
    /// the others are queued on that follow-up, in order.
    pub(crate) async fn deliver(mut self, start: &StartFollowUp, run: RunId) {
        self.rx.close();
        let mut queued = Vec::new();
        while let Ok(item) = self.rx.try_recv() {
            queued.push(item);
        }
        let mut queued = queued.into_iter();
        let Some((first, reply)) = queued.next() else {
            return;
        };
        match start(run.clone(), first).await {
            Ok(handle) => {
                for (follow_up, next) in queued {
                    handle.queue.push(handle.id(), follow_up, next);
                }
                let _ = reply.send(Ok(handle));
            }
            Err(e) => {
                let _ = reply.send(Err(e));
                for (_, next) in queued {
                    let _ = next.send(Err(EngineError::FollowUpRefused {
                        previous: run.clone(),
                        source: Box::new(ConversationError::QueueBroken { run: run.clone() }),
                    }));
                }
            }
        }
    }
}

/// A follow-up queued with [`RunHandle::follow_up`]: await it (or call
/// [`started`](Self::started)) for the follow-up run's handle, which exists once the run
/// it continues has ended. Dropping it does not cancel the follow-up.
#[derive(Debug)]
#[must_use = "await it for the follow-up run's handle"]
pub struct QueuedFollowUp {
    reply: oneshot::Receiver<Result<RunHandle, EngineError>>,
    run: RunId,
}

impl QueuedFollowUp {
    /// Waits until the run it continues has ended and the follow-up started.
    ///
    /// # Errors
    /// As [`Engine::follow_up`](crate::Engine::follow_up); [`ConversationError::NotFinished`]
    /// when the run stopped without ending (paused, interrupted): resume it, then follow up.
    pub async fn started(self) -> Result<RunHandle, EngineError> {
        let run = self.run;
        self.reply.await.unwrap_or_else(|_| {
            Err(EngineError::FollowUpRefused {
                previous: run.clone(),
                source: Box::new(ConversationError::QueueBroken { run }),
            })
        })
    }
}

impl IntoFuture for QueuedFollowUp {
    type Output = Result<RunHandle, EngineError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.started())
    }
}

//! `RunHandle`: control of a run driven by its own task.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Mutex;

use rein_run::{Run, RunId};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::EngineError;
use crate::error::NarrowingError;
use crate::events::{RunEvent, RunEvents};
use crate::narrow::PolicyNarrowing;

/// What a handle sends to its run.
#[derive(Debug)]
pub(crate) enum Control {
    Steer(String),
    Interrupt,
    /// Narrow the run's policy at the next step; the reply says whether it was.
    Narrow(PolicyNarrowing, oneshot::Sender<Result<(), NarrowingError>>),
}

/// The run's end of its handle: control messages, the abort signal, the event channel.
#[derive(Debug)]
pub(crate) struct Controls {
    pub(crate) rx: mpsc::UnboundedReceiver<Control>,
    pub(crate) cancel: CancellationToken,
    /// A stop: see [`RunHandle::stop`].
    pub(crate) stop: CancellationToken,
    pub(crate) events: broadcast::Sender<RunEvent>,
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
    events: broadcast::Sender<RunEvent>,
    first: Mutex<Option<broadcast::Receiver<RunEvent>>>,
    task: JoinHandle<Result<Run, EngineError>>,
}

impl RunHandle {
    pub(crate) fn new(
        id: RunId,
        control: mpsc::UnboundedSender<Control>,
        [cancel, stop]: [CancellationToken; 2],
        events: broadcast::Sender<RunEvent>,
        first: broadcast::Receiver<RunEvent>,
        task: JoinHandle<Result<Run, EngineError>>,
    ) -> Self {
        Self {
            id,
            control,
            cancel,
            stop,
            events,
            first: Mutex::new(Some(first)),
            task,
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
    /// start; later ones see events from the moment they subscribe.
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

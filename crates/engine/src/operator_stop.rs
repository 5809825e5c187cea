//! Stop requests from outside the process that drives a run (DESIGN.md §7): an operator's
//! abort or interrupt is persisted in the stop request store (`stop_requests`); the engine
//! driving the run honours it at its next step, and a run nobody drives honours it when it
//! is next resumed. The driver records `stop_requested`, naming who asked, before the usual
//! `interrupt` entry and the run's end.

use std::sync::Arc;
use std::time::Duration;

use rein_ledger::EntryKind;
use rein_run::{RunId, RunStatus, StopKind, StopRequest, StopRequestStore};

use crate::builder::EngineBuilder;
use crate::driver::Driver;
use crate::engine::Engine;
use crate::error::EngineError;

impl EngineBuilder {
    /// Keeps stop requests in `store` (default: under the data directory with
    /// [`filesystem`](Self::filesystem), else in memory). Give every process that drives or
    /// stops runs the same store: that is how an operator's abort reaches the run.
    pub fn stop_request_store(mut self, store: impl StopRequestStore) -> Self {
        self.stops.store = Some(Arc::new(store));
        self
    }

    /// How often a run this engine drives on its own task looks for a stop request
    /// (default: every second; at least every millisecond).
    pub fn stop_request_poll(mut self, every: Duration) -> Self {
        self.stops.poll = Some(every);
        self
    }
}

impl Engine {
    /// Asks run `id` to stop, from any process on the same stores: the request is
    /// persisted, and the engine that drives the run honours it at its next step (an
    /// abort also drops the calls in flight); a run nobody drives honours it when it is
    /// next resumed. Either way the ledger records `stop_requested` with `request.by`.
    /// An abort already waiting is never softened into an interrupt.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use rein_engine::Engine;
    /// use rein_planner::{ScriptStep, ScriptedPlanner};
    /// use rein_run::{Decision, FailureKind, RunStatus, State, StopKind, StopRequest, Timestamp};
    ///
    /// let engine = Engine::builder()
    ///     .planner(ScriptedPlanner::new([
    ///         ScriptStep::expect(State::Intake, Decision::ask_human("go on?", ["yes"])),
    ///         ScriptStep::expect(State::Intake, Decision::fail("not reached")),
    ///     ]))
    ///     .build()?;
    /// let run = engine.run("Wait for me").await?; // paused on its question
    /// let abort = StopRequest::new(StopKind::Abort, "alice", "wrong goal", Timestamp::from_unix_millis(0));
    /// engine.request_stop(run.id(), &abort).await?;
    /// let run = engine.resume_with_input(run.id(), "yes").await?;
    /// assert_eq!(run.status(), RunStatus::Failed);
    /// assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`EngineError::RunNotFound`]; [`EngineError::RunFinished`] for a run that ended
    /// (nothing is stored); or the store's error.
    pub async fn request_stop(&self, id: &RunId, request: &StopRequest) -> Result<(), EngineError> {
        let run = self.load_run(id).await?;
        if run.is_finished() {
            return Err(EngineError::RunFinished {
                id: id.clone(),
                status: run.status(),
            });
        }
        self.shared.stops.store.request_boxed(id, request).await?;
        // Stored first: a drive that begins meanwhile finds it when it starts.
        self.shared.signal(id, request.kind);
        Ok(())
    }

    /// The stop request waiting for run `id` in this engine's stop request store: asked,
    /// and not yet honoured.
    ///
    /// # Errors
    /// The store's error.
    pub async fn pending_stop(&self, id: &RunId) -> Result<Option<StopRequest>, EngineError> {
        Ok(self.shared.stops.store.pending_boxed(id).await?)
    }
}

impl Driver {
    /// Starts looking for stop requests while this drive lasts. A run driven without a
    /// handle (`Engine::run`, `resume`, `approve`) gets abort and stop signals of its own
    /// here, so a request reaches it all the same: at once through this engine, at the next
    /// poll from anywhere else.
    pub(crate) fn watch_stop_requests(&mut self) -> crate::stop_requests::Watch {
        let inbox = self
            .inbox
            .get_or_insert_with(crate::driver::Inbox::signals_only);
        self.shared.driving_with(self.rec.id(), &inbox.signals);
        crate::stop_requests::watch(&self.shared.stops, self.rec.id(), &inbox.signals)
    }

    /// Before a drive's first step: a stop request waiting for this run (asked while
    /// nobody drove it) is honoured now.
    pub(crate) async fn honour_waiting_stop(&mut self) -> Result<(), EngineError> {
        if self.rec.status() != RunStatus::Running {
            return Ok(());
        }
        let waiting = self.shared.stops.store.pending_boxed(self.rec.id()).await?;
        match waiting.map(|r| r.kind) {
            Some(StopKind::Abort) => self.abort().await,
            Some(StopKind::Interrupt) => self.halt().await,
            None => Ok(()),
        }
    }

    /// The operator's request behind the abort or stop (`kind`) the driver is about to
    /// record, if one waits: recorded as `stop_requested`, then cleared. A request that
    /// cannot be read leaves the stop unattributed (it still happens).
    pub(crate) async fn operator_stop(
        &mut self,
        kind: StopKind,
    ) -> Result<Option<StopRequest>, EngineError> {
        let store = Arc::clone(&self.shared.stops.store);
        let id = self.rec.id().clone();
        let request = match store.pending_boxed(&id).await {
            Ok(Some(request)) if request.kind == kind => request,
            Ok(_) => return Ok(None),
            Err(e) => {
                tracing::warn!(run_id = %id, error = %e, "cannot read the run's stop request");
                return Ok(None);
            }
        };
        self.rec
            .record(EntryKind::StopRequested {
                request: request.clone(),
            })
            .await?;
        // Only this request: an abort asked since it was read stays, and is honoured next.
        if let Err(e) = store.clear_boxed(&id, &request).await {
            // Recorded already: a resume finds it again, sees the run stopped, and the
            // request is honoured once more at worst (an interrupt of an interrupted run).
            tracing::warn!(run_id = %id, error = %e, "cannot clear the run's stop request");
        }
        Ok(Some(request))
    }
}

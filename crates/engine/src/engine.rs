//! `Engine`: one engine, many concurrent governed runs — the public API over the shared
//! state (`shared`), opening runs (`open`) and driving them (`driver`).

use std::sync::Arc;

use rein_ledger::Ledger;
use rein_policy::PolicySnapshot;
use rein_run::{Run, RunId, ToolSpec};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::builder::EngineBuilder;
use crate::driver::Driver;
use crate::error::BuildError;
use crate::error::EngineError;
use crate::events::Published;
use crate::handle::{Control, Controls, RunHandle, StartFollowUp};
use crate::load::load_ledger;
use crate::narrow::PolicyNarrowing;
use crate::open;
use crate::shared::{ActiveGuard, Shared};
use crate::spec::RunSpec;

/// The governed runtime: holds tools, planner, approver, stores and policies, and drives
/// runs. Cheap to clone; one engine serves many concurrent runs.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rein_engine::Engine;
/// use rein_planner::{ScriptStep, ScriptedPlanner};
/// use rein_run::{Decision, RunStatus, State};
/// use serde_json::json;
///
/// let engine = Engine::builder()
///     .planner(ScriptedPlanner::new([
///         ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
///         ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "nothing to look up")),
///         ScriptStep::expect(State::Decide, Decision::finish("done", json!(42))),
///     ]))
///     .build()?;
/// let run = engine.run("Answer").await?;
/// assert_eq!(run.status(), RunStatus::Completed);
/// engine.ledger(run.id()).await?.verify()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
}

impl Engine {
    /// A builder with in-memory stores, the default policies and no tools.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Runs `spec` to its end (or pause, or interrupt) on the calling task.
    ///
    /// # Errors
    /// [`EngineError`] when the run cannot be driven (a store fails, the id is taken). A run
    /// that fails is returned as `Ok` with status `failed`.
    pub async fn run(&self, spec: impl Into<RunSpec>) -> Result<Run, EngineError> {
        let (driver, _guard) = open::begin(&self.shared, spec.into(), None, None).await?;
        driver.drive().await
    }

    /// Starts `spec` on its own task and returns a handle to interrupt, abort, steer,
    /// subscribe to and await it.
    ///
    /// # Errors
    /// As [`Engine::run`], for what can go wrong before the run's task starts.
    pub async fn start(&self, spec: impl Into<RunSpec>) -> Result<RunHandle, EngineError> {
        self.start_continuing(spec.into(), None).await
    }

    /// [`Engine::start`] of a run that continues an earlier one, when `continues` says so.
    pub(crate) async fn start_continuing(
        &self,
        spec: RunSpec,
        continues: Option<open::Continues>,
    ) -> Result<RunHandle, EngineError> {
        let (controls, handle_parts) = self.controls();
        let (driver, guard) = open::begin(&self.shared, spec, Some(controls), continues).await?;
        Ok(self.spawn(driver, guard, handle_parts))
    }

    /// Records `spec` as a new run (its `run_started` entry and its snapshot) without driving
    /// it, and returns its id: a run for another process to drive with
    /// [`Engine::resume`] on the same stores (a worker), as after a restart. The run's
    /// policy is recorded now, from this engine; its deadline counts from now.
    ///
    /// # Errors
    /// As [`Engine::run`], for what can go wrong before the run's first step.
    pub async fn submit(&self, spec: impl Into<RunSpec>) -> Result<RunId, EngineError> {
        let (mut driver, _guard) = open::begin(&self.shared, spec.into(), None, None).await?;
        // Synced and saved as at a step boundary: the run is on the record for whoever
        // drives it, whatever the store's fsync policy leaves for later within a step.
        driver.rec.persist().await?;
        Ok(driver.run().id().clone())
    }

    /// Continues a persisted run that is not finished and not waiting for an answer: after a
    /// restart, or after an interrupt. A tool call the ledger shows started but not finished
    /// is retried if the tool is idempotent; otherwise the run fails with `InDoubtToolCall`.
    ///
    /// # Errors
    /// [`EngineError::RunNotFound`], [`EngineError::RunFinished`],
    /// [`EngineError::AwaitingAnswer`], [`EngineError::AwaitingApproval`] while a durable
    /// approval waits for its verdict in time (one past its timeout is denied, recorded, and
    /// the run goes on as after any denial), [`EngineError::LedgerBehindSnapshot`] when the
    /// ledger falls short of the head the run's snapshot was saved after (nothing is
    /// written), or a store error — [`EngineError::RunStore`] also when the run store fails
    /// to read the snapshot (nothing is written: the head it holds is not overwritten
    /// unchecked).
    pub async fn resume(&self, id: &RunId) -> Result<Run, EngineError> {
        let (mut driver, _guard) = open::reopen(&self.shared, id, None, None).await?;
        self.rejoin(&mut driver).await?;
        driver.drive().await
    }

    /// Answers a paused run's question and continues it, with the same budget and ledger.
    ///
    /// # Errors
    /// [`EngineError::InvalidAnswer`] for an answer not among the options (nothing is
    /// recorded), or as [`Engine::resume`].
    pub async fn resume_with_input(&self, id: &RunId, answer: &str) -> Result<Run, EngineError> {
        let (mut driver, _guard) = open::reopen(&self.shared, id, Some(answer), None).await?;
        self.rejoin(&mut driver).await?;
        driver.drive().await
    }

    /// As [`Engine::resume`] / [`Engine::resume_with_input`], on the run's own task.
    ///
    /// # Errors
    /// As [`Engine::resume`].
    pub async fn start_resume(
        &self,
        id: &RunId,
        answer: Option<&str>,
    ) -> Result<RunHandle, EngineError> {
        let (controls, handle_parts) = self.controls();
        let (mut driver, guard) = open::reopen(&self.shared, id, answer, Some(controls)).await?;
        self.rejoin(&mut driver).await?;
        Ok(self.spawn(driver, guard, handle_parts))
    }

    /// As [`Engine::start_resume`] with `answer`, recording who gave it: `by` (an
    /// operator's name) is kept in the ledger's `human_input_received` entry.
    ///
    /// # Errors
    /// As [`Engine::resume_with_input`].
    pub async fn start_answer(
        &self,
        id: &RunId,
        answer: &str,
        by: &str,
    ) -> Result<RunHandle, EngineError> {
        let (controls, handle_parts) = self.controls();
        let (driver, guard) =
            open::reopen_by(&self.shared, id, Some(answer), Some(by), Some(controls)).await?;
        Ok(self.spawn(driver, guard, handle_parts))
    }

    /// Gives the verdict on the durable approval run `id` waits for, from any engine on
    /// the same stores (the one that paused the run may be long gone), and drives the run
    /// on to its end or next pause on the calling task. A granted call runs with exactly
    /// the input its recorded decision holds, whose hash the verdict names; a denied one
    /// is rejected like any denial (the run fails, or the planner is told). Build the
    /// verdict from the pending approval with `ApprovalResponse::answer`.
    ///
    /// # Errors
    /// [`EngineError::RunNotFound`] for a wrong id; [`EngineError::RunFinished`] or
    /// [`EngineError::NotAwaitingApproval`] for a run that waits for no approval (a second
    /// verdict included); [`EngineError::ApprovalMismatch`] for a verdict on another call
    /// (nothing is recorded); [`EngineError::ApprovalExpired`] when the approval's timeout
    /// had passed (the call is denied, recorded; the verdict is not applied);
    /// [`EngineError::AlreadyActive`]; or as [`Engine::resume`].
    pub async fn approve(
        &self,
        id: &RunId,
        verdict: &rein_policy::ApprovalResponse,
    ) -> Result<Run, EngineError> {
        let _guard = self.shared.acquire(id)?;
        let mut driver = open::stopped(&self.shared, id).await?;
        self.rejoin(&mut driver).await?;
        crate::durable::approve(driver, verdict).await
    }

    /// The durable approval run `id` waits for, if any. Looking is touching: an approval
    /// whose timeout has passed on the engine's clock is denied now (recorded, and the
    /// call rejected), and `None` is returned.
    ///
    /// # Errors
    /// As [`Engine::ledger`]; [`EngineError::AlreadyActive`] while the run is driven.
    pub async fn pending_approval(
        &self,
        id: &RunId,
    ) -> Result<Option<rein_run::PendingApproval>, EngineError> {
        let _guard = self.shared.acquire(id)?;
        match open::stopped(&self.shared, id).await {
            Ok(driver) => crate::durable::pending(driver).await,
            Err(EngineError::RunFinished { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Narrows the policy of run `id`, which is not being driven now (paused, interrupted,
    /// or stopped by a restart): records `policy_narrowed` and saves the run. From then on,
    /// resume holds the run to the narrowed policy. For a run being driven, use
    /// [`RunHandle::narrow`].
    ///
    /// # Errors
    /// [`EngineError::Narrowing`] naming what the request would widen (nothing is
    /// recorded); [`EngineError::AlreadyActive`] while the run is being driven;
    /// [`EngineError::RunFinished`]; or as [`Engine::ledger`].
    pub async fn narrow(&self, id: &RunId, narrowing: PolicyNarrowing) -> Result<Run, EngineError> {
        open::narrow(&self.shared, id, &narrowing).await
    }

    /// The ledger of run `id`, verified.
    ///
    /// # Errors
    /// [`EngineError::RunNotFound`], [`EngineError::LedgerBehindSnapshot`] when the ledger
    /// falls short of the head the run's snapshot was saved after, or the ledger store's
    /// error (a broken chain included).
    pub async fn ledger(&self, id: &RunId) -> Result<Ledger, EngineError> {
        Ok(load_ledger(&self.shared, id).await?.loaded.ledger)
    }

    /// Run `id` as its ledger describes it (the ledger is the source of truth; the stored
    /// snapshot is a cache for listings).
    ///
    /// # Errors
    /// As [`Engine::ledger`], or [`EngineError::InconsistentLedger`].
    pub async fn load_run(&self, id: &RunId) -> Result<Run, EngineError> {
        let ledger = load_ledger(&self.shared, id).await?.loaded.ledger;
        let (budget, _) = open::recorded_policy(&self.shared, id, &ledger)?;
        Ok(open::rebuild(id, &ledger, budget)?.run)
    }

    /// The ids of every stored run.
    ///
    /// # Errors
    /// The run store's error.
    pub async fn list_runs(&self) -> Result<Vec<RunId>, EngineError> {
        Ok(self.shared.runs.list_boxed().await?)
    }

    /// The specs of the registered tools.
    #[must_use]
    pub fn tools(&self) -> &[ToolSpec] {
        self.shared.tools.specs()
    }

    /// The policy new runs start under.
    #[must_use]
    pub fn policy(&self) -> &PolicySnapshot {
        &self.shared.policy.snapshot
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    // ---- internals ---------------------------------------------------------------------------

    /// A reopened follow-up's planner sees its conversation again, read and verified again.
    async fn rejoin(&self, driver: &mut Driver) -> Result<(), EngineError> {
        let Some(previous) = driver.rec.proj.follows.clone() else {
            return Ok(());
        };
        driver.conversation = crate::conversation::read(&self.shared, &previous)
            .await
            .map_err(|source| EngineError::ConversationBroken {
                run: driver.run().id().clone(),
                source: Box::new(source),
            })?
            .into_iter()
            .map(|r| r.earlier)
            .collect();
        Ok(())
    }

    fn controls(&self) -> (Controls, HandleParts) {
        let (tx, rx) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let stop = CancellationToken::new();
        let (events, first) = broadcast::channel(self.shared.config.event_capacity.max(1));
        let controls = Controls {
            rx,
            cancel: cancel.clone(),
            stop: stop.clone(),
            events: Some(events.clone()),
        };
        (
            controls,
            HandleParts {
                tx,
                cancel,
                stop,
                events,
                first,
            },
        )
    }

    fn spawn(&self, driver: Driver, guard: ActiveGuard, parts: HandleParts) -> RunHandle {
        let id = driver.run().id().clone();
        let engine = self.clone();
        let start: StartFollowUp = Arc::new(move |previous, follow_up| {
            let engine = engine.clone();
            Box::pin(async move { engine.follow_up(&previous, follow_up).await })
        });
        let (queue, queued) = crate::handle::follow_up_queue(Arc::clone(&start));
        let run = id.clone();
        // The drive is boxed where it is made: tokio moves a spawned future and its stage
        // several times (into the task, out of it), and the drive's state is many
        // kilobytes, which each move copied (~140 k instructions a W1 run). Boxed, each
        // move is a pointer.
        let drive = Box::pin(driver.drive());
        let task = tokio::spawn(async move {
            let result = {
                let _guard = guard;
                drive.await
            };
            // The run is over and no longer held: what was queued on it starts now.
            queued.deliver(&start, run).await;
            result
        });
        let tokens = [parts.cancel, parts.stop];
        RunHandle::new(id, parts.tx, tokens, parts.events, parts.first, task, queue)
    }
}

/// The handle's ends of a run's channels.
struct HandleParts {
    tx: mpsc::UnboundedSender<Control>,
    cancel: CancellationToken,
    stop: CancellationToken,
    events: broadcast::Sender<Published>,
    first: broadcast::Receiver<Published>,
}

impl EngineBuilder {
    /// Validates every policy against the tools and builds the engine.
    ///
    /// # Errors
    /// [`BuildError`] naming the first problem: no planner, a duplicate tool, an invalid
    /// input schema, eligibility rules that let side effects run outside `act`, an invalid
    /// budget name, or filesystem stores that cannot be opened.
    pub fn build(self) -> Result<Engine, BuildError> {
        Ok(Engine {
            shared: Arc::new(self.into_shared()?),
        })
    }
}

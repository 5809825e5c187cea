//! `Engine` and `EngineBuilder`: one engine, many concurrent governed runs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rein_artifact::DynArtifactStore;
use rein_ledger::{DynLedgerStore, EntryKind, Ledger, LedgerStoreError};
use rein_policy::{
    ApprovalPolicy, Approver, Budget, DynApprover, Eligibility, EligibilityRules, PolicySnapshot,
    Transitions,
};
use rein_resilience::{ExecutionStack, ResilienceConfig};
use rein_run::{
    BudgetName, DynPlanner, DynRunStore, Planner, Run, RunId, RunStatus, RunStore, RunStoreError,
    State, ToolSpec,
};
use rein_storage::{
    FsConfig, FsStores, FsyncPolicy, MemoryArtifactStore, MemoryLedgerStore, MemoryRunStore,
};
use rein_tool::{SharedTool, Tool};
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, IdGenerator, SystemClock, UuidV7Ids};
use crate::config::{EngineConfig, InDoubtPolicy, OnToolError, OnViolation};
use crate::driver::{Controls, Driver};
use crate::error::{BuildError, EngineError};
use crate::handle::RunHandle;
use crate::project::{Projection, ProjectionError};
use crate::tools::{AllowedSpecs, ToolTable};

/// What to run: a goal, optional variables, optionally a run id of your own.
///
/// ```
/// use rein_engine::RunSpec;
/// use serde_json::json;
/// let spec = RunSpec::new("Summarise the report").with_var("lang", json!("en"));
/// assert_eq!(spec.goal(), "Summarise the report");
/// let from_str: RunSpec = "Say hello".into();
/// # let _ = from_str;
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RunSpec {
    pub(crate) goal: String,
    pub(crate) vars: Map<String, Value>,
    pub(crate) id: Option<RunId>,
}

impl RunSpec {
    /// A run with `goal`.
    pub fn new(goal: impl Into<String>) -> Self {
        Self {
            goal: goal.into(),
            ..Self::default()
        }
    }

    /// Adds a variable the planner can read.
    pub fn with_var(mut self, name: impl Into<String>, value: Value) -> Self {
        self.vars.insert(name.into(), value);
        self
    }

    /// Uses `id` instead of a generated one. Starting a second run with an id that exists
    /// fails with [`EngineError::AlreadyActive`] or [`EngineError::RunExists`]; an id whose
    /// ledger is empty or gone while its run snapshot names a later entry fails with
    /// [`EngineError::LedgerBehindSnapshot`] (that snapshot is the proof of a cut ledger, and
    /// is not overwritten).
    pub fn with_id(mut self, id: RunId) -> Self {
        self.id = Some(id);
        self
    }

    /// The goal.
    #[must_use]
    pub fn goal(&self) -> &str {
        &self.goal
    }
}

impl From<&str> for RunSpec {
    fn from(goal: &str) -> Self {
        Self::new(goal)
    }
}

impl From<String> for RunSpec {
    fn from(goal: String) -> Self {
        Self::new(goal)
    }
}

/// A policy ready to enforce: the snapshot, its JSON, the validated eligibility, and the
/// tools each state allows.
#[derive(Debug)]
pub(crate) struct RunPolicy {
    pub(crate) snapshot: PolicySnapshot,
    /// The snapshot's JSON, shared by every run started under it (see `begin`).
    pub(crate) value: Arc<Value>,
    pub(crate) eligibility: Eligibility,
    pub(crate) allowed: AllowedSpecs,
    /// The budgets that guard the way into `act`: every limit but `violations`, which counts
    /// rejections handed back to the planner, not spending — a planner that used its
    /// allowance of mistakes and then corrected itself may still act.
    pub(crate) act_guard: Budget,
}

impl RunPolicy {
    pub(crate) fn new(snapshot: PolicySnapshot, specs: &[ToolSpec]) -> Result<Self, BuildError> {
        let eligibility = Eligibility::new(snapshot.eligibility.clone(), specs)?;
        let allowed = AllowedSpecs::new(&eligibility, specs);
        let act_guard = snapshot
            .budget
            .limits()
            .iter()
            .filter(|(name, _)| **name != BudgetName::VIOLATIONS)
            .fold(Budget::new(), |guard, (name, limit)| {
                guard.with_limit(name.clone(), *limit)
            });
        Ok(Self {
            value: Arc::new(snapshot.to_value()),
            snapshot,
            eligibility,
            allowed,
            act_guard,
        })
    }
}

/// What every run of an engine shares. Read-only after build, except the set of runs being
/// driven (touched once when a run starts and once when it stops, never per step).
pub(crate) struct Shared {
    pub(crate) tools: ToolTable,
    pub(crate) planner: Arc<dyn DynPlanner>,
    pub(crate) approver: Option<Arc<dyn DynApprover>>,
    pub(crate) runs: Arc<dyn DynRunStore>,
    pub(crate) ledgers: Arc<dyn DynLedgerStore>,
    pub(crate) artifacts: Arc<dyn DynArtifactStore>,
    pub(crate) policy: Arc<RunPolicy>,
    pub(crate) config: EngineConfig,
    pub(crate) resilience: ResilienceConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdGenerator>,
    active: Mutex<HashSet<RunId>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("tools", &self.tools.names())
            .field("policy", &self.policy.snapshot)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Marks a run as being driven; unmarks it when dropped.
pub(crate) struct ActiveGuard {
    shared: Arc<Shared>,
    id: RunId,
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.shared
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.id);
    }
}

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
    shared: Arc<Shared>,
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
        let (driver, _guard) = self.begin(spec.into(), None).await?;
        driver.drive().await
    }

    /// Starts `spec` on its own task and returns a handle to interrupt, abort, steer,
    /// subscribe to and await it.
    ///
    /// # Errors
    /// As [`Engine::run`], for what can go wrong before the run's task starts.
    pub async fn start(&self, spec: impl Into<RunSpec>) -> Result<RunHandle, EngineError> {
        let (controls, handle_parts) = self.controls();
        let (driver, guard) = self.begin(spec.into(), Some(controls)).await?;
        Ok(self.spawn(driver, guard, handle_parts))
    }

    /// Continues a persisted run that is not finished and not waiting for an answer: after a
    /// restart, or after an interrupt. A tool call the ledger shows started but not finished
    /// is retried if the tool is idempotent; otherwise the run fails with `InDoubtToolCall`.
    ///
    /// # Errors
    /// [`EngineError::RunNotFound`], [`EngineError::RunFinished`],
    /// [`EngineError::AwaitingAnswer`], [`EngineError::LedgerBehindSnapshot`] when the
    /// ledger falls short of the head the run's snapshot was saved after (nothing is
    /// written), or a store error — [`EngineError::RunStore`] also when the run store fails
    /// to read the snapshot (nothing is written: the head it holds is not overwritten
    /// unchecked).
    pub async fn resume(&self, id: &RunId) -> Result<Run, EngineError> {
        let (driver, _guard) = self.reopen(id, None, None).await?;
        driver.drive().await
    }

    /// Answers a paused run's question and continues it, with the same budget and ledger.
    ///
    /// # Errors
    /// [`EngineError::InvalidAnswer`] for an answer not among the options (nothing is
    /// recorded), or as [`Engine::resume`].
    pub async fn resume_with_input(&self, id: &RunId, answer: &str) -> Result<Run, EngineError> {
        let (driver, _guard) = self.reopen(id, Some(answer), None).await?;
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
        let (driver, guard) = self.reopen(id, answer, Some(controls)).await?;
        Ok(self.spawn(driver, guard, handle_parts))
    }

    /// The ledger of run `id`, verified.
    ///
    /// # Errors
    /// [`EngineError::RunNotFound`], [`EngineError::LedgerBehindSnapshot`] when the ledger
    /// falls short of the head the run's snapshot was saved after, or the ledger store's
    /// error (a broken chain included).
    pub async fn ledger(&self, id: &RunId) -> Result<Ledger, EngineError> {
        Ok(self.load_ledger(id).await?.loaded.ledger)
    }

    /// Run `id` as its ledger describes it (the ledger is the source of truth; the stored
    /// snapshot is a cache for listings).
    ///
    /// # Errors
    /// As [`Engine::ledger`], or [`EngineError::InconsistentLedger`].
    pub async fn load_run(&self, id: &RunId) -> Result<Run, EngineError> {
        let ledger = self.load_ledger(id).await?.loaded.ledger;
        let policy = self.recorded_policy(id, &ledger)?;
        Ok(rebuild(id, &ledger, &policy)?.run)
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

    fn controls(&self) -> (Controls, HandleParts) {
        let (tx, rx) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let (events, first) = broadcast::channel(self.shared.config.event_capacity.max(1));
        let controls = Controls {
            rx,
            cancel: cancel.clone(),
            events: events.clone(),
        };
        (
            controls,
            HandleParts {
                tx,
                cancel,
                events,
                first,
            },
        )
    }

    fn spawn(&self, driver: Driver, guard: ActiveGuard, parts: HandleParts) -> RunHandle {
        let id = driver.run().id().clone();
        let task = tokio::spawn(async move {
            let _guard = guard;
            driver.drive().await
        });
        RunHandle::new(id, parts.tx, parts.cancel, parts.events, parts.first, task)
    }

    fn acquire(&self, id: &RunId) -> Result<ActiveGuard, EngineError> {
        let mut active = self
            .shared
            .active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !active.insert(id.clone()) {
            return Err(EngineError::AlreadyActive { id: id.clone() });
        }
        Ok(ActiveGuard {
            shared: Arc::clone(&self.shared),
            id: id.clone(),
        })
    }

    async fn begin(
        &self,
        spec: RunSpec,
        controls: Option<Controls>,
    ) -> Result<(Driver, ActiveGuard), EngineError> {
        if let Some(name) = spec
            .vars
            .iter()
            .find_map(|(name, value)| crate::depth::too_deep(value).then(|| name.clone()))
        {
            spec.vars
                .into_iter()
                .for_each(|(_, v)| crate::depth::dispose(v));
            return Err(EngineError::VarTooDeep {
                name,
                limit: crate::depth::MAX_JSON_DEPTH,
            });
        }
        let chosen = spec.id.is_some();
        let id = spec.id.unwrap_or_else(|| self.shared.ids.run_id());
        let guard = self.acquire(&id)?;
        if chosen {
            match self.shared.ledgers.load_boxed(&id).await {
                // An empty ledger is a run whose first entry never became durable.
                Err(LedgerStoreError::NotFound { .. }) => {}
                Ok(loaded) if loaded.ledger.is_empty() => {}
                Ok(_) | Err(_) => return Err(EngineError::RunExists { id }),
            }
            // An id whose ledger is empty or gone, under a snapshot saved after more than the
            // first entry, is a run whose ledger was cut, not a free id: starting afresh would
            // overwrite the one proof of it.
            match self.shared.runs.load_boxed(&id).await {
                Ok(run) => {
                    if let Some(head) = run.ledger_head().filter(|head| head.seq > 1) {
                        return Err(EngineError::LedgerBehindSnapshot { id, head, last: 0 });
                    }
                }
                Err(e @ RunStoreError::Io { .. }) => return Err(EngineError::RunStore(e)),
                // No snapshot, or a corrupt one: it holds no head anyone can use.
                Err(_) => {}
            }
        }
        let policy = Arc::clone(&self.shared.policy);
        let now = self.shared.clock.now();
        let started = EntryKind::RunStarted {
            goal: spec.goal,
            vars: spec.vars,
            policy: Arc::clone(&policy.value),
        };
        let budget = policy.snapshot.budget.clone();
        let proj = Projection::start(id.clone(), &started, now, budget)
            .map_err(|e| inconsistent(&id, 1, &e))?;
        let mut ledger = Ledger::new(id.clone());
        let entry = ledger.append(now, State::Intake, started);
        self.shared.ledgers.append_boxed(entry).await?;
        if let Some(controls) = &controls {
            let _ = controls
                .events
                .send(crate::events::RunEvent::Recorded(std::sync::Arc::new(
                    entry.clone(),
                )));
        }
        let mut driver = Driver::new(Arc::clone(&self.shared), policy, proj, ledger, controls);
        // Saved without a sync: a snapshot anchored at the first entry proves nothing about
        // an empty ledger (a power cut may take the unsynced entry and keep the snapshot),
        // and `load_ledger` takes an empty ledger under it for a run that never started.
        driver.save().await?;
        Ok((driver, guard))
    }

    /// Loads and verifies the ledger of run `id`, and checks it against the run's snapshot:
    /// the ledger must reach the head the snapshot was saved after.
    ///
    /// The snapshot is read first. The engine appends entries before it saves a snapshot,
    /// so a ledger read after the snapshot reaches its head even while the run is being
    /// driven. A snapshot that cannot be read does not stop a load (the ledger is the source
    /// of truth); the check is then skipped, and said so in `unchecked`.
    async fn load_ledger(&self, id: &RunId) -> Result<Loaded, EngineError> {
        let snapshot = self.shared.runs.load_boxed(id).await;
        let loaded = match self.shared.ledgers.load_boxed(id).await {
            Ok(loaded) => Some(loaded),
            Err(LedgerStoreError::NotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let (head, unchecked) = match snapshot {
            Ok(run) => (run.ledger_head(), None),
            Err(RunStoreError::NotFound { .. }) => (None, None),
            Err(e) => (None, Some(e)),
        };
        let last = loaded
            .as_ref()
            .and_then(|l| l.ledger.head())
            .map_or(0, |h| h.seq);
        if let Some(head) = head
            && !loaded.as_ref().is_some_and(|l| l.ledger.reaches(&head))
            // No entry under a snapshot saved after the first one only: `begin` saves that
            // snapshot before the entry is synced, so it proves no more than the ledger.
            && !(last == 0 && head.seq == 1)
        {
            return Err(EngineError::LedgerBehindSnapshot {
                id: id.clone(),
                head,
                last,
            });
        }
        match loaded {
            Some(loaded) if !loaded.ledger.is_empty() => Ok(Loaded { loaded, unchecked }),
            // No ledger, or a file with no entry (the process died writing the first, and
            // the torn line was cut): the run never started.
            _ => Err(EngineError::RunNotFound { id: id.clone() }),
        }
    }

    /// The policy recorded when the run started; the engine's own when they are equal.
    fn recorded_policy(&self, id: &RunId, ledger: &Ledger) -> Result<Arc<RunPolicy>, EngineError> {
        let invalid = |reason: String| EngineError::InvalidRecordedPolicy {
            id: id.clone(),
            reason,
        };
        let Some(EntryKind::RunStarted { policy, .. }) =
            ledger.entries().first().map(|e| e.event())
        else {
            return Err(invalid("the ledger does not start with run_started".into()));
        };
        if Arc::ptr_eq(policy, &self.shared.policy.value) || **policy == *self.shared.policy.value {
            return Ok(Arc::clone(&self.shared.policy));
        }
        let snapshot = PolicySnapshot::from_value(policy).map_err(|e| invalid(e.to_string()))?;
        let policy = RunPolicy::new(snapshot, self.shared.tools.specs())
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Arc::new(policy))
    }

    async fn reopen(
        &self,
        id: &RunId,
        answer: Option<&str>,
        controls: Option<Controls>,
    ) -> Result<(Driver, ActiveGuard), EngineError> {
        let guard = self.acquire(id)?;
        let Loaded { loaded, unchecked } = self.load_ledger(id).await?;
        // A snapshot the store failed to read (an I/O error; a corrupt file holds no head
        // anyone can use) may name a head this ledger does not reach, and resuming would
        // overwrite it with one that it does. Refuse, before anything is written.
        let unchecked = match unchecked {
            Some(e @ RunStoreError::Io { .. }) => return Err(EngineError::RunStore(e)),
            other => other,
        };
        let policy = self.recorded_policy(id, &loaded.ledger)?;
        let mut proj = rebuild(id, &loaded.ledger, &policy)?;
        let run = &proj.run;
        if run.is_finished() {
            return Err(EngineError::RunFinished {
                id: id.clone(),
                status: run.status(),
            });
        }
        match (
            run.pending_question()
                .filter(|_| run.status() == RunStatus::Paused),
            answer,
        ) {
            (Some(pending), None) => {
                return Err(EngineError::AwaitingAnswer {
                    id: id.clone(),
                    question: pending.question.clone(),
                    options: pending.options.clone(),
                });
            }
            (_, Some(answer)) => {
                // Check the answer on a copy first, so a wrong answer records nothing.
                let mut probe = run.clone();
                if let Err(source) = probe.answer(answer, self.shared.clock.now()) {
                    return Err(EngineError::InvalidAnswer {
                        id: id.clone(),
                        source,
                    });
                }
            }
            (None, None) => {}
        }
        let open = proj.open.take();
        let unsettled = proj.unsettled.take();
        let mut note = match (&loaded.torn_tail, answer) {
            (Some(torn), _) => format!(
                "resumed after a restart; a torn final ledger line ({} bytes at line {}) was cut",
                torn.bytes, torn.line
            ),
            (None, Some(_)) => "resumed with a human's answer".to_owned(),
            (None, None) => "resumed".to_owned(),
        };
        if let Some(e) = unchecked {
            note.push_str(&format!(
                "; the run snapshot could not be read, so the ledger was not checked against \
                 the head it records ({e})"
            ));
        }
        let mut driver = Driver::new(
            Arc::clone(&self.shared),
            policy,
            proj,
            loaded.ledger,
            controls,
        );
        if let Some(answer) = answer {
            driver
                .record(EntryKind::HumanInputReceived {
                    answer: answer.to_owned(),
                })
                .await?;
        }
        driver.record(EntryKind::RunResumed { note }).await?;
        if let Some(open) = open {
            let retry_all = self.shared.config.in_doubt == InDoubtPolicy::RetryAll;
            driver.settle_in_doubt(open, retry_all).await?;
        } else if let Some(step) = unsettled
            && driver.run().status() == RunStatus::Running
        {
            // The process stopped inside a step: finish it before asking for the next one.
            driver.complete_step(step).await?;
        }
        driver.persist().await?;
        Ok((driver, guard))
    }
}

/// A ledger loaded for a run, and why it could not be checked against the run's snapshot,
/// if it could not.
struct Loaded {
    loaded: rein_ledger::LoadedLedger,
    unchecked: Option<RunStoreError>,
}

struct HandleParts {
    tx: mpsc::UnboundedSender<crate::driver::Control>,
    cancel: CancellationToken,
    events: broadcast::Sender<crate::events::RunEvent>,
    first: broadcast::Receiver<crate::events::RunEvent>,
}

fn inconsistent(id: &RunId, seq: u64, e: &ProjectionError) -> EngineError {
    EngineError::InconsistentLedger {
        id: id.clone(),
        seq,
        reason: e.reason.clone(),
    }
}

/// The run as `ledger` describes it, anchored to the ledger's last entry.
fn rebuild(id: &RunId, ledger: &Ledger, policy: &RunPolicy) -> Result<Projection, EngineError> {
    let mut proj = Projection::rebuild(ledger.entries(), |_| Ok(policy.snapshot.budget.clone()))
        .map_err(|(seq, e)| inconsistent(id, seq, &e))?;
    if let Some(head) = ledger.head() {
        // A run rebuilt from scratch has no head yet: anchoring it cannot fail.
        proj.run
            .anchor(head)
            .map_err(|e| inconsistent(id, head.seq, &ProjectionError::from(e)))?;
    }
    Ok(proj)
}

/// Builds an [`Engine`]. Every option has a default: in-memory stores, the default policies
/// (DESIGN.md §2), no approver (approvals fail closed), 100 steps at most.
#[must_use]
pub struct EngineBuilder {
    tools: Vec<SharedTool>,
    planner: Option<Arc<dyn DynPlanner>>,
    approver: Option<Arc<dyn DynApprover>>,
    runs: Option<Arc<dyn DynRunStore>>,
    ledgers: Option<Arc<dyn DynLedgerStore>>,
    artifacts: Option<Arc<dyn DynArtifactStore>>,
    filesystem: Option<(PathBuf, FsyncPolicy)>,
    policy: PolicySnapshot,
    resilience: ResilienceConfig,
    layers: Vec<Box<dyn FnOnce(ExecutionStack) -> ExecutionStack + Send>>,
    config: EngineConfig,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    deferred: Option<BuildError>,
}

impl Default for EngineBuilder {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            planner: None,
            approver: None,
            runs: None,
            ledgers: None,
            artifacts: None,
            filesystem: None,
            policy: PolicySnapshot::default(),
            resilience: ResilienceConfig::default(),
            layers: Vec::new(),
            config: EngineConfig::default(),
            clock: Arc::new(SystemClock),
            ids: Arc::new(UuidV7Ids),
            deferred: None,
        }
    }
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.spec().name().to_string())
                    .collect::<Vec<_>>(),
            )
            .field("policy", &self.policy)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl EngineBuilder {
    /// Registers a tool.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Registers a tool already shared.
    pub fn shared_tool(mut self, tool: SharedTool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Sets the planner.
    pub fn planner(mut self, planner: impl Planner) -> Self {
        self.planner = Some(Arc::new(planner));
        self
    }

    /// Sets a planner already shared.
    pub fn shared_planner(mut self, planner: Arc<dyn DynPlanner>) -> Self {
        self.planner = Some(planner);
        self
    }

    /// Sets the approver. Without one, every call that needs approval is denied.
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Sets an approver already shared.
    pub fn shared_approver(mut self, approver: Arc<dyn DynApprover>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Stores run snapshots in `store` (default: in memory).
    pub fn run_store(mut self, store: impl RunStore) -> Self {
        self.runs = Some(Arc::new(store));
        self
    }

    /// Stores ledgers in `store` (default: in memory).
    pub fn ledger_store(mut self, store: impl rein_ledger::LedgerStore) -> Self {
        self.ledgers = Some(Arc::new(store));
        self
    }

    /// Stores artifacts in `store` (default: in memory).
    pub fn artifact_store(mut self, store: impl rein_artifact::ArtifactStore) -> Self {
        self.artifacts = Some(Arc::new(store));
        self
    }

    /// Keeps runs, ledgers and artifacts on the filesystem under `dir`, fsyncing the ledger
    /// at every step (stores set one by one take precedence).
    pub fn filesystem(self, dir: impl Into<PathBuf>) -> Self {
        self.filesystem_with(dir, FsyncPolicy::EveryStep)
    }

    /// As [`EngineBuilder::filesystem`], with another fsync policy.
    pub fn filesystem_with(mut self, dir: impl Into<PathBuf>, fsync: FsyncPolicy) -> Self {
        self.filesystem = Some((dir.into(), fsync));
        self
    }

    /// Sets the limit of budget `name` (`tool_calls`, `steps`, `tokens`, or your own).
    pub fn budget(mut self, name: &str, limit: u64) -> Self {
        match BudgetName::new(name) {
            Ok(name) => {
                self.policy.budget = std::mem::take(&mut self.policy.budget).with_limit(name, limit)
            }
            Err(e) => self.defer(BuildError::InvalidOption {
                option: "budget",
                reason: e.to_string(),
            }),
        }
        self
    }

    /// Sets the eligibility rules (default: derived from annotations).
    pub fn eligibility(mut self, rules: EligibilityRules) -> Self {
        self.policy.eligibility = rules;
        self
    }

    /// Sets the transition table (default: DESIGN.md §2's).
    pub fn transitions(mut self, transitions: Transitions) -> Self {
        self.policy.transitions = transitions;
        self
    }

    /// Sets the approval policy (default: destructive tools, and risk high or above).
    pub fn approvals(mut self, policy: ApprovalPolicy) -> Self {
        self.policy.approvals = policy;
        self
    }

    /// Sets the most decisions a run may take (default 100).
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.policy.max_steps = steps;
        self
    }

    /// Sets every policy at once.
    pub fn policy(mut self, policy: PolicySnapshot) -> Self {
        self.policy = policy;
        self
    }

    /// Sets how tools run: timeouts, bulkheads, retries, circuit breakers.
    pub fn resilience(mut self, config: ResilienceConfig) -> Self {
        self.resilience = config;
        self
    }

    /// Adds your own tower layer around every tool, inside the policy layers (it cannot
    /// bypass them).
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<rein_resilience::ToolService> + Send + Sync + 'static,
        L::Service: tower::Service<
                rein_resilience::ToolCall,
                Response = rein_tool::ToolOutput,
                Error = rein_tool::ToolError,
            > + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as tower::Service<rein_resilience::ToolCall>>::Future: Send + 'static,
    {
        self.layers.push(Box::new(move |stack: ExecutionStack| {
            stack.with_layer(layer)
        }));
        self
    }

    /// What happens to rejected decisions (default: the run fails).
    pub fn on_violation(mut self, on_violation: OnViolation) -> Self {
        self.config.on_violation = on_violation;
        if let OnViolation::HandBack { limit } = on_violation {
            self.policy.budget =
                std::mem::take(&mut self.policy.budget).with_limit(BudgetName::VIOLATIONS, limit);
        }
        self
    }

    /// Offers `skills` to the planner in every plan request (see `rein::tools::load_skills`
    /// and the `skill.load` tool). Skills add knowledge, never tools or permissions.
    pub fn skills(mut self, skills: impl IntoIterator<Item = rein_run::Skill>) -> Self {
        self.config.skills.extend(skills);
        self
    }

    /// What happens when a tool call fails (default: the run fails).
    pub fn on_tool_error(mut self, on_tool_error: OnToolError) -> Self {
        self.config.on_tool_error = on_tool_error;
        self
    }

    /// What resume does with a call left in doubt by a crash.
    pub fn in_doubt(mut self, policy: InDoubtPolicy) -> Self {
        self.config.in_doubt = policy;
        self
    }

    /// Tool outputs larger than `bytes` of JSON go to the artifact store.
    pub fn inline_output_limit(mut self, bytes: usize) -> Self {
        self.config.inline_output_limit = bytes;
        self
    }

    /// How many events a run buffers for slow subscribers.
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.config.event_capacity = capacity;
        self
    }

    /// Sets the clock (default: the system clock).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Sets the run id generator (default: UUID v7).
    pub fn ids(mut self, ids: impl IdGenerator) -> Self {
        self.ids = Arc::new(ids);
        self
    }

    fn defer(&mut self, error: BuildError) {
        self.deferred.get_or_insert(error);
    }

    /// Validates every policy against the tools and builds the engine.
    ///
    /// # Errors
    /// [`BuildError`] naming the first problem: no planner, a duplicate tool, an invalid
    /// input schema, eligibility rules that let side effects run outside `act`, an invalid
    /// budget name, or filesystem stores that cannot be opened.
    pub fn build(self) -> Result<Engine, BuildError> {
        if let Some(error) = self.deferred {
            return Err(error);
        }
        let planner = self.planner.ok_or(BuildError::NoPlanner)?;
        let mut stack = ExecutionStack::new(self.resilience.clone());
        for layer in self.layers {
            stack = layer(stack);
        }
        let tools = ToolTable::build(&self.tools, &stack)?;
        let policy = Arc::new(RunPolicy::new(self.policy, tools.specs())?);
        let fs = match &self.filesystem {
            None => None,
            Some((dir, fsync)) => Some(
                FsStores::open_with(dir, FsConfig::default().with_fsync(*fsync))
                    .map_err(|e| BuildError::Stores(e.to_string()))?,
            ),
        };
        let runs: Arc<dyn DynRunStore> = match (self.runs, &fs) {
            (Some(store), _) => store,
            (None, Some(fs)) => Arc::new(fs.runs().clone()),
            (None, None) => Arc::new(MemoryRunStore::new()),
        };
        let ledgers: Arc<dyn DynLedgerStore> = match (self.ledgers, &fs) {
            (Some(store), _) => store,
            (None, Some(fs)) => Arc::new(fs.ledgers().clone()),
            (None, None) => Arc::new(MemoryLedgerStore::new()),
        };
        let artifacts: Arc<dyn DynArtifactStore> = match (self.artifacts, &fs) {
            (Some(store), _) => store,
            (None, Some(fs)) => Arc::new(fs.artifacts().clone()),
            (None, None) => Arc::new(MemoryArtifactStore::new()),
        };
        Ok(Engine {
            shared: Arc::new(Shared {
                tools,
                planner,
                approver: self.approver,
                runs,
                ledgers,
                artifacts,
                policy,
                config: self.config,
                resilience: self.resilience,
                clock: self.clock,
                ids: self.ids,
                active: Mutex::new(HashSet::new()),
            }),
        })
    }
}

impl From<RunStoreError> for BuildError {
    fn from(e: RunStoreError) -> Self {
        Self::Stores(e.to_string())
    }
}

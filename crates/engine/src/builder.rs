//! `EngineBuilder`: every option of an engine, validated once when it is built.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rein_artifact::DynArtifactStore;
use rein_ledger::DynLedgerStore;
use rein_policy::{
    ApprovalPolicy, Approver, DynApprover, EligibilityRules, PolicySnapshot, Transitions,
};
use rein_resilience::{ExecutionStack, ResilienceConfig};
use rein_run::{BudgetName, Delegation, DynPlanner, DynRunStore, Planner, RunStore};
use rein_storage::{
    FsConfig, FsStores, FsyncPolicy, MemoryArtifactStore, MemoryLedgerStore, MemoryRunStore,
};
use rein_tool::{Registry, SharedTool, Tool};

use crate::clock::{Clock, IdGenerator, SystemClock, UuidV7Ids};
use crate::config::{EngineConfig, InDoubtPolicy, OnToolError, OnViolation};
use crate::error::BuildError;
use crate::shared::{RunPolicy, Shared};
use crate::tools::ToolTable;

/// Builds an [`Engine`](crate::Engine). Every option has a default: in-memory stores, the default policies
/// (DESIGN.md §2), no approver (approvals fail closed), 100 steps at most.
#[must_use]
pub struct EngineBuilder {
    tools: Vec<SharedTool>,
    planner: Option<Arc<dyn DynPlanner>>,
    planners: crate::shared::Planners,
    approver: Option<Arc<dyn DynApprover>>,
    hooks: Vec<crate::hook::HookSpec>,
    runs: Option<Arc<dyn DynRunStore>>,
    ledgers: Option<Arc<dyn DynLedgerStore>>,
    artifacts: Option<Arc<dyn DynArtifactStore>>,
    filesystem: Option<(PathBuf, FsyncPolicy)>,
    policy: PolicySnapshot,
    resilience: ResilienceConfig,
    layers: Vec<Box<dyn FnOnce(ExecutionStack) -> ExecutionStack + Send>>,
    config: EngineConfig,
    /// Whether the configuration said what rejected decisions and failed tool calls do;
    /// where it did not, the planner's [`Planner::corrects_itself`] decides at build.
    said: Said,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    deferred: Option<BuildError>,
    /// Where stop requests are kept and how often a driven run looks (`stop_requests`).
    pub(crate) stops: crate::stop_requests::StopConfig,
}

/// Which of the planner-dependent defaults the configuration set explicitly.
#[derive(Debug, Clone, Copy, Default)]
struct Said {
    on_violation: bool,
    on_tool_error: bool,
}

impl Default for EngineBuilder {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            planner: None,
            planners: crate::shared::Planners::new(),
            approver: None,
            hooks: Vec::new(),
            runs: None,
            ledgers: None,
            artifacts: None,
            filesystem: None,
            policy: PolicySnapshot::default(),
            resilience: ResilienceConfig::default(),
            layers: Vec::new(),
            config: EngineConfig::default(),
            said: Said::default(),
            clock: Arc::new(SystemClock),
            ids: Arc::new(UuidV7Ids),
            deferred: None,
            stops: crate::stop_requests::StopConfig::default(),
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

    /// Registers every tool a catalogue lists (a [`Registry`], such as
    /// `rein::store::MemoryRegistry` or a team's own), in the order of its `specs`. The engine
    /// takes the tools at build time: it compiles each schema and builds each execution
    /// stack once, as the `Registry` contract expects. A name registered twice, here or
    /// with [`tool`](Self::tool), is a [`BuildError::DuplicateTool`].
    ///
    /// # Errors (at [`build`](Self::build))
    /// [`BuildError::RegistryBroken`] when the registry lists a tool its `get` does not
    /// return.
    pub fn registry(mut self, registry: &dyn Registry) -> Self {
        for spec in registry.specs() {
            match registry.get(spec.name().as_str()) {
                Some(tool) => self.tools.push(tool),
                None => {
                    self.deferred.get_or_insert(BuildError::RegistryBroken {
                        tool: spec.name().clone(),
                    });
                }
            }
        }
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

    /// Adds a hook (see the [`hook`](crate::hook) module): asked after every hook added
    /// before it at the same point. Its name must be unique; a run records the hooks it
    /// starts under, and a resume without one of them refuses.
    ///
    /// # Errors (at [`build`](Self::build))
    /// [`BuildError::InvalidOption`] for an empty name, a name used twice, or no points.
    pub fn hook(mut self, hook: crate::hook::HookSpec) -> Self {
        self.hooks.push(hook);
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
                self.policy.budget =
                    std::mem::take(&mut self.policy.budget).with_limit(name, limit);
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

    /// Gives every run a deadline (a `time` budget on the engine's clock): no step starts
    /// after it, a tool call in flight gets at most what remains, and the run fails as
    /// `deadline_exceeded`. Part of the policy a run records. The build fails for a zero
    /// deadline or one of more than a year.
    pub fn deadline(mut self, deadline: rein_policy::Deadline) -> Self {
        self.policy.deadline = Some(deadline);
        self
    }

    /// Sets every policy at once. A snapshot that leaves what rejected decisions and failed
    /// tool calls do at the default (`FailRun`) still gets the planner's default (see
    /// [`on_violation`](Self::on_violation)); to fail runs under a planner that corrects
    /// itself, say so with [`on_violation`](Self::on_violation) and
    /// [`on_tool_error`](Self::on_tool_error).
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

    /// What happens to rejected decisions. Part of the policy a run records when it starts:
    /// a run resumed by an engine configured otherwise keeps its own.
    ///
    /// Default: the planner's choice ([`Planner::corrects_itself`]): handed back to a
    /// planner that corrects itself (an LLM planner), at most the `violations` budget's
    /// limit times ([`DEFAULT_HAND_BACK_LIMIT`](crate::DEFAULT_HAND_BACK_LIMIT) without
    /// one); otherwise the run fails.
    pub fn on_violation(mut self, on_violation: OnViolation) -> Self {
        self.said.on_violation = true;
        self.policy.on_violation = on_violation;
        if let OnViolation::HandBack { limit } = on_violation {
            self.policy.budget =
                std::mem::take(&mut self.policy.budget).with_limit(BudgetName::VIOLATIONS, limit);
        }
        self
    }

    /// Sets the JSON Schema a `finish`'s result must match. A result that does not match is
    /// a rejected decision (naming the first failing path): handed back to the planner or
    /// failing the run, as [`on_violation`](Self::on_violation) says, and within the
    /// `violations` budget. Part of the policy a run records when it starts. The build
    /// fails with [`BuildError::InvalidResultSchema`] for a schema that does not compile.
    ///
    /// ```
    /// use rein_engine::Engine;
    /// use rein_planner::ScriptedPlanner;
    ///
    /// let engine = Engine::builder()
    ///     .planner(ScriptedPlanner::new([]))
    ///     .result_schema(serde_json::json!({"type": "object", "required": ["answer"]}))
    ///     .build()?;
    /// assert!(engine.policy().result_schema.is_some());
    /// # Ok::<(), rein_engine::BuildError>(())
    /// ```
    pub fn result_schema(mut self, schema: serde_json::Value) -> Self {
        self.policy.result_schema = Some(schema);
        self
    }

    /// Offers `skills` to the planner in every plan request (see `rein::tools::load_skills`
    /// and the `skill.load` tool). Skills add knowledge, never tools or permissions.
    pub fn skills(mut self, skills: impl IntoIterator<Item = rein_run::Skill>) -> Self {
        self.config.skills.extend(skills);
        self
    }

    /// Links each run's trace to the trace context an exporter gives
    /// (`rein::otel::Telemetry::trace_context`): every drive of a run records its span's
    /// context in the ledger (`trace_started`), and a resumed run's span links to the drive
    /// before it. Without one nothing is recorded.
    pub fn trace_context(mut self, context: Arc<dyn rein_run::telemetry::TraceContext>) -> Self {
        self.config.trace_context = Some(context);
        self
    }

    /// What happens when a tool call fails after the resilience stack gave up. Part of the
    /// policy a run records when it starts, like [`on_violation`](Self::on_violation).
    ///
    /// Default: the planner's choice ([`Planner::corrects_itself`]): handed back to a
    /// planner that corrects itself (an LLM planner); otherwise the run fails.
    ///
    /// ```
    /// use rein_engine::{Engine, OnToolError};
    /// use rein_planner::ScriptedPlanner;
    ///
    /// // A script cannot correct itself: a failed call fails the run unless told otherwise.
    /// let engine = Engine::builder().planner(ScriptedPlanner::new([])).build()?;
    /// assert_eq!(engine.policy().on_tool_error, OnToolError::FailRun);
    /// let engine = Engine::builder()
    ///     .planner(ScriptedPlanner::new([]))
    ///     .on_tool_error(OnToolError::HandBack)
    ///     .build()?;
    /// assert_eq!(engine.policy().on_tool_error, OnToolError::HandBack);
    /// # Ok::<(), rein_engine::BuildError>(())
    /// ```
    pub fn on_tool_error(mut self, on_tool_error: OnToolError) -> Self {
        self.said.on_tool_error = true;
        self.policy.on_tool_error = on_tool_error;
        self
    }

    /// The most calls one `call_tools` batch may hold (default 64); a larger batch is a
    /// typed, ledgered rejection before any call runs.
    pub fn max_batch(mut self, calls: usize) -> Self {
        self.config.max_batch = calls;
        self
    }

    /// How many read-only calls of one batch run at once (default 8).
    pub fn batch_concurrency(mut self, limit: usize) -> Self {
        self.config.batch_concurrency = limit;
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

    /// Registers `planner` under `name`, for delegations that name it
    /// (`Decision::Delegate { planner: Some(name), .. }`): the child runs it drives are
    /// driven by it. A later registration under the same name replaces the earlier one.
    pub fn planner_named(mut self, name: impl Into<String>, planner: impl Planner) -> Self {
        self.planners.insert(name.into(), Arc::new(planner));
        self
    }

    /// How deep a tree of runs may grow through delegation: the root is at depth 0, its
    /// children at 1. A delegation deeper than this is rejected (and recorded). Default
    /// [`DEFAULT_MAX_DEPTH`](crate::DEFAULT_MAX_DEPTH); 0 forbids delegation.
    ///
    /// # Errors (at [`build`](Self::build))
    /// [`BuildError::MaxDepthTooLarge`] above
    /// [`MAX_DEPTH_CEILING`](crate::MAX_DEPTH_CEILING).
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.config.max_depth = depth;
        self
    }

    fn defer(&mut self, error: BuildError) {
        self.deferred.get_or_insert(error);
    }

    /// The engine's shared state, every policy validated: what [`EngineBuilder::build`]
    /// wraps in an [`Engine`](crate::Engine).
    pub(crate) fn into_shared(self) -> Result<Shared, BuildError> {
        if let Some(error) = self.deferred {
            return Err(error);
        }
        let planner = self.planner.ok_or(BuildError::NoPlanner)?;
        if self.config.max_depth > crate::config::MAX_DEPTH_CEILING {
            return Err(BuildError::MaxDepthTooLarge {
                depth: self.config.max_depth,
                ceiling: crate::config::MAX_DEPTH_CEILING,
            });
        }
        let mut policy = self.policy;
        policy.hooks = crate::hook::check_hooks(&self.hooks)?;
        // Hand-back by default where the planner can correct itself (DESIGN §7); what the
        // configuration said wins, and the run's snapshot records the outcome either way.
        if planner.corrects_itself_dyn() {
            if !self.said.on_violation && policy.on_violation.is_fail_run() {
                let limit = policy
                    .budget
                    .limit(&BudgetName::VIOLATIONS)
                    .unwrap_or(crate::DEFAULT_HAND_BACK_LIMIT);
                policy.on_violation = OnViolation::HandBack { limit };
                policy.budget =
                    std::mem::take(&mut policy.budget).with_limit(BudgetName::VIOLATIONS, limit);
            }
            if !self.said.on_tool_error && policy.on_tool_error.is_fail_run() {
                policy.on_tool_error = OnToolError::HandBack;
            }
        }
        let mut stack = ExecutionStack::new(self.resilience.clone());
        for layer in self.layers {
            stack = layer(stack);
        }
        let tools = ToolTable::build(&self.tools, &stack)?;
        if let Some(Err(e)) = policy.deadline.map(|d| d.check()) {
            return Err(BuildError::InvalidOption {
                option: "deadline",
                reason: e.to_string(),
            });
        }
        if let Some(Err(e)) = policy.result_schema.as_ref().map(jsonschema::validator_for) {
            return Err(BuildError::InvalidResultSchema {
                reason: e.to_string(),
            });
        }
        let policy = Arc::new(RunPolicy::new(policy, tools.specs())?);
        let fs = match &self.filesystem {
            None => None,
            Some((dir, fsync)) => Some(
                FsStores::open_with(dir, FsConfig::default().with_fsync(*fsync))
                    .map_err(BuildError::Stores)?,
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
        let stops = self.stops.build(fs.as_ref());
        Ok(Shared {
            tools,
            planner,
            delegation: Delegation::new(self.planners.keys().map(String::as_str)),
            planners: self.planners,
            approver: self.approver,
            hooks: crate::hook::HookTable::new(self.hooks),
            runs,
            ledgers,
            artifacts,
            policy,
            config: self.config,
            resilience: self.resilience,
            clock: self.clock,
            ids: self.ids,
            active: Mutex::new(std::collections::HashMap::new()),
            stops,
        })
    }
}

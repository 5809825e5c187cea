//! What every run of an engine shares: the tools, planner, approver, stores, the policy new
//! runs start under, and the set of runs being driven.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rein_artifact::DynArtifactStore;
use rein_ledger::DynLedgerStore;
use rein_policy::{Budget, DynApprover, Eligibility, EligibilityError, PolicySnapshot};
use rein_resilience::ResilienceConfig;
use rein_run::{BudgetName, Delegation, DynPlanner, DynRunStore, RunId, ToolSpec};
use serde_json::Value;

use crate::clock::{Clock, IdGenerator};
use crate::config::EngineConfig;
use crate::error::EngineError;
use crate::record_first::Signals;
use crate::tools::{AllowedSpecs, ToolTable};

/// A policy ready to enforce: the snapshot, its JSON, the validated eligibility, and the
/// tools each state allows.
#[derive(Debug)]
pub(crate) struct RunPolicy {
    pub(crate) snapshot: PolicySnapshot,
    /// The snapshot's JSON, shared by every run started under it (see `begin`).
    pub(crate) value: Arc<Value>,
    pub(crate) eligibility: Eligibility,
    pub(crate) allowed: AllowedSpecs,
    /// The tools and next states of every state, as plan requests lend them to planners.
    pub(crate) rules: rein_run::StateRules,
    /// The budgets that guard the way into `act`: every limit but `violations`, which counts
    /// rejections handed back to the planner, not spending — a planner that used its
    /// allowance of mistakes and then corrected itself may still act.
    pub(crate) act_guard: Budget,
    /// The snapshot's `result_schema`, compiled once per policy: `Err` holds what the
    /// compiler said of a recorded schema it cannot compile (a builder refuses such a
    /// schema, so only a ledger written by another version holds one), and every `finish`
    /// is then refused rather than let through unchecked.
    pub(crate) result_validator: Option<Result<jsonschema::Validator, String>>,
}

impl RunPolicy {
    pub(crate) fn new(
        snapshot: PolicySnapshot,
        specs: &[ToolSpec],
    ) -> Result<Self, EligibilityError> {
        let eligibility = Eligibility::new(snapshot.eligibility.clone(), specs)?;
        let allowed = AllowedSpecs::new(&eligibility, specs);
        let mut rules = rein_run::StateRules::default();
        for state in rein_run::State::ALL {
            let next = snapshot.transitions.targets(state).collect();
            rules.set(state, allowed.in_state(state).to_vec(), next);
        }
        let act_guard = snapshot
            .budget
            .limits()
            .iter()
            .filter(|(name, _)| **name != BudgetName::VIOLATIONS)
            .fold(Budget::new(), |guard, (name, limit)| {
                guard.with_limit(name.clone(), *limit)
            });
        let result_validator = snapshot
            .result_schema
            .as_ref()
            .map(|schema| jsonschema::validator_for(schema).map_err(|e| e.to_string()));
        Ok(Self {
            result_validator,
            value: Arc::new(snapshot.to_value()),
            snapshot,
            eligibility,
            allowed,
            rules,
            act_guard,
        })
    }
}

/// The planners a builder registered by name, for delegations that name one.
pub(crate) type Planners = std::collections::HashMap<String, Arc<dyn DynPlanner>>;

/// What every run of an engine shares. Read-only after build, except the set of runs being
/// driven (touched once when a run starts and once when it stops, never per step).
pub(crate) struct Shared {
    pub(crate) tools: ToolTable,
    pub(crate) planner: Arc<dyn DynPlanner>,
    /// Planners a delegation may name, by name.
    pub(crate) planners: Planners,
    /// What the plan requests of runs that may still delegate offer: the names of
    /// `planners`, built once with the engine so no step allocates it.
    pub(crate) delegation: Delegation,
    pub(crate) approver: Option<Arc<dyn DynApprover>>,
    /// The hooks, in the order they are asked, and by point.
    pub(crate) hooks: crate::hook::HookTable,
    pub(crate) runs: Arc<dyn DynRunStore>,
    pub(crate) ledgers: Arc<dyn DynLedgerStore>,
    pub(crate) artifacts: Arc<dyn DynArtifactStore>,
    pub(crate) policy: Arc<RunPolicy>,
    pub(crate) config: EngineConfig,
    pub(crate) resilience: ResilienceConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdGenerator>,
    /// The runs being driven, with the signals of those whose drive has begun: an
    /// operator's stop request made through this engine reaches its run through them.
    pub(crate) active: Mutex<HashMap<RunId, Option<Arc<Signals>>>>,
    /// Operators' stop requests, and how often a driven run looks for one.
    pub(crate) stops: crate::stop_requests::Stops,
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
        self.shared.lock_active().remove(&self.id);
    }
}

impl Shared {
    /// What a plan request of a run at `depth` offers to delegate to: the planner names
    /// while a child of the run would still be within `max_depth`, else nothing. The one
    /// rule for the live step and for a prompt rebuilt from the ledger, so both offer the same.
    pub(crate) fn delegation_at(&self, depth: u32) -> Option<&Delegation> {
        (depth < self.config.max_depth).then_some(&self.delegation)
    }

    /// Marks run `id` as being driven, until the guard is dropped.
    pub(crate) fn acquire(self: &Arc<Self>, id: &RunId) -> Result<ActiveGuard, EngineError> {
        let mut active = self.lock_active();
        if active.contains_key(id) {
            return Err(EngineError::AlreadyActive { id: id.clone() });
        }
        active.insert(id.clone(), None);
        Ok(ActiveGuard {
            shared: Arc::clone(self),
            id: id.clone(),
        })
    }

    /// Lends the signals of run `id`'s drive to this engine's stop requests, for as long as
    /// the run is marked as driven.
    pub(crate) fn driving_with(&self, id: &RunId, signals: &Arc<Signals>) {
        if let Some(slot) = self.lock_active().get_mut(id) {
            *slot = Some(Arc::clone(signals));
        }
    }

    /// Pulls the abort (`Abort`) or stop signal of run `id`, if this engine drives it.
    pub(crate) fn signal(&self, id: &RunId, kind: rein_run::StopKind) {
        if let Some(Some(signals)) = self.lock_active().get(id) {
            match kind {
                rein_run::StopKind::Abort => signals.cancel.cancel(),
                rein_run::StopKind::Interrupt => signals.stop.cancel(),
            }
        }
    }

    fn lock_active(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Option<Arc<Signals>>>> {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

//! `PolicyNarrowing`: the explicit, ledgered act that makes a live run's policy stricter —
//! never looser (DESIGN.md §2).

use std::collections::{BTreeMap, BTreeSet};

use rein_policy::{EligibilityRules, OnViolation, PolicySnapshot};
use rein_run::{BudgetName, State, ToolName, ToolSpec};

use crate::error::NarrowingError;
use crate::shared::RunPolicy;

/// A request to narrow a live run's policy: lower budget limits, fewer steps, fewer eligible
/// tools, more approvals, fewer rejections handed back. Applied with
/// [`Engine::narrow`](crate::Engine::narrow) (a run not being driven) or
/// [`RunHandle::narrow`](crate::RunHandle::narrow) (a run being driven, at its next step);
/// recorded in the ledger as `policy_narrowed`, and kept across restarts. A request that
/// would widen anything is refused whole with [`NarrowingError`], and nothing is recorded.
///
/// ```
/// use rein_engine::PolicyNarrowing;
/// use rein_run::BudgetName;
/// let narrowing = PolicyNarrowing::new("the incident is over: wind down")
///     .budget(BudgetName::TOOL_CALLS, 2)
///     .max_steps(10)
///     .forbid("deploy".parse()?)
///     .require_approval("write".parse()?);
/// # let _ = narrowing;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct PolicyNarrowing {
    reason: String,
    budgets: BTreeMap<BudgetName, u64>,
    max_steps: Option<u32>,
    forbid: BTreeSet<ToolName>,
    approve: BTreeSet<ToolName>,
    on_violation: Option<OnViolation>,
}

impl PolicyNarrowing {
    /// A narrowing, with the reason the ledger records.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            ..Self::default()
        }
    }

    /// Lowers the limit of budget `name` to `limit` (or sets one where there was none).
    pub fn budget(mut self, name: BudgetName, limit: u64) -> Self {
        self.budgets.insert(name, limit);
        self
    }

    /// Lowers the most decisions the run may take.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.max_steps = Some(steps);
        self
    }

    /// Makes `tool` eligible in no state.
    pub fn forbid(mut self, tool: ToolName) -> Self {
        self.forbid.insert(tool);
        self
    }

    /// Requires approval for every call of `tool`.
    pub fn require_approval(mut self, tool: ToolName) -> Self {
        self.approve.insert(tool);
        self
    }

    /// Hands rejections back at most as `on_violation` says (it may only lower the run's).
    pub fn on_violation(mut self, on_violation: OnViolation) -> Self {
        self.on_violation = Some(on_violation);
        self
    }

    /// The reason, as recorded.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The policy `current` becomes under this narrowing, or what it would widen.
    pub(crate) fn apply(
        &self,
        current: &RunPolicy,
        specs: &[ToolSpec],
    ) -> Result<PolicySnapshot, NarrowingError> {
        let mut next = current.snapshot.clone();
        for (name, &requested) in &self.budgets {
            match current.snapshot.budget.limit(name) {
                Some(limit) if requested > limit => {
                    return Err(NarrowingError::BudgetWouldRise {
                        name: name.clone(),
                        current: limit,
                        requested,
                    });
                }
                _ => {
                    next.budget =
                        std::mem::take(&mut next.budget).with_limit(name.clone(), requested);
                }
            }
        }
        if let Some(requested) = self.max_steps {
            let limit = current.snapshot.max_steps;
            if requested > limit {
                return Err(NarrowingError::MaxStepsWouldRise {
                    current: limit,
                    requested,
                });
            }
            next.max_steps = requested;
        }
        if let Some(requested) = self.on_violation {
            let now = current.snapshot.on_violation;
            if !requested.is_within(&now) {
                return Err(NarrowingError::HandBackWouldRise {
                    current: now,
                    requested,
                });
            }
            next.on_violation = requested;
        }
        let registered = |tool: &ToolName| {
            specs
                .iter()
                .any(|s| s.name() == tool)
                .then_some(())
                .ok_or_else(|| NarrowingError::UnknownTool(tool.clone()))
        };
        for tool in &self.approve {
            registered(tool)?;
            next.approvals = next.approvals.require(tool.clone());
        }
        if !self.forbid.is_empty() {
            for tool in &self.forbid {
                registered(tool)?;
            }
            // The tools each state allows now, less the forbidden ones: explicit rules that
            // allow a subset of what the run's rules allowed.
            let allow = State::ALL
                .into_iter()
                .map(|state| {
                    let tools = current
                        .eligibility
                        .allowed_in(state, specs)
                        .map(|spec| spec.name().clone())
                        .filter(|name| !self.forbid.contains(name))
                        .collect::<BTreeSet<_>>();
                    (state, tools)
                })
                .filter(|(_, tools)| !tools.is_empty())
                .collect();
            next.eligibility = EligibilityRules::Explicit { allow };
        }
        // Each change above only narrows; this checks the whole result the same way.
        if !next.is_within(&current.snapshot, specs) {
            return Err(NarrowingError::WouldWiden);
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use rein_tool::Annotations;

    use super::*;

    fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec::new("read".parse().unwrap(), "").with_annotations(Annotations::read_only()),
            ToolSpec::new("deploy".parse().unwrap(), "")
                .with_annotations(Annotations::destructive()),
        ]
    }

    fn policy(snapshot: PolicySnapshot) -> RunPolicy {
        RunPolicy::new(snapshot, &tools()).unwrap()
    }

    #[test]
    fn lowering_narrows_and_raising_is_refused_naming_what_would_widen() {
        let mut snapshot = PolicySnapshot {
            max_steps: 20,
            ..PolicySnapshot::default()
        };
        snapshot.budget = snapshot.budget.with_limit(BudgetName::TOOL_CALLS, 5);
        let current = policy(snapshot);
        let narrowed = PolicyNarrowing::new("less")
            .budget(BudgetName::TOOL_CALLS, 3)
            .budget(BudgetName::new("tokens").unwrap(), 100)
            .max_steps(10)
            .apply(&current, &tools())
            .unwrap();
        assert_eq!(narrowed.budget.limit(&BudgetName::TOOL_CALLS), Some(3));
        assert_eq!(narrowed.max_steps, 10);
        assert!(narrowed.is_within(&current.snapshot, &tools()));

        let wider = PolicyNarrowing::new("more").budget(BudgetName::TOOL_CALLS, 6);
        assert_eq!(
            wider.apply(&current, &tools()),
            Err(NarrowingError::BudgetWouldRise {
                name: BudgetName::TOOL_CALLS,
                current: 5,
                requested: 6
            })
        );
        assert!(matches!(
            PolicyNarrowing::new("more")
                .max_steps(21)
                .apply(&current, &tools()),
            Err(NarrowingError::MaxStepsWouldRise {
                current: 20,
                requested: 21
            })
        ));
        assert!(matches!(
            PolicyNarrowing::new("more")
                .on_violation(OnViolation::HandBack { limit: 1 })
                .apply(&current, &tools()),
            Err(NarrowingError::HandBackWouldRise { .. })
        ));
    }

    #[test]
    fn forbidding_a_tool_leaves_every_other_eligibility_as_it_was() {
        let current = policy(PolicySnapshot::default());
        let narrowed = PolicyNarrowing::new("no deploys")
            .forbid("deploy".parse().unwrap())
            .require_approval("read".parse().unwrap())
            .apply(&current, &tools())
            .unwrap();
        assert!(narrowed.is_within(&current.snapshot, &tools()));
        assert!(!current.snapshot.is_within(&narrowed, &tools()));
        let after = policy(narrowed);
        let specs = tools();
        for state in State::ALL {
            let before: Vec<_> = current.eligibility.allowed_in(state, &specs).collect();
            let now: Vec<_> = after.eligibility.allowed_in(state, &specs).collect();
            let kept: Vec<_> = before
                .into_iter()
                .filter(|s| s.name().as_str() != "deploy")
                .collect();
            assert_eq!(now, kept, "{state}");
        }
        assert!(after.snapshot.approvals.requires(&specs[0]).is_some());
        assert_eq!(
            PolicyNarrowing::new("?")
                .forbid("nope".parse().unwrap())
                .apply(&current, &tools()),
            Err(NarrowingError::UnknownTool("nope".parse().unwrap()))
        );
    }
}

//! `PlanMeter`: how a planner declares what a model call could spend and reports what it
//! did spend. Planners report, the engine charges: no planner touches a budget itself.

use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::{BudgetExhausted, BudgetName, BudgetSnapshot, Digest};

/// One model call, as the planner reports it. The engine records it as a `planner_call`
/// ledger entry and charges `tokens` (input + output) and `cost`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerCall {
    /// The provider (`openai`, `anthropic`, a team's own).
    pub provider: String,
    /// The model.
    pub model: String,
    /// The SHA-256 of the exact request body sent.
    pub request_hash: Digest,
    /// Prompt tokens, as the provider reported them.
    pub input_tokens: u64,
    /// Generated tokens, as the provider reported them.
    pub output_tokens: u64,
    /// Cost in integer micro-units of the configured currency.
    pub cost: u64,
    /// Wall time of the call, in milliseconds.
    pub latency_ms: u64,
    /// Why the model stopped, as the provider said.
    pub finish_reason: Option<String>,
}

impl PlannerCall {
    /// Input plus output tokens.
    #[must_use]
    pub const fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The most one call could spend: its prompt estimate plus its maximum output, and what
/// that would cost at the model's prices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorstCase {
    /// Tokens.
    pub tokens: u64,
    /// Cost in micro-units.
    pub cost: u64,
}

/// The engine's meter for one step, reachable from [`PlanRequest::meter`].
///
/// [`PlanRequest::meter`]: crate::PlanRequest::meter
///
/// ```
/// use std::collections::BTreeMap;
/// use rein_run::{BudgetName, BudgetSnapshot, BudgetUsage, Digest, PlanMeter, PlannerCall, WorstCase};
///
/// let limits = BTreeMap::from([(BudgetName::TOKENS, 1_000)]);
/// let usage = BudgetUsage::default();
/// let meter = PlanMeter::new(BudgetSnapshot::new(&limits, &usage));
/// meter.declare(WorstCase { tokens: 800, cost: 0 })?;
/// meter.report(PlannerCall {
///     provider: "openai".into(), model: "m".into(), request_hash: Digest::of_bytes(b"{}"),
///     input_tokens: 300, output_tokens: 200, cost: 0, latency_ms: 12, finish_reason: None,
/// });
/// // 500 are spent in this step: a call that could spend 600 more does not fit.
/// assert!(meter.declare(WorstCase { tokens: 600, cost: 0 }).is_err());
/// assert_eq!(meter.calls().len(), 1);
/// # Ok::<(), rein_run::BudgetExhausted>(())
/// ```
#[derive(Debug)]
pub struct PlanMeter {
    tokens: Option<Limit>,
    cost: Option<Limit>,
    calls: Mutex<Vec<PlannerCall>>,
}

#[derive(Debug, Clone, Copy)]
struct Limit {
    limit: u64,
    used: u64,
}

impl PlanMeter {
    /// A meter over what is left of `tokens` and `cost` in `budget`.
    #[must_use]
    pub fn new(budget: BudgetSnapshot<'_>) -> Self {
        let limit = |name: &BudgetName| {
            budget.limit(name).map(|limit| Limit {
                limit,
                used: budget
                    .used(name)
                    .saturating_add(budget.usage().reserved(name)),
            })
        };
        Self {
            tokens: limit(&BudgetName::TOKENS),
            cost: limit(&BudgetName::COST),
            calls: Mutex::new(Vec::new()),
        }
    }

    /// A meter with no limits (for planners run outside an engine).
    #[must_use]
    pub const fn unlimited() -> Self {
        Self {
            tokens: None,
            cost: None,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Declares that the next call could spend up to `worst`.
    ///
    /// # Errors
    /// [`BudgetExhausted`] when it does not fit in what is left of `tokens` or `cost` after
    /// the calls already reported in this step. The planner MUST NOT make the call then; it
    /// returns [`PlannerError::OverBudget`] and the engine stops the run.
    ///
    /// [`PlannerError::OverBudget`]: crate::PlannerError::OverBudget
    pub fn declare(&self, worst: WorstCase) -> Result<(), BudgetExhausted> {
        let calls = self.lock();
        let spent_tokens: u64 = calls.iter().map(PlannerCall::tokens).sum();
        let spent_cost: u64 = calls.iter().map(|c| c.cost).sum();
        for (name, limit, spent, requested) in [
            (BudgetName::TOKENS, self.tokens, spent_tokens, worst.tokens),
            (BudgetName::COST, self.cost, spent_cost, worst.cost),
        ] {
            let Some(Limit { limit, used }) = limit else {
                continue;
            };
            let used = used.saturating_add(spent);
            if used.saturating_add(requested) > limit {
                return Err(BudgetExhausted {
                    name,
                    limit,
                    used,
                    reserved: 0,
                    requested,
                });
            }
        }
        Ok(())
    }

    /// Reports a call that was made (successful or not, whatever it used).
    pub fn report(&self, call: PlannerCall) {
        self.lock().push(call);
    }

    /// The calls reported so far, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<PlannerCall> {
        self.lock().clone()
    }

    /// The calls reported, taken out of the meter.
    #[must_use]
    pub fn into_calls(self) -> Vec<PlannerCall> {
        self.calls
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PlannerCall>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

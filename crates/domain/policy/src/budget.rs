//! `Budget`: limits on a run's named counters.

use std::collections::BTreeMap;

use rein_run::{BudgetExhausted, BudgetName, BudgetSnapshot, BudgetUsage};
use serde::{Deserialize, Serialize};

/// Limits on named counters. Counters without a limit are counted but never refused.
///
/// A budget is spent through the run's [`BudgetUsage`]. The engine [charges](Budget::charge)
/// every cost before it is incurred: one `tool_calls` unit before each tool attempt (a
/// retry is an attempt), one `steps` unit per decision, a model call's tokens and cost as it
/// reports them. A charge that does not fit is refused and nothing changes, so a limit is
/// never exceeded. A child run's carve is held as a [`Reservation`](rein_run::Reservation)
/// in its parent's use while the child runs. A run's usage is persisted with it, so pausing,
/// resuming or restarting never resets it.
///
/// ```
/// use rein_policy::Budget;
/// use rein_run::{BudgetName, BudgetUsage};
///
/// let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 2);
/// let mut usage = BudgetUsage::default();
/// budget.charge(&mut usage, &BudgetName::TOOL_CALLS, 1)?; // before the attempt runs
/// assert_eq!(budget.snapshot(&usage).remaining(&BudgetName::TOOL_CALLS), Some(1));
/// assert!(budget.charge(&mut usage, &BudgetName::TOOL_CALLS, 2).is_err());
/// assert_eq!(usage.used(&BudgetName::TOOL_CALLS), 1); // a refused charge changes nothing
/// # Ok::<(), rein_policy::BudgetExhausted>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Budget {
    limits: BTreeMap<BudgetName, u64>,
}

impl Budget {
    /// A budget without limits.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the limit of `name` (replacing any earlier one).
    #[must_use]
    pub fn with_limit(mut self, name: BudgetName, limit: u64) -> Self {
        self.limits.insert(name, limit);
        self
    }

    /// The limit of `name`, if it has one.
    #[must_use]
    pub fn limit(&self, name: &BudgetName) -> Option<u64> {
        self.limits.get(name).copied()
    }

    /// Every limit, by name.
    #[must_use]
    pub const fn limits(&self) -> &BTreeMap<BudgetName, u64> {
        &self.limits
    }

    /// Spends `amount` of `name` in `usage` if it fits the limit: what the engine does before
    /// every cost is incurred.
    ///
    /// # Errors
    /// [`BudgetExhausted`] when `amount` does not fit; `usage` is unchanged.
    pub fn charge(
        &self,
        usage: &mut BudgetUsage,
        name: &BudgetName,
        amount: u64,
    ) -> Result<(), BudgetExhausted> {
        let reservation = usage.reserve(name, amount, self.limit(name))?;
        usage.commit(reservation);
        Ok(())
    }

    /// Whether `amount` more of `name` fits what `usage` has left of it: `limit - used -
    /// reserved`, the one body behind every tool charge, batch, sub-run carve and planner
    /// charge. A counter without a limit always fits.
    ///
    /// ```
    /// use rein_policy::Budget;
    /// use rein_run::{BudgetName, BudgetUsage};
    /// let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 2);
    /// let usage = BudgetUsage::default();
    /// assert!(budget.fits(&usage, &BudgetName::TOOL_CALLS, 2).is_ok());
    /// assert!(budget.fits(&usage, &BudgetName::TOOL_CALLS, 3).is_err());
    /// assert!(budget.fits(&usage, &BudgetName::TOKENS, u64::MAX).is_ok());
    /// ```
    ///
    /// # Errors
    /// [`BudgetExhausted`] with the limit, what is used and reserved, and `amount`.
    pub fn fits(
        &self,
        usage: &BudgetUsage,
        name: &BudgetName,
        amount: u64,
    ) -> Result<(), BudgetExhausted> {
        usage.counter(name).fits(name, amount, self.limit(name))
    }

    /// What is left of `name`: `limit - used - reserved`, never below zero (`None` when it
    /// has no limit).
    #[must_use]
    pub fn left(&self, usage: &BudgetUsage, name: &BudgetName) -> Option<u64> {
        self.limit(name)
            .map(|limit| usage.counter(name).left(limit))
    }

    /// Whether nothing is left of `name` (never true for a counter without a limit).
    #[must_use]
    pub fn is_exhausted(&self, usage: &BudgetUsage, name: &BudgetName) -> bool {
        self.left(usage, name) == Some(0)
    }

    /// The first limited budget with nothing left, if any.
    #[must_use]
    pub fn first_exhausted<'a>(&'a self, usage: &BudgetUsage) -> Option<&'a BudgetName> {
        self.limits
            .keys()
            .find(|name| self.is_exhausted(usage, name))
    }

    /// A planner's view of limits and use.
    #[must_use]
    pub fn snapshot<'a>(&'a self, usage: &'a BudgetUsage) -> BudgetSnapshot<'a> {
        BudgetSnapshot::new(&self.limits, usage)
    }

    /// Whether `self` allows nothing that `wider` does not: every limit of `wider` is also
    /// a limit here, no higher. Used to check that changing a live run's policy only narrows it.
    #[must_use]
    pub fn is_within(&self, wider: &Self) -> bool {
        wider
            .limits
            .iter()
            .all(|(name, &limit)| self.limit(name).is_some_and(|mine| mine <= limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any interleaving of charges and reservations never takes a budget over its limit.
        #[test]
        fn charges_never_exceed(limit in 0u64..10, amounts in proptest::collection::vec(0u64..4, 0..40)) {
            let name = BudgetName::TOOL_CALLS;
            let budget = Budget::new().with_limit(name.clone(), limit);
            let mut usage = BudgetUsage::default();
            let mut held = Vec::new();
            for (i, amount) in amounts.into_iter().enumerate() {
                if i % 3 == 0 {
                    if let Ok(r) = usage.reserve(&name, amount, budget.limit(&name)) { held.push(r) }
                } else {
                    let _ = budget.charge(&mut usage, &name, amount);
                }
                prop_assert!(usage.used(&name) + usage.reserved(&name) <= limit);
            }
            for r in held { usage.commit(r) }
            prop_assert!(usage.used(&name) <= limit);
        }
    }

    #[test]
    fn unlimited_counters_only_count() {
        let budget = Budget::new();
        let mut usage = BudgetUsage::default();
        budget
            .charge(&mut usage, &BudgetName::TOKENS, 1_000_000)
            .unwrap();
        assert_eq!(usage.used(&BudgetName::TOKENS), 1_000_000);
        assert!(!budget.is_exhausted(&usage, &BudgetName::TOKENS));
    }

    #[test]
    fn exact_limit_is_reachable_and_then_exhausted() {
        let budget = Budget::new().with_limit(BudgetName::STEPS, 3);
        let mut usage = BudgetUsage::default();
        for _ in 0..3 {
            budget.charge(&mut usage, &BudgetName::STEPS, 1).unwrap();
        }
        assert!(budget.is_exhausted(&usage, &BudgetName::STEPS));
        assert_eq!(budget.first_exhausted(&usage), Some(&BudgetName::STEPS));
        let err = budget
            .charge(&mut usage, &BudgetName::STEPS, 1)
            .unwrap_err();
        assert_eq!((err.limit, err.used, err.requested), (3, 3, 1));
        assert_eq!(usage.used(&BudgetName::STEPS), 3);
    }

    fn with_reserved(used: u64, reserved: u64) -> BudgetUsage {
        let mut usage = BudgetUsage::default();
        let spent = usage.reserve(&BudgetName::TOOL_CALLS, used, None).unwrap();
        usage.commit(spent);
        // Held for good: the test only reads the counters.
        let _held = usage
            .reserve(&BudgetName::TOOL_CALLS, reserved, None)
            .unwrap();
        usage
    }

    #[test]
    fn fits_exactly_what_is_left() {
        let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 5);
        let usage = with_reserved(3, 0);
        assert_eq!(budget.left(&usage, &BudgetName::TOOL_CALLS), Some(2));
        assert_eq!(budget.fits(&usage, &BudgetName::TOOL_CALLS, 2), Ok(()));
    }

    #[test]
    fn one_over_what_is_left_names_the_figures() {
        let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 5);
        let usage = with_reserved(3, 0);
        let err = budget.fits(&usage, &BudgetName::TOOL_CALLS, 3).unwrap_err();
        assert_eq!(
            (err.name, err.limit, err.used, err.reserved, err.requested),
            (BudgetName::TOOL_CALLS, 5, 3, 0, 3)
        );
    }

    #[test]
    fn unlimited_counters_always_fit_and_have_no_left() {
        let budget = Budget::new();
        let usage = with_reserved(u64::MAX, 0);
        assert_eq!(budget.left(&usage, &BudgetName::TOOL_CALLS), None);
        assert_eq!(
            budget.fits(&usage, &BudgetName::TOOL_CALLS, u64::MAX),
            Ok(())
        );
    }

    #[test]
    fn reserved_counts_against_what_is_left() {
        let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 10);
        let usage = with_reserved(3, 4);
        assert_eq!(budget.left(&usage, &BudgetName::TOOL_CALLS), Some(3));
        assert_eq!(budget.fits(&usage, &BudgetName::TOOL_CALLS, 3), Ok(()));
        let err = budget.fits(&usage, &BudgetName::TOOL_CALLS, 4).unwrap_err();
        assert_eq!((err.used, err.reserved, err.requested), (3, 4, 4));
        // Over the limit already (a provider's overrun): nothing left, never negative.
        let over = Budget::new().with_limit(BudgetName::TOOL_CALLS, 2);
        assert_eq!(over.left(&usage, &BudgetName::TOOL_CALLS), Some(0));
        assert!(over.fits(&usage, &BudgetName::TOOL_CALLS, 1).is_err());
    }

    #[test]
    fn narrowing_means_no_limit_is_raised_or_dropped() {
        let wide = Budget::new().with_limit(BudgetName::STEPS, 10);
        assert!(
            Budget::new()
                .with_limit(BudgetName::STEPS, 5)
                .is_within(&wide)
        );
        assert!(
            !Budget::new()
                .with_limit(BudgetName::STEPS, 11)
                .is_within(&wide)
        );
        assert!(!Budget::new().is_within(&wide));
    }
}

//! Budget use of a run: named counters, and the reservation token that keeps them in limits.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

/// The name of a budget counter: 1 to 64 lowercase ASCII letters, digits, `_`, `-` or `.`,
/// a letter first. Well-known names are constants.
///
/// ```
/// use rein_run::BudgetName;
/// assert_eq!(BudgetName::TOOL_CALLS.as_str(), "tool_calls");
/// let custom = BudgetName::new("api.credits")?;
/// assert!(BudgetName::new("Tool Calls").is_err());
/// # let _ = custom;
/// # Ok::<(), rein_run::BudgetNameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct BudgetName(Cow<'static, str>);

/// Why a string is not a [`BudgetName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid budget name {value:?}: use 1-64 lowercase ASCII letters, digits, '_', '-' or '.', starting with a letter"
)]
pub struct BudgetNameError {
    /// The rejected value (cut to 80 characters).
    pub value: String,
}

impl BudgetName {
    /// Tool attempts; charged per attempt, before it starts.
    pub const TOOL_CALLS: Self = Self(Cow::Borrowed("tool_calls"));
    /// Planner steps (one per decision).
    pub const STEPS: Self = Self(Cow::Borrowed("steps"));
    /// Model tokens, charged by planners that report them.
    pub const TOKENS: Self = Self(Cow::Borrowed("tokens"));
    /// Model cost in integer micro-units of a currency, charged by planners that report it.
    pub const COST: Self = Self(Cow::Borrowed("cost"));
    /// Rejected decisions handed back to the planner instead of failing the run.
    pub const VIOLATIONS: Self = Self(Cow::Borrowed("violations"));

    /// Validates `name`.
    ///
    /// # Errors
    /// [`BudgetNameError`] naming the value when it is not 1-64 lowercase letters, digits,
    /// `_`, `-` or `.` starting with a letter.
    pub fn new(name: impl Into<String>) -> Result<Self, BudgetNameError> {
        let value: String = name.into();
        let valid = !value.is_empty()
            && value.len() <= 64
            && value.as_bytes()[0].is_ascii_lowercase()
            && value.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.')
            });
        if valid {
            Ok(Self(Cow::Owned(value)))
        } else {
            Err(BudgetNameError {
                value: value.chars().take(80).collect(),
            })
        }
    }

    /// The name as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BudgetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for BudgetName {
    /// The name as a string, borrowed (no copy per serialization).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl std::str::FromStr for BudgetName {
    type Err = BudgetNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for BudgetName {
    type Error = BudgetNameError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<BudgetName> for String {
    fn from(name: BudgetName) -> Self {
        name.0.into_owned()
    }
}

/// One counter: what was spent, and what is set aside (a child run's carve while it runs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counter {
    /// Spent for good.
    pub used: u64,
    /// Set aside by reservations not yet committed or released.
    pub reserved: u64,
}

impl Counter {
    /// `used + reserved`: what counts against a limit.
    #[must_use]
    pub const fn committed_or_reserved(&self) -> u64 {
        self.used.saturating_add(self.reserved)
    }

    /// What is left under `limit`: `limit - used - reserved`, never below zero.
    #[must_use]
    pub const fn left(&self, limit: u64) -> u64 {
        limit.saturating_sub(self.committed_or_reserved())
    }

    /// Whether `amount` more of `name` fits under `limit` (`None`: no limit, everything
    /// fits). The one body of "limit - used - reserved" every charge, reservation, carve
    /// and declared worst case goes through.
    ///
    /// # Errors
    /// [`BudgetExhausted`] with this counter's figures when it does not fit.
    pub fn fits(
        &self,
        name: &BudgetName,
        amount: u64,
        limit: Option<u64>,
    ) -> Result<(), BudgetExhausted> {
        let Some(limit) = limit else {
            return Ok(());
        };
        if amount > self.left(limit) {
            return Err(BudgetExhausted {
                name: name.clone(),
                limit,
                used: self.used,
                reserved: self.reserved,
                requested: amount,
            });
        }
        Ok(())
    }
}

/// What a run has spent of each budget. Part of the run's persisted state, so pausing,
/// resuming or restarting never resets it.
///
/// Spending goes through a [`Reservation`]: [`BudgetUsage::reserve`] checks the limit and
/// sets the amount aside; the token is then either [committed](BudgetUsage::commit) (spent)
/// or [released](BudgetUsage::release) (given back). A reservation can never take
/// `used + reserved` over its limit, and the token cannot be used twice.
///
/// ```
/// use rein_run::{BudgetName, BudgetUsage};
/// let mut usage = BudgetUsage::default();
/// let name = BudgetName::TOOL_CALLS;
/// let r = usage.reserve(&name, 1, Some(2))?;
/// usage.commit(r);
/// let r = usage.reserve(&name, 1, Some(2))?;
/// assert!(usage.reserve(&name, 1, Some(2)).is_err()); // 1 used + 1 reserved = limit
/// usage.release(r);
/// assert_eq!(usage.used(&name), 1);
/// # Ok::<(), rein_run::BudgetExhausted>(())
/// ```
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BudgetUsage {
    counters: BTreeMap<BudgetName, Counter>,
    /// How many commits spent something (see [`BudgetUsage::spends`]). Not part of the
    /// usage's value: neither written out nor compared.
    #[serde(skip)]
    spends: u64,
}

impl PartialEq for BudgetUsage {
    fn eq(&self, other: &Self) -> bool {
        self.counters == other.counters
    }
}

impl Eq for BudgetUsage {}

/// A budget's limit would be exceeded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "budget `{name}` exhausted: {used} used and {reserved} reserved of {limit}, {requested} more requested; raise the limit or end the run"
)]
pub struct BudgetExhausted {
    /// The budget.
    pub name: BudgetName,
    /// Its limit.
    pub limit: u64,
    /// Already spent.
    pub used: u64,
    /// Set aside and not yet spent (a child run's carve while it runs).
    pub reserved: u64,
    /// What was asked for.
    pub requested: u64,
}

/// An amount set aside on one budget. Commit it once the cost is incurred, or release it.
/// Not `Clone`: a reservation is spent or given back exactly once.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a reservation must be committed or released"]
pub struct Reservation {
    name: BudgetName,
    amount: u64,
}

impl Reservation {
    /// The budget the amount is set aside on.
    #[must_use]
    pub const fn name(&self) -> &BudgetName {
        &self.name
    }

    /// The amount set aside.
    #[must_use]
    pub const fn amount(&self) -> u64 {
        self.amount
    }
}

impl BudgetUsage {
    /// Sets `amount` aside on `name` if `used + reserved + amount` stays within `limit`
    /// (`None`: no limit, the counter only counts).
    ///
    /// # Errors
    /// [`BudgetExhausted`] with the figures when the limit would be exceeded; nothing changes.
    pub fn reserve(
        &mut self,
        name: &BudgetName,
        amount: u64,
        limit: Option<u64>,
    ) -> Result<Reservation, BudgetExhausted> {
        self.counter(name).fits(name, amount, limit)?;
        self.counters.entry(name.clone()).or_default().reserved += amount;
        Ok(Reservation {
            name: name.clone(),
            amount,
        })
    }

    /// Spends a reservation: its amount moves from reserved to used.
    pub fn commit(&mut self, reservation: Reservation) {
        if reservation.amount > 0 {
            self.spends = self.spends.wrapping_add(1);
        }
        let counter = self.counters.entry(reservation.name).or_default();
        counter.reserved = counter.reserved.saturating_sub(reservation.amount);
        counter.used = counter.used.saturating_add(reservation.amount);
    }

    /// Gives a reservation back unspent.
    pub fn release(&mut self, reservation: Reservation) {
        let counter = self.counters.entry(reservation.name).or_default();
        counter.reserved = counter.reserved.saturating_sub(reservation.amount);
    }

    /// What has been spent of `name`.
    #[must_use]
    pub fn used(&self, name: &BudgetName) -> u64 {
        self.counters.get(name).map_or(0, |c| c.used)
    }

    /// What is set aside on `name` right now.
    #[must_use]
    pub fn reserved(&self, name: &BudgetName) -> u64 {
        self.counters.get(name).map_or(0, |c| c.reserved)
    }

    /// The counter of `name` (zero when it was never touched).
    #[must_use]
    pub fn counter(&self, name: &BudgetName) -> Counter {
        self.counters.get(name).copied().unwrap_or_default()
    }

    /// Every counter that was ever touched, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&BudgetName, &Counter)> {
        self.counters.iter()
    }

    /// A count that moves with every [commit](Self::commit) that spends something, and
    /// only then: where two readings of one usage are equal, nothing it used changed in
    /// between (what is reserved may have). For a reader that keeps a copy of what was
    /// used and would otherwise compare it with every counter to know whether it is still
    /// true. A copy or a usage read back counts on from its own reading (one read back
    /// starts at 0), so compare readings of the same usage only.
    ///
    /// ```
    /// use rein_run::{BudgetName, BudgetUsage};
    /// let mut usage = BudgetUsage::default();
    /// let seen = usage.spends();
    /// let r = usage.reserve(&BudgetName::STEPS, 1, None)?;
    /// assert_eq!(usage.spends(), seen); // only set aside
    /// usage.commit(r);
    /// assert_ne!(usage.spends(), seen);
    /// # Ok::<(), rein_run::BudgetExhausted>(())
    /// ```
    #[must_use]
    pub const fn spends(&self) -> u64 {
        self.spends
    }
}

/// A planner's read-only view of the budgets: limits next to what was used.
///
/// ```
/// use std::collections::BTreeMap;
/// use rein_run::{BudgetName, BudgetSnapshot, BudgetUsage};
/// let limits = BTreeMap::from([(BudgetName::TOOL_CALLS, 10)]);
/// let usage = BudgetUsage::default();
/// let snap = BudgetSnapshot::new(&limits, &usage);
/// assert_eq!(snap.remaining(&BudgetName::TOOL_CALLS), Some(10));
/// assert_eq!(snap.remaining(&BudgetName::TOKENS), None); // no limit
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BudgetSnapshot<'a> {
    limits: &'a BTreeMap<BudgetName, u64>,
    usage: &'a BudgetUsage,
}

impl<'a> BudgetSnapshot<'a> {
    /// A view over `limits` and `usage`.
    #[must_use]
    pub const fn new(limits: &'a BTreeMap<BudgetName, u64>, usage: &'a BudgetUsage) -> Self {
        Self { limits, usage }
    }

    /// The limit of `name`, if it has one.
    #[must_use]
    pub fn limit(&self, name: &BudgetName) -> Option<u64> {
        self.limits.get(name).copied()
    }

    /// What was spent of `name`.
    #[must_use]
    pub fn used(&self, name: &BudgetName) -> u64 {
        self.usage.used(name)
    }

    /// What is left of `name` (`None` when it has no limit).
    #[must_use]
    pub fn remaining(&self, name: &BudgetName) -> Option<u64> {
        let counter = self.usage.counter(name);
        self.limit(name).map(|limit| counter.left(limit))
    }

    /// Every limited budget with its limit and counter.
    pub fn iter(&self) -> impl Iterator<Item = (&'a BudgetName, u64, Counter)> + 'a {
        let usage = self.usage;
        self.limits.iter().map(move |(name, &limit)| {
            (
                name,
                limit,
                usage.counters.get(name).copied().unwrap_or_default(),
            )
        })
    }

    /// The usage behind the view.
    #[must_use]
    pub const fn usage(&self) -> &'a BudgetUsage {
        self.usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Reserve(u64),
        Commit(usize),
        Release(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..5).prop_map(Op::Reserve),
            (0usize..8).prop_map(Op::Commit),
            (0usize..8).prop_map(Op::Release),
        ]
    }

    proptest! {
        /// No sequence of reserve/commit/release takes a budget over its limit, the
        /// counters always equal the sum of what was committed and what is outstanding,
        /// and `spends` moves exactly when what was used does.
        #[test]
        fn no_sequence_exceeds_the_limit(limit in 0u64..20, ops in proptest::collection::vec(op(), 0..64)) {
            let name = BudgetName::TOOL_CALLS;
            let mut usage = BudgetUsage::default();
            let mut open: Vec<Reservation> = Vec::new();
            let mut committed = 0u64;
            for op in ops {
                let (used, spends) = (usage.used(&name), usage.spends());
                match op {
                    Op::Reserve(n) => match usage.reserve(&name, n, Some(limit)) {
                        Ok(r) => open.push(r),
                        Err(e) => prop_assert!(e.used + e.reserved + n > limit),
                    },
                    Op::Commit(i) if !open.is_empty() => {
                        let r = open.swap_remove(i % open.len());
                        committed += r.amount();
                        usage.commit(r);
                    }
                    Op::Release(i) if !open.is_empty() => usage.release(open.swap_remove(i % open.len())),
                    _ => {}
                }
                let outstanding: u64 = open.iter().map(Reservation::amount).sum();
                prop_assert!(usage.used(&name) + usage.reserved(&name) <= limit);
                prop_assert_eq!(usage.used(&name), committed);
                prop_assert_eq!(usage.reserved(&name), outstanding);
                prop_assert_eq!(usage.used(&name) != used, usage.spends() != spends);
            }
        }
    }

    #[test]
    fn the_count_of_spends_is_neither_compared_nor_written() {
        let mut usage = BudgetUsage::default();
        let r = usage.reserve(&BudgetName::STEPS, 2, None).unwrap();
        usage.commit(r);
        let json = serde_json::to_string(&usage).unwrap();
        assert_eq!(json, r#"{"steps":{"used":2,"reserved":0}}"#);
        let read: BudgetUsage = serde_json::from_str(&json).unwrap();
        assert_eq!((read.spends(), usage.spends()), (0, 1));
        assert_eq!(read, usage);
    }

    #[test]
    fn exhausted_error_names_the_budget_and_figures() {
        let mut usage = BudgetUsage::default();
        let name = BudgetName::new("credits").unwrap();
        usage.commit(usage.clone().reserve(&name, 0, None).unwrap());
        let err = usage.reserve(&name, 3, Some(2)).unwrap_err();
        assert_eq!(
            (err.limit, err.used, err.reserved, err.requested),
            (2, 0, 0, 3)
        );
        assert!(err.to_string().starts_with("budget `credits` exhausted"));
    }

    #[test]
    fn overflowing_requests_are_refused_not_wrapped() {
        let mut usage = BudgetUsage::default();
        let name = BudgetName::STEPS;
        let r = usage.reserve(&name, u64::MAX, None).unwrap();
        usage.commit(r);
        assert!(usage.reserve(&name, 1, Some(u64::MAX)).is_err());
    }

    #[test]
    fn budget_names_validate() {
        for bad in ["", "Tool", "1x", "a b", "a/b"] {
            assert!(BudgetName::new(bad).is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::to_string(&BudgetName::STEPS).unwrap(),
            "\"steps\""
        );
    }
}

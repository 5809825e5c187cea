//! The overrun rule: what a model call a planner reported does to a budget. The engine
//! charges what was used, always (the tokens were spent); more than was left is recorded
//! as `budget_overrun`, and the gate's `Gate::overrun` then stops the run. A leaf module,
//! so that the planner's link (which applies it while the planner holds the run) and the
//! step (which charges what a planner reported afterwards) share it without an import
//! circle through the gate.

use rein_ledger::EntryKind;
use rein_policy::Budget;
use rein_run::{BudgetName, BudgetUsage};

/// The entry that charges `amount` of `name`, which a planner reported it used, given
/// `budget`, the run's `usage` and what this step `charged` of it already: `budget_consumed`
/// when it fits, `budget_overrun` when the provider reported more than was left (charged all
/// the same: the tokens were spent); none for nothing.
pub(crate) fn reported_charge(
    budget: &Budget,
    usage: &BudgetUsage,
    name: BudgetName,
    amount: u64,
    charged: u64,
) -> Option<EntryKind> {
    if amount == 0 {
        return None;
    }
    let mut counter = usage.counter(&name);
    counter.used = counter.used.saturating_add(charged);
    let limit = budget.limit(&name);
    let used = counter.used.saturating_add(amount);
    Some(match counter.fits(&name, amount, limit) {
        Err(over) => EntryKind::BudgetOverrun {
            name,
            amount,
            used,
            limit: over.limit,
        },
        Ok(()) => EntryKind::BudgetConsumed {
            name,
            amount,
            used,
            limit,
        },
    })
}

//! The gate's rules for budgets: what fits, what is left, charges, carves and overruns.

use super::*;

// --- budgets ------------------------------------------------------------------------------

#[test]
fn fits_and_left_follow_the_runs_usage() {
    let mut f = fixture(|b| b.budget("tool_calls", 3));
    assert_eq!(f.gate().left(&BudgetName::TOOL_CALLS), Some(3));
    assert_eq!(f.gate().fits(&BudgetName::TOOL_CALLS, 3), Ok(()));
    f.spend(BudgetName::TOOL_CALLS, 2);
    assert_eq!(f.gate().left(&BudgetName::TOOL_CALLS), Some(1));
    assert_eq!(
        f.gate().fits(&BudgetName::TOOL_CALLS, 2),
        Err(BudgetExhausted {
            name: BudgetName::TOOL_CALLS,
            limit: 3,
            used: 2,
            reserved: 0,
            requested: 2,
        })
    );
    assert_eq!(f.gate().left(&BudgetName::TOKENS), None);
    assert_eq!(f.gate().fits(&BudgetName::TOKENS, u64::MAX), Ok(()));
}

#[test]
fn a_charge_that_fits_is_the_entry_that_records_it() {
    let mut f = fixture(|b| b.budget("tool_calls", 2));
    f.spend(BudgetName::TOOL_CALLS, 1);
    assert_eq!(
        f.gate().charge(&BudgetName::TOOL_CALLS, 1),
        Ok(EntryKind::BudgetConsumed {
            name: BudgetName::TOOL_CALLS,
            amount: 1,
            used: 2,
            limit: Some(2),
        })
    );
    f.spend(BudgetName::TOOL_CALLS, 1);
    assert!(f.gate().charge(&BudgetName::TOOL_CALLS, 1).is_err());
    assert_eq!(
        f.gate().charge(&BudgetName::TOKENS, 7),
        Ok(EntryKind::BudgetConsumed {
            name: BudgetName::TOKENS,
            amount: 7,
            used: 7,
            limit: None,
        })
    );
}

#[test]
fn a_carve_takes_what_is_asked_and_what_is_left_of_the_rest() {
    let mut f = fixture(|b| b.budget("tool_calls", 5).budget("steps", 10));
    f.spend(BudgetName::STEPS, 4);
    let asked = Spend::from([
        (BudgetName::TOOL_CALLS, 2),
        (BudgetName::new("credits").expect("a name"), 7),
    ]);
    let carved = f.gate().carve(&asked).expect("fits");
    assert_eq!(
        carved,
        Spend::from([
            (BudgetName::TOOL_CALLS, 2),
            (BudgetName::STEPS, 6),
            (BudgetName::new("credits").expect("a name"), 7),
        ])
    );
    let too_much = Spend::from([(BudgetName::STEPS, 7)]);
    let refused = f.gate().carve(&too_much).expect_err("does not fit");
    assert_eq!((refused.name, refused.requested), (BudgetName::STEPS, 7));
}

#[test]
fn an_overrun_fails_the_run_naming_the_budget() {
    let mut f = fixture(|b| b.budget("tokens", 100));
    f.spend(BudgetName::TOKENS, 100);
    assert_eq!(f.gate().overrun(), None, "reaching the limit is no overrun");
    // A provider reported more than was left: charged all the same.
    f.apply(&EntryKind::BudgetOverrun {
        name: BudgetName::TOKENS,
        amount: 20,
        used: 120,
        limit: 100,
    });
    let failure = f.gate().overrun().expect("overrun");
    assert_eq!(failure.kind, FailureKind::BudgetExhausted);
    assert!(
        failure
            .message
            .starts_with("the `tokens` budget is overrun: 120 used, 20 past its limit of 100"),
        "{failure:?}"
    );
}

#[test]
fn a_reported_charge_past_what_was_left_is_an_overrun_charged_all_the_same() {
    let mut f = fixture(|b| b.budget("tokens", 100));
    f.spend(BudgetName::TOKENS, 60);
    let charge = |amount, charged| {
        reported_charge(
            f.proj.budget(),
            f.proj.run.usage(),
            BudgetName::TOKENS,
            amount,
            charged,
        )
    };
    assert_eq!(charge(0, 0), None, "nothing used, nothing recorded");
    assert_eq!(
        charge(40, 0),
        Some(EntryKind::BudgetConsumed {
            name: BudgetName::TOKENS,
            amount: 40,
            used: 100,
            limit: Some(100),
        })
    );
    // What this step charged already counts.
    assert_eq!(
        charge(40, 10),
        Some(EntryKind::BudgetOverrun {
            name: BudgetName::TOKENS,
            amount: 40,
            used: 110,
            limit: 100,
        })
    );
}

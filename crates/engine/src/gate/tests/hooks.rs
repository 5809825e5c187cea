//! The gate's rule for hooks: the first deny refuses, an approval only where a call can be
//! held, a budget only ever lowered, and nothing at the points that only observe.

use rein_ledger::{HookOutcome, HookPoint, HookRuling};

use crate::gate::HookRuled;

use super::*;

fn ruling(hook: &str, outcome: HookOutcome) -> HookRuling {
    HookRuling {
        hook: hook.to_owned(),
        command: None,
        script: None,
        outcome,
        reason: format!("{hook} says so"),
    }
}

fn budget(limit: u64) -> HookOutcome {
    HookOutcome::Budget {
        name: BudgetName::TOOL_CALLS,
        limit,
    }
}

#[test]
fn the_first_deny_refuses_and_names_its_hook() {
    let f = fixture(|b| b);
    let ruled = f.gate().hooks(
        HookPoint::BeforeTool,
        &[
            ruling("a", HookOutcome::RequireApproval),
            ruling("b", HookOutcome::Deny),
            ruling("c", HookOutcome::Deny),
        ],
    );
    assert_eq!(
        ruled.denied,
        Some(Rejection::HookDenied {
            hook: "b".into(),
            point: HookPoint::BeforeTool,
            reason: "b says so".into(),
        })
    );
    assert!(ruled.approval);
}

#[test]
fn an_approval_is_asked_only_where_a_call_can_be_held() {
    let f = fixture(|b| b);
    for point in [
        HookPoint::RunStart,
        HookPoint::BeforeModel,
        HookPoint::ChildStart,
    ] {
        let ruled = f
            .gate()
            .hooks(point, &[ruling("a", HookOutcome::RequireApproval)]);
        assert!(!ruled.approval, "{point}");
        assert!(
            matches!(&ruled.denied, Some(Rejection::HookDenied { reason, .. }) if reason.contains("where nothing can be approved")),
            "{point}: {ruled:?}"
        );
    }
}

#[test]
fn a_budget_is_lowered_to_the_least_asked_and_never_raised() {
    let f = fixture(|b| b.budget("tool_calls", 5));
    let gate = f.gate();
    let lowered = gate.hooks(
        HookPoint::BeforeTool,
        &[ruling("a", budget(4)), ruling("b", budget(2))],
    );
    assert_eq!(lowered.budgets, [(BudgetName::TOOL_CALLS, 2)]);
    assert_eq!(lowered.denied, None);
    let raised = gate.hooks(HookPoint::BeforeTool, &[ruling("a", budget(50))]);
    assert!(raised.budgets.is_empty(), "a higher limit narrows nothing");
    // A budget the run does not limit gets the hook's limit.
    let unlimited = fixture(|b| b);
    let set = unlimited
        .gate()
        .hooks(HookPoint::BeforeModel, &[ruling("a", budget(7))]);
    assert_eq!(set.budgets, [(BudgetName::TOOL_CALLS, 7)]);
}

#[test]
fn the_points_that_observe_ignore_every_verdict() {
    let f = fixture(|b| b.budget("tool_calls", 5));
    for point in [
        HookPoint::AfterModel,
        HookPoint::AfterTool,
        HookPoint::ChildEnd,
        HookPoint::Pause,
        HookPoint::RunEnd,
    ] {
        let ruled = f.gate().hooks(
            point,
            &[
                ruling("a", HookOutcome::Deny),
                ruling("b", HookOutcome::RequireApproval),
                ruling("c", budget(0)),
            ],
        );
        assert_eq!(ruled, crate::gate::HookRuled::default(), "{point}");
    }
}

/// The driver leaves the gate out when every hook at a point allowed (`rule_hooks`), which
/// holds only while its ruling on no verdict is nothing, wherever it is asked.
#[test]
fn no_verdict_refuses_nothing_asks_nothing_and_lowers_nothing_at_every_point() {
    let f = fixture(|b| b);
    for point in HookPoint::ALL {
        assert_eq!(f.gate().hooks(point, &[]), HookRuled::default(), "{point}");
    }
}

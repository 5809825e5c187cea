//! The gate's rules for decisions: the step limit, rejections, tool failures and the
//! deadline, sequences.

use super::*;

// --- decisions ----------------------------------------------------------------------------

#[test]
fn no_step_is_taken_past_max_steps() {
    let mut f = fixture(|b| b.max_steps(1));
    assert_eq!(f.gate().max_steps_reached(), None);
    f.apply(&EntryKind::Decision {
        step: 0,
        decision: Decision::transition(State::Explore, "go"),
    });
    assert_eq!(
        f.gate().max_steps_reached(),
        Some(Rejection::MaxSteps {
            limit: 1,
            state: State::Intake,
        })
    );
}

#[test]
fn a_rejection_is_handed_back_while_the_violations_budget_lasts() {
    let unknown = Rejection::UnknownTool {
        name: "nope".into(),
        known: Vec::new(),
    };
    let f = fixture(|b| b);
    let failure = f.gate().rejection_failure(&unknown).expect("fails the run");
    assert_eq!(failure.kind, FailureKind::PolicyViolation);
    assert_eq!(failure.message, unknown.to_string());

    let mut f = fixture(|b| b.on_violation(OnViolation::HandBack { limit: 1 }));
    assert_eq!(f.gate().rejection_failure(&unknown), None);
    f.spend(BudgetName::VIOLATIONS, 1);
    let failure = f.gate().rejection_failure(&unknown).expect("fails the run");
    assert_eq!(
        failure.message,
        format!("{unknown} (and the violations budget is exhausted)")
    );
}

#[test]
fn what_a_planner_cannot_correct_is_never_handed_back() {
    let f = fixture(|b| b.on_violation(OnViolation::HandBack { limit: 5 }));
    let max = Rejection::MaxSteps {
        limit: 3,
        state: State::Decide,
    };
    let failure = f.gate().rejection_failure(&max).expect("fatal");
    assert_eq!(
        (failure.kind, failure.message),
        (FailureKind::MaxSteps, max.to_string())
    );
    let steps = Rejection::BudgetExhausted(BudgetExhausted {
        name: BudgetName::STEPS,
        limit: 3,
        used: 3,
        reserved: 0,
        requested: 1,
    });
    let failure = f.gate().rejection_failure(&steps).expect("fatal");
    assert_eq!(failure.kind, FailureKind::BudgetExhausted);
    for fatal in [
        Rejection::UnsupportedDecision,
        Rejection::TooDeep { limit: 64 },
    ] {
        assert!(f.gate().rejection_failure(&fatal).is_some(), "{fatal:?}");
    }
}

// --- failures -----------------------------------------------------------------------------

#[test]
fn a_tool_failure_fails_the_run_only_under_fail_run() {
    let error = ToolError::failed("503 unavailable");
    let f = fixture(|b| b);
    let failure = f
        .gate()
        .tool_failure(&name("look"), &error)
        .expect("fails the run");
    assert_eq!(failure.kind, FailureKind::ToolFailed);
    // One wording for a single call, a batch's and a recovered one.
    assert_eq!(failure.message, "tool `look` failed: 503 unavailable");
    let f = fixture(|b| b.on_tool_error(OnToolError::HandBack));
    assert_eq!(f.gate().tool_failure(&name("look"), &error), None);
}

#[test]
fn a_failure_after_the_deadline_is_the_deadlines() {
    let mut f = fixture(|b| b.on_tool_error(OnToolError::HandBack));
    let error = ToolError::TimedOut {
        after: Duration::from_millis(5),
    };
    f.due = Some(Due {
        at: Timestamp::from_unix_millis(10),
        time_ms: 9,
        paused_ms: 0,
    });
    assert_eq!(f.gate().after_call(Some((&name("look"), &error))), None);
    assert!(!f.gate().deadline_passed());
    assert_eq!(f.gate().overdue(), None);
    f.now = Timestamp::from_unix_millis(10);
    assert!(f.gate().deadline_passed());
    let failure = f
        .gate()
        .after_call(Some((&name("look"), &error)))
        .expect("the deadline fails the run");
    assert_eq!(failure.kind, FailureKind::DeadlineExceeded);
    assert!(
        failure
            .message
            .starts_with("the run's deadline of 9 ms passed"),
        "{failure:?}"
    );
    // A call that succeeded is not failed by the deadline it met.
    assert_eq!(f.gate().after_call(None), None);
    assert_eq!(f.gate().overdue(), Some(failure));
}

#[test]
fn a_failed_call_before_the_deadline_follows_on_tool_error() {
    let f = fixture(|b| b);
    let error = ToolError::failed("boom");
    let failure = f
        .gate()
        .after_call(Some((&name("look"), &error)))
        .expect("fails the run");
    assert_eq!(failure.kind, FailureKind::ToolFailed);
}

// --- sequences ----------------------------------------------------------------------------

fn sequence(f: &mut Fixture) {
    let decision = Decision::sequence(
        [
            Decision::call_tool("look", json!({"q": 1}), ""),
            Decision::transition(State::Explore, "go"),
        ],
        "",
    )
    .expect("a sequence");
    f.apply(&EntryKind::Decision { step: 0, decision });
}

#[test]
fn a_sequence_goes_member_by_member_until_the_last() {
    let mut f = fixture(|b| b);
    assert_eq!(f.gate().next_member(), NextMember::Done);
    sequence(&mut f);
    assert!(matches!(f.gate().next_member(), NextMember::Apply(0, _)));
    for index in 0..2 {
        f.apply(&EntryKind::SequenceMember {
            step: 0,
            index,
            kind: "call_tool".into(),
        });
    }
    assert_eq!(f.gate().next_member(), NextMember::Done);
}

#[test]
fn a_sequence_stops_at_a_member_that_did_not_take_effect() {
    let mut f = fixture(|b| b.on_tool_error(OnToolError::HandBack));
    sequence(&mut f);
    f.apply(&EntryKind::SequenceMember {
        step: 0,
        index: 0,
        kind: "call_tool".into(),
    });
    f.apply(&EntryKind::ToolCall {
        tool: name("look"),
        input: json!({"q": 1}).into(),
        input_hash: Digest::of_json(&json!({"q": 1})),
        attempt: 1,
        idempotent: true,
    });
    f.apply(&EntryKind::ToolError {
        tool: name("look"),
        attempt: 1,
        duration_ms: 0,
        error: ToolError::failed("boom"),
        will_retry: false,
    });
    assert_eq!(
        f.gate().next_member(),
        NextMember::Stop("tool `look` failed: boom".into())
    );
}

#[test]
fn after_an_interrupt_no_member_calls_a_tool_or_delegates() {
    let mut f = fixture(|b| b);
    let call = Decision::call_tool("look", json!({"q": 1}), "");
    let go = Decision::transition(State::Explore, "go");
    assert_eq!(f.gate().member_may_start(&call), Ok(()));
    f.interrupting = true;
    assert_eq!(f.gate().member_may_start(&call), Err(INTERRUPTED));
    assert_eq!(f.gate().member_may_start(&go), Ok(()));
}

// --- the end ------------------------------------------------------------------------------

#[test]
fn a_result_is_checked_against_the_runs_result_schema() {
    let f = fixture(|b| b);
    assert!(f.gate().result_errors(&json!(null)).is_empty());
    let f = fixture(|b| b.result_schema(json!({"type": "object", "required": ["answer"]})));
    assert!(f.gate().result_errors(&json!({"answer": 42})).is_empty());
    let errors = f.gate().result_errors(&json!({}));
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("answer"), "{errors:?}");
}

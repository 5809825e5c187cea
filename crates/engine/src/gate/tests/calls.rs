//! The gate's rules for calls: admission (single and batched), the cache and the circuit,
//! approvals, and calls recovered after a crash.

use super::*;

// --- admit --------------------------------------------------------------------------------

#[test]
fn admit_refuses_an_unregistered_tool_first() {
    let f = fixture(|b| b);
    let Err(Rejection::UnknownTool { name, known }) = f.gate().admit("nope", &json!(1)) else {
        panic!("an unknown tool is refused as such")
    };
    assert_eq!(name, "nope");
    assert_eq!(known, ["look", "write", "wipe"]);
}

#[test]
fn admit_checks_the_input_schema_before_eligibility() {
    let f = fixture(|b| b);
    // `write` is not eligible in intake either: the schema is checked first.
    let refused = f.gate().admit("write", &json!({})).map(|_| ());
    assert!(
        matches!(&refused, Err(Rejection::InvalidInput { tool, .. }) if tool.as_str() == "write"),
        "{refused:?}"
    );
}

#[test]
fn admit_refuses_a_tool_not_eligible_in_the_runs_state() {
    let mut f = fixture(|b| b);
    let refused = f.gate().admit("write", &json!({"q": 1})).map(|_| ());
    assert!(
        matches!(refused, Err(Rejection::Ineligible(_))),
        "{refused:?}"
    );
    f.move_to_act();
    let entry = f.gate().admit("write", &json!({"q": 1})).expect("admitted");
    assert_eq!(entry.spec.name().as_str(), "write");
}

#[test]
fn admit_batch_refuses_empty_and_oversized_batches() {
    let f = fixture(|b| b);
    assert_eq!(
        f.gate().admit_batch(&[], 8).map(|_| ()),
        Err(Rejection::EmptyBatch)
    );
    let calls = vec![ProposedCall::new("look", json!({"q": 1}), ""); 3];
    assert_eq!(
        f.gate().admit_batch(&calls, 2).map(|_| ()),
        Err(Rejection::BatchTooLarge { calls: 3, limit: 2 })
    );
}

#[test]
fn admit_batch_names_the_member_a_check_refused() {
    let mut f = fixture(|b| b);
    f.move_to_explore();
    let calls = [
        ProposedCall::new("look", json!({"q": 1}), ""),
        ProposedCall::new("nope", json!({"q": 1}), ""),
    ];
    let refused = f.gate().admit_batch(&calls, 8).map(|_| ());
    assert!(
        matches!(&refused, Err(Rejection::InBatch { index: 1, source })
            if matches!(**source, Rejection::UnknownTool { .. })),
        "{refused:?}"
    );
}

#[test]
fn admit_batch_refuses_a_call_proposed_twice_and_admits_the_rest_in_order() {
    let mut f = fixture(|b| b);
    f.move_to_explore();
    let calls = [
        ProposedCall::new("look", json!({"q": 1}), ""),
        ProposedCall::new("look", json!({"q": 2}), ""),
        ProposedCall::new("look", json!({"q": 1}), "again"),
    ];
    assert_eq!(
        f.gate().admit_batch(&calls, 8).map(|_| ()),
        Err(Rejection::DuplicateCall {
            tool: name("look"),
            first: 0,
            second: 2,
        })
    );
    let admitted = f.gate().admit_batch(&calls[..2], 8).expect("admitted");
    let hashes: Vec<Digest> = admitted.iter().map(|(_, hash)| *hash).collect();
    assert_eq!(
        hashes,
        [
            Digest::of_json(&json!({"q": 1})),
            Digest::of_json(&json!({"q": 2}))
        ]
    );
}

#[test]
fn no_tool_call_starts_after_a_graceful_interrupt() {
    let mut f = fixture(|b| b);
    assert!(f.gate().may_call_tools());
    f.interrupting = true;
    assert!(!f.gate().may_call_tools());
}

// --- before_run, approvals ----------------------------------------------------------------

#[test]
fn the_cache_serves_a_cacheable_call_before_the_circuit_is_asked() {
    let mut f = fixture(|b| b);
    f.move_to_explore();
    let look = f.gate().admit("look", &json!({"q": 1})).expect("admitted");
    let hash = Digest::of_json(&json!({"q": 1}));
    let mut cache = Cache::new();
    let open = CircuitState::Open {
        retry_after: Duration::from_secs(1),
    };
    assert_eq!(
        f.gate()
            .before_run(&look, hash, CircuitState::Closed, &cache),
        BeforeRun::Run
    );
    let output = Payload::Inline(json!("seen"));
    cache.insert((name("look"), hash), output.clone());
    assert_eq!(
        f.gate().before_run(&look, hash, open, &cache),
        BeforeRun::Cached(output)
    );
}

#[test]
fn an_open_circuit_refuses_before_any_attempt_unless_a_trial_is_due() {
    let mut f = fixture(|b| b);
    f.move_to_act();
    let write = f.gate().admit("write", &json!({"q": 1})).expect("admitted");
    let hash = Digest::of_json(&json!({"q": 1}));
    let cache = Cache::new();
    let retry_after = Duration::from_secs(3);
    assert_eq!(
        f.gate()
            .before_run(&write, hash, CircuitState::Open { retry_after }, &cache),
        BeforeRun::Refused(ToolError::CircuitOpen {
            tool: name("write"),
            retry_after,
        })
    );
    let trial = CircuitState::Open {
        retry_after: Duration::ZERO,
    };
    assert_eq!(
        f.gate().before_run(&write, hash, trial, &cache),
        BeforeRun::Run
    );
}

#[test]
fn approval_is_needed_as_the_policy_says() {
    let mut f = fixture(|b| b);
    f.move_to_act();
    let gate = f.gate();
    let wipe = gate.admit("wipe", &json!({"q": 1})).expect("admitted");
    let look = gate.admit("look", &json!({"q": 1})).expect("admitted");
    assert_eq!(
        gate.needs_approval(&wipe, false),
        Some(ApprovalReason::Destructive)
    );
    assert_eq!(gate.needs_approval(&look, false), None);
    assert_eq!(gate.needs_approval(&look, true), Some(ApprovalReason::Hook));
}

// --- recovered calls ----------------------------------------------------------------------

fn open(tool: &str, idempotent: bool) -> OpenAttempt {
    OpenAttempt {
        tool: name(tool),
        input: Some(json!({"q": 1}).into()),
        attempt: 2,
        idempotent,
    }
}

#[test]
fn an_in_doubt_call_runs_again_only_when_idempotent_or_retry_all() {
    let f = fixture(|b| b);
    let refused = f.gate().readmit(&open("write", false), false).map(|_| ());
    let failure = refused.expect_err("not idempotent");
    assert_eq!(failure.kind, FailureKind::InDoubtToolCall);
    assert!(
        failure.message.contains("attempt 2 of `write`"),
        "{failure:?}"
    );
    assert!(f.gate().readmit(&open("write", false), true).is_ok());
    assert!(f.gate().readmit(&open("write", true), false).is_ok());
}

#[test]
fn an_in_doubt_call_of_a_tool_no_longer_registered_fails_the_run() {
    let f = fixture(|b| b);
    let failure = f
        .gate()
        .readmit(&open("gone", true), false)
        .map(|_| ())
        .expect_err("unregistered");
    assert_eq!(failure.kind, FailureKind::InDoubtToolCall);
    assert_eq!(
        failure.message,
        "the in-doubt call's tool `gone` is no longer registered"
    );
}

#[test]
fn a_batch_member_cut_short_runs_again_by_the_in_doubt_rule() {
    let f = fixture(|b| b);
    let gate = f.gate();
    assert!(gate.readmit_member(0, "write", None, false).is_ok());
    let in_doubt = gate
        .readmit_member(1, "write", Some(&open("write", false)), false)
        .map(|_| ())
        .expect_err("may have run");
    assert_eq!(in_doubt.kind, FailureKind::InDoubtToolCall);
    assert!(
        gate.readmit_member(1, "write", Some(&open("write", false)), true)
            .is_ok()
    );
    let gone = gate
        .readmit_member(2, "gone", None, false)
        .map(|_| ())
        .expect_err("unregistered");
    assert_eq!(
        gone.message,
        "call 2 of the batch names tool `gone`, which is no longer registered"
    );
}

#[test]
fn a_recovered_retry_needs_an_idempotent_registered_tool_and_its_unit() {
    let mut f = fixture(|b| b.budget("tool_calls", 1));
    assert!(f.gate().retry(&open("write", true), false).is_ok());
    assert!(matches!(
        f.gate().retry(&open("write", false), false),
        Err(None)
    ));
    assert!(matches!(
        f.gate().retry(&open("gone", true), false),
        Err(None)
    ));
    f.spend(BudgetName::TOOL_CALLS, 1);
    let Err(Some(exhausted)) = f.gate().retry(&open("write", true), false) else {
        panic!("the unit does not fit")
    };
    assert_eq!((exhausted.limit, exhausted.used), (1, 1));
    // A unit a crash left paid needs no budget.
    assert!(f.gate().retry(&open("write", true), true).is_ok());
}

//! The gate's rules, one test or more per rule, without a runtime.

use std::sync::Arc;
use std::time::Duration;

use rein_ledger::EntryKind;
use rein_planner::ScriptedPlanner;
use rein_policy::{ApprovalReason, BudgetExhausted, OnToolError, OnViolation};
use rein_resilience::CircuitState;
use rein_run::{
    BudgetName, Decision, Digest, FailureKind, Payload, ProposedCall, RunId, Spend, State,
    Timestamp, ToolName,
};
use rein_tool::{Annotations, Tool, ToolError, ToolOutput, ToolSpec};
use serde_json::{Map, Value, json};

use super::{BeforeRun, Cache, Gate, INTERRUPTED, NextMember};
use crate::builder::EngineBuilder;
use crate::deadline::Due;
use crate::overrun::reported_charge;
use crate::progress::OpenAttempt;
use crate::project::Projection;
use crate::rejection::Rejection;
use crate::shared::Shared;

struct Echo(ToolSpec);

impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(input))
    }
}

fn tool(name: &str, annotations: Annotations) -> Echo {
    Echo(
        ToolSpec::new(name.parse().expect("a name"), "a test tool")
            .with_input_schema(json!({"type": "object", "required": ["q"]}))
            .with_annotations(annotations),
    )
}

/// An engine with `look` (read-only, cacheable), `write` (side-effecting, idempotent) and
/// `wipe` (destructive: approval), and a fresh run of it in `intake`.
struct Fixture {
    shared: Shared,
    proj: Projection,
    interrupting: bool,
    due: Option<Due>,
    now: Timestamp,
}

fn fixture(configure: impl FnOnce(EngineBuilder) -> EngineBuilder) -> Fixture {
    let builder = EngineBuilder::default()
        .planner(ScriptedPlanner::new([]))
        .tool(tool("look", Annotations::read_only().with_cacheable(true)))
        .tool(tool(
            "write",
            Annotations::side_effecting().with_idempotent(true),
        ))
        .tool(tool("wipe", Annotations::destructive()));
    let shared = configure(builder).into_shared().expect("builds");
    let id: RunId = "r1".parse().expect("an id");
    let started = EntryKind::RunStarted {
        goal: "g".into(),
        vars: Map::new(),
        policy: Arc::clone(&shared.policy.value),
    };
    let proj = Projection::start(
        id,
        &started,
        Timestamp::from_unix_millis(1),
        shared.policy.snapshot.budget.clone(),
    )
    .expect("starts");
    Fixture {
        shared,
        proj,
        interrupting: false,
        due: None,
        now: Timestamp::from_unix_millis(1),
    }
}

impl Fixture {
    fn gate(&self) -> Gate<'_> {
        Gate::new(
            &self.shared.policy,
            &self.shared.tools,
            &self.proj,
            self.interrupting,
            self.due,
            self.now,
        )
    }

    fn apply(&mut self, kind: &EntryKind) {
        self.proj
            .apply(kind, Timestamp::from_unix_millis(2))
            .expect("applies");
    }

    fn spend(&mut self, name: BudgetName, amount: u64) {
        let used = self.proj.run.usage().used(&name) + amount;
        let limit = self.proj.budget().limit(&name);
        self.apply(&EntryKind::BudgetConsumed {
            name,
            amount,
            used,
            limit,
        });
    }

    fn move_to_explore(&mut self) {
        self.apply(&EntryKind::Transition {
            from: State::Intake,
            to: State::Explore,
            reason: "test".into(),
        });
    }

    fn move_to_act(&mut self) {
        for (from, to) in [
            (State::Intake, State::Explore),
            (State::Explore, State::Decide),
            (State::Decide, State::Act),
        ] {
            self.apply(&EntryKind::Transition {
                from,
                to,
                reason: "test".into(),
            });
        }
    }
}

fn name(tool: &str) -> ToolName {
    tool.parse().expect("a name")
}

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
        gate.needs_approval(&wipe),
        Some(ApprovalReason::Destructive)
    );
    assert_eq!(gate.needs_approval(&look), None);
}

// --- recovered calls ----------------------------------------------------------------------

fn open(tool: &str, idempotent: bool) -> OpenAttempt {
    OpenAttempt {
        tool: name(tool),
        input: Some(json!({"q": 1})),
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
        input: json!({"q": 1}),
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

//! Approval enforcement: which calls need approval, and that every way of not getting a clear
//! "yes" for the exact input — a denial, a timeout, an approver error, no approver, a response
//! about another input — denies the call (fail closed). Every request and answer is recorded
//! with who decided and why.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein::ToolSpec;
use rein::ledger::{EntryKind, Violation};
use rein::policy::ApprovalReason;
use rein::run::FailureKind;
use rein::tool::Digest;
use rein::{
    Annotations, ApprovalPolicy, ApprovalRequest, ApprovalResponse, Approver, ApproverError,
    AutoApprover, Decision, DenyApprover, Engine, RiskLevel, RunStatus, ScriptStep,
    ScriptedPlanner, State, Value, json,
};
use support::{count, echo, violations, walk_to};

/// What the ledger must show for one approval.
#[derive(Debug)]
struct Expect {
    granted: bool,
    approver: &'static str,
    reason_contains: &'static str,
}

fn deploy_input() -> Value {
    json!({"env": "prod"})
}

/// Runs a script that calls the destructive tool `deploy` in act, under `approver` (none if
/// `None`) and `policy`, and checks the approval trail against `expect`.
async fn check<A: Approver>(approver: Option<A>, policy: ApprovalPolicy, expect: Expect) {
    let (deploy, probe) = echo("deploy", Annotations::destructive());
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", deploy_input(), "ship it"),
        ),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("shipped", json!("ok"))),
    ]);
    let mut builder = Engine::builder()
        .tool(deploy)
        .approvals(policy)
        .planner(ScriptedPlanner::new(steps));
    if let Some(approver) = approver {
        builder = builder.approver(approver);
    }
    let engine = builder.build().expect("engine builds");
    let run = engine.run("deploy").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("ledger verifies");

    let hash = Digest::of_json(&deploy_input());
    let requested: Vec<_> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ApprovalRequested {
                tool,
                input_hash,
                reason,
            } => Some((tool.as_str().to_owned(), *input_hash, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        requested,
        [(
            "deploy".to_owned(),
            hash,
            ApprovalReason::Destructive.to_string()
        )],
        "{expect:?}"
    );
    let answers: Vec<_> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ApprovalGranted {
                input_hash,
                approver,
                reason,
                ..
            } => Some((true, *input_hash, approver.clone(), reason.clone())),
            EntryKind::ApprovalDenied {
                input_hash,
                approver,
                reason,
                ..
            } => Some((false, *input_hash, approver.clone(), reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 1, "one answer per request: {answers:?}");
    let (granted, answered_hash, approver, reason) = answers[0].clone();
    assert_eq!(granted, expect.granted, "{reason}");
    assert_eq!(answered_hash, hash);
    assert_eq!(approver, expect.approver);
    assert!(
        reason.contains(expect.reason_contains),
        "{reason:?} should contain {:?}",
        expect.reason_contains
    );

    if expect.granted {
        assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
        assert_eq!(probe.calls(), 1);
        assert_eq!(violations(&ledger), []);
    } else {
        assert_eq!(probe.calls(), 0, "a denied call never runs");
        assert_eq!(count(&ledger, "tool_call"), 0);
        assert_eq!(count(&ledger, "budget_consumed"), 0);
        assert_eq!(violations(&ledger), [(Violation::ApprovalDenied, false)]);
        assert_eq!(run.status(), RunStatus::Failed);
        let failure = run.failure().expect("a failure");
        assert_eq!(failure.kind, FailureKind::PolicyViolation);
        assert!(failure.message.contains(expect.approver), "{failure:?}");
    }
}

/// Never answers in time.
#[derive(Debug)]
struct Sleepy;

impl Approver for Sleepy {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(ApprovalResponse::grant(request, "sleepy", "too late"))
    }

    fn name(&self) -> &str {
        "sleepy"
    }
}

/// Cannot decide.
#[derive(Debug)]
struct Broken;

impl Approver for Broken {
    async fn decide(&self, _: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        Err(ApproverError::new("approval service offline"))
    }
}

/// Grants — but for another input than the one asked about.
#[derive(Debug)]
struct Sly;

impl Approver for Sly {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        let spec =
            ToolSpec::new(request.tool().clone(), "").with_annotations(Annotations::destructive());
        let other = ApprovalRequest::new(
            request.run_id().clone(),
            request.step(),
            request.state(),
            &spec,
            json!({"env": "staging"}),
            request.reason(),
        );
        Ok(ApprovalResponse::grant(&other, "sly", "staging is fine"))
    }
}

#[tokio::test]
async fn a_grant_lets_the_call_run() {
    let expect = Expect {
        granted: true,
        approver: "auto",
        reason_contains: "auto-approver",
    };
    check(Some(AutoApprover), ApprovalPolicy::default(), expect).await;
}

#[tokio::test]
async fn a_denial_fails_the_run_without_running_the_tool() {
    let expect = Expect {
        granted: false,
        approver: "deny",
        reason_contains: "deny-approver",
    };
    check(Some(DenyApprover), ApprovalPolicy::default(), expect).await;
}

#[tokio::test(start_paused = true)]
async fn an_approver_that_does_not_answer_in_time_denies() {
    let policy = ApprovalPolicy::default().with_timeout(Duration::from_secs(1));
    let expect = Expect {
        granted: false,
        // The approver that failed is on record, by the name it gives.
        approver: "sleepy",
        reason_contains: "did not answer within 1000 ms",
    };
    check(Some(Sleepy), policy, expect).await;
}

#[tokio::test]
async fn an_approver_error_denies() {
    let expect = Expect {
        granted: false,
        // …or by its type's name when it gives none.
        approver: "Broken",
        reason_contains: "approval service offline",
    };
    check(Some(Broken), ApprovalPolicy::default(), expect).await;
}

#[tokio::test]
async fn no_approver_configured_denies() {
    let expect = Expect {
        granted: false,
        approver: "engine",
        reason_contains: "no approver is configured",
    };
    check(None::<AutoApprover>, ApprovalPolicy::default(), expect).await;
}

#[tokio::test]
async fn a_response_about_another_input_is_refused() {
    let expect = Expect {
        granted: false,
        approver: "sly",
        reason_contains: "an approval never carries over",
    };
    check(Some(Sly), ApprovalPolicy::default(), expect).await;
}

/// Remembers every request it sees and grants only staging.
#[derive(Debug, Default)]
struct StagingOnly {
    seen: Arc<Mutex<Vec<ApprovalRequest>>>,
}

impl Approver for StagingOnly {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        self.seen.lock().expect("lock").push(request.clone());
        Ok(if request.input()["env"] == "staging" {
            ApprovalResponse::grant(request, "release-manager", "staging is fine")
        } else {
            ApprovalResponse::deny(request, "release-manager", "prod is frozen")
        })
    }
}

#[tokio::test]
async fn every_call_is_approved_for_its_own_input() {
    let seen = Arc::<Mutex<Vec<ApprovalRequest>>>::default();
    let (deploy, probe) = echo("deploy", Annotations::destructive());
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", json!({"env": "staging"}), "stage"),
        ),
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", json!({"env": "prod"}), "ship"),
        ),
    ]);
    let engine = Engine::builder()
        .tool(deploy)
        .approver(StagingOnly {
            seen: Arc::clone(&seen),
        })
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("deploy twice").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(probe.calls(), 1, "staging ran, prod did not");
    assert_eq!(count(&ledger, "approval_requested"), 2);
    assert_eq!(count(&ledger, "approval_granted"), 1);
    assert_eq!(count(&ledger, "approval_denied"), 1);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PolicyViolation)
    );

    // The approver saw what it needs to decide: the run, the state, the tool, its risk and input.
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].run_id(), run.id());
    assert_eq!(seen[0].state(), State::Act);
    assert_eq!(seen[0].tool().as_str(), "deploy");
    assert_eq!(seen[0].risk(), RiskLevel::High);
    assert_eq!(seen[0].reason(), ApprovalReason::Destructive);
    assert_eq!(seen[1].input(), &json!({"env": "prod"}));
    assert_eq!(
        seen[1].input_hash(),
        Digest::of_json(&json!({"env": "prod"}))
    );
}

/// Calls tool `name` (annotated `annotations`) once in act under `policy` with no approver;
/// returns whether approval was asked for.
async fn needs_approval(name: &str, annotations: Annotations, policy: ApprovalPolicy) -> bool {
    let (tool, probe) = echo(name, annotations);
    let mut steps = walk_to(State::Act);
    steps.push(ScriptStep::expect(
        State::Act,
        Decision::call_tool(name, json!({}), "go"),
    ));
    let engine = Engine::builder()
        .tool(tool)
        .approvals(policy)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("policy").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let asked = count(&ledger, "approval_requested") == 1;
    // Without an approver, asking means denying.
    assert_eq!(probe.calls(), usize::from(!asked), "{name}");
    asked
}

#[tokio::test]
async fn the_approval_policy_decides_which_calls_need_approval() {
    let name = |s: &str| s.parse().expect("tool name");
    let default = ApprovalPolicy::default;
    assert!(needs_approval("rm", Annotations::destructive(), default()).await);
    assert!(
        !needs_approval(
            "rm",
            Annotations::destructive(),
            default().exempt(name("rm"))
        )
        .await
    );
    assert!(
        !needs_approval(
            "rm",
            Annotations::destructive(),
            ApprovalPolicy::annotated_only()
        )
        .await
    );
    assert!(!needs_approval("write", Annotations::side_effecting(), default()).await);
    let risky = Annotations::side_effecting().with_risk(RiskLevel::High);
    assert!(needs_approval("write", risky, default()).await);
    assert!(
        needs_approval(
            "read",
            Annotations::read_only(),
            default().require(name("read"))
        )
        .await
    );
    let annotated = Annotations::read_only().with_approval_required();
    // An annotation asking for approval wins over an exemption.
    assert!(needs_approval("read", annotated, default().exempt(name("read"))).await);
}

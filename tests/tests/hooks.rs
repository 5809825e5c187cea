//! Hooks (DESIGN §7, issue 26): in-process hooks at every point of a run, whose verdicts
//! can only narrow — allow, deny (handed back, ledgered), narrow (approval, a lower budget),
//! failing closed before an action, only observing after one; in batches and sub-runs;
//! recorded before they are acted on, so a resume after a crash does not ask again; part
//! of the run's policy snapshot, so a resume without them refuses.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein::hook::{
    HookError, HookOutcome, HookPayload, HookPoint, HookSpec, HookVerdict, Narrowing,
};
use rein::ledger::{EntryKind, Violation};
use rein::planner::{MockPlanner, ProposedCall};
use rein::policy::OnViolation;
use rein::run::{BudgetName, EvidenceKind, FailureKind, NoteSource};
use rein::{
    Annotations, AutoApprover, BuildError, Decision, Engine, EngineBuilder, EngineError, Ledger,
    PlanRequest, RunStatus, ScriptStep, ScriptedPlanner, State, json,
};
use support::{CrashingLedgers, Probe, assert_chain, count, echo, violations, walk_to};

/// What the hooks were shown, in order.
type Seen = Arc<Mutex<Vec<HookPayload>>>;

/// A hook at `points` that records what it is shown and answers `verdict(payload)`.
fn hook(
    name: &str,
    points: &[HookPoint],
    seen: &Seen,
    verdict: impl Fn(&HookPayload) -> HookVerdict + Send + Sync + 'static,
) -> HookSpec {
    let seen = Arc::clone(seen);
    let verdict = Arc::new(verdict);
    HookSpec::from_fn(name, points.iter().copied(), move |payload| {
        let answer = verdict(&payload);
        seen.lock().expect("not poisoned").push((*payload).clone());
        async move { answer }
    })
}

fn points(seen: &Seen) -> Vec<HookPoint> {
    seen.lock()
        .expect("not poisoned")
        .iter()
        .map(|p| p.point)
        .collect()
}

fn violation_notes(request: &PlanRequest<'_>) -> usize {
    request
        .evidence()
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EvidenceKind::SystemNote {
                    source: NoteSource::Violation,
                    ..
                }
            )
        })
        .count()
}

fn has_result(request: &PlanRequest<'_>) -> bool {
    request
        .evidence()
        .iter()
        .any(|e| matches!(&e.kind, EvidenceKind::ToolResult { .. }))
}

/// Explores, proposes `call` until it has a result or a refusal, then finishes.
fn planner(call: Decision) -> MockPlanner {
    MockPlanner::new(move |request| {
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "start"),
            State::Explore if !has_result(request) && violation_notes(request) == 0 => call.clone(),
            State::Explore => Decision::transition(State::Decide, "enough"),
            _ => Decision::finish("done", json!(violation_notes(request))),
        })
    })
}

fn look() -> Decision {
    Decision::call_tool("look", json!({"q": 1}), "look")
}

/// An engine with `look` (read-only), hand-back on, and `hooks`.
fn hooked(call: Decision, hooks: Vec<HookSpec>) -> (EngineBuilder, Probe) {
    let (tool, probe) = echo("look", Annotations::read_only());
    let builder = hooks.into_iter().fold(
        Engine::builder()
            .tool(tool)
            .planner(planner(call))
            .on_violation(OnViolation::HandBack { limit: 3 })
            .budget("tool_calls", 5),
        EngineBuilder::hook,
    );
    (builder, probe)
}

/// A `hook_verdicts` entry: point, tool, and each ruling (hook, outcome, reason).
type Recorded = (
    HookPoint,
    Option<String>,
    Vec<(String, HookOutcome, String)>,
);

/// The `hook_verdicts` entries.
fn verdicts(ledger: &Ledger) -> Vec<Recorded> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::HookVerdicts {
                point,
                tool,
                rulings,
                ..
            } => Some((
                *point,
                tool.as_ref().map(ToString::to_string),
                rulings
                    .iter()
                    .map(|r| (r.hook.clone(), r.outcome.clone(), r.reason.clone()))
                    .collect(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_hook_that_allows_changes_nothing() {
    let seen = Seen::default();
    let allow = hook("allow", &[HookPoint::BeforeTool], &seen, |_| {
        HookVerdict::Allow
    });
    let (builder, probe) = hooked(look(), vec![allow]);
    let engine = builder.build().expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed);
    assert_eq!(probe.calls(), 1);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert!(verdicts(&ledger).is_empty(), "an allow is not ledgered");
    let seen = seen.lock().expect("not poisoned");
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].tool.as_ref().map(rein::ToolName::as_str),
        Some("look")
    );
    assert_eq!(seen[0].input.as_deref(), Some(&json!({"q": 1})));
}

#[tokio::test]
async fn a_denied_call_is_handed_back_to_the_planner_and_ledgered() {
    let seen = Seen::default();
    let deny = hook("guard", &[HookPoint::BeforeTool], &seen, |_| {
        HookVerdict::deny("not today")
    });
    let (builder, probe) = hooked(look(), vec![deny]);
    let engine = builder.build().expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 0, "a denied call never runs");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(
        verdicts(&ledger),
        [(
            HookPoint::BeforeTool,
            Some("look".to_owned()),
            vec![(
                "guard".to_owned(),
                HookOutcome::Deny,
                "not today".to_owned()
            )]
        )]
    );
    assert_eq!(violations(&ledger), [(Violation::HookDenied, true)]);
    let note = ledger
        .entries()
        .iter()
        .find_map(|e| match e.event() {
            EntryKind::PolicyViolation { message, .. } => Some(message.clone()),
            _ => None,
        })
        .expect("a violation");
    assert!(
        note.contains("hook `guard`") && note.contains("not today"),
        "{note}"
    );
}

#[tokio::test]
async fn a_hook_that_requires_approval_sends_the_call_to_the_approver() {
    let seen = Seen::default();
    let ask = || {
        hook("ask", &[HookPoint::BeforeTool], &Seen::default(), |_| {
            HookVerdict::Narrow(Narrowing::require_approval("a person looks first"))
        })
    };
    let _ = seen;
    // No approver: approvals fail closed, so the call is denied and handed back.
    let (builder, probe) = hooked(look(), vec![ask()]);
    let engine = builder.build().expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(probe.calls(), 0);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(count(&ledger, "approval_requested"), 1);
    assert_eq!(violations(&ledger), [(Violation::ApprovalDenied, true)]);

    // An approver that grants: the call runs after the grant.
    let (builder, probe) = engine_with_approver(ask());
    let engine = builder.build().expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed);
    assert_eq!(probe.calls(), 1);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let requested = ledger
        .entries()
        .iter()
        .find_map(|e| match e.event() {
            EntryKind::ApprovalRequested { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .expect("approval requested");
    assert!(requested.contains("hook"), "{requested}");
    assert_eq!(count(&ledger, "approval_granted"), 1);
    assert_eq!(
        verdicts(&ledger)[0].2[0].1,
        HookOutcome::RequireApproval,
        "the narrowing is ledgered"
    );
}

fn engine_with_approver(hook: HookSpec) -> (EngineBuilder, Probe) {
    let (builder, probe) = hooked(look(), vec![hook]);
    (builder.approver(AutoApprover), probe)
}

#[tokio::test]
async fn a_hook_can_lower_a_budget_but_never_raise_it() {
    // Lowered to nothing: the call is refused over budget, and the narrowing is ledgered.
    let lower = hook("lower", &[HookPoint::BeforeTool], &Seen::default(), |_| {
        HookVerdict::Narrow(Narrowing::budget(BudgetName::TOOL_CALLS, 0, "enough calls"))
    });
    let (builder, probe) = hooked(look(), vec![lower]);
    let engine = builder.build().expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(probe.calls(), 0);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(count(&ledger, "policy_narrowed"), 1);
    assert_eq!(violations(&ledger), [(Violation::BudgetExhausted, true)]);

    // Asking for more than the run has (5) is no widening: the limit stays, nothing is
    // narrowed. A hook has no verdict that allows more (the type cannot say it).
    let raise = hook("raise", &[HookPoint::BeforeTool], &Seen::default(), |_| {
        HookVerdict::Narrow(Narrowing::budget(BudgetName::TOOL_CALLS, 50, "more please"))
    });
    let (builder, probe) = hooked(look(), vec![raise]);
    let engine = builder.build().expect("builds");
    let run = engine.run("look").await.expect("runs");
    assert_eq!(probe.calls(), 1);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(count(&ledger, "policy_narrowed"), 0);
    assert_eq!(
        engine.policy().budget.limit(&BudgetName::TOOL_CALLS),
        Some(5),
        "the limit is the policy's"
    );
}

struct Failing;

impl rein::hook::Hook for Failing {
    async fn check(&self, _: &HookPayload) -> Result<HookVerdict, HookError> {
        Err(HookError::new("the policy server is down"))
    }
}

struct Panicking;

impl rein::hook::Hook for Panicking {
    async fn check(&self, _: &HookPayload) -> Result<HookVerdict, HookError> {
        panic!("hook bug")
    }
}

struct Slow;

impl rein::hook::Hook for Slow {
    async fn check(&self, _: &HookPayload) -> Result<HookVerdict, HookError> {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(HookVerdict::Allow)
    }
}

#[tokio::test(start_paused = true)]
async fn a_hook_that_fails_panics_times_out_or_gives_no_reason_denies() {
    let cases = [
        (
            HookSpec::new("failing", [HookPoint::BeforeTool], Failing),
            "it failed: the policy server is down; hooks asked before an action fail closed",
        ),
        (
            HookSpec::new("panicking", [HookPoint::BeforeTool], Panicking),
            "it panicked: hook bug",
        ),
        (
            HookSpec::new("slow", [HookPoint::BeforeTool], Slow)
                .timeout(Duration::from_millis(100)),
            "it did not answer within 100 ms",
        ),
        (
            hook("mute", &[HookPoint::BeforeTool], &Seen::default(), |_| {
                HookVerdict::deny(" ")
            }),
            "it denied without giving a reason",
        ),
    ];
    for (spec, reason) in cases {
        let name = spec.id().name.clone();
        let (builder, probe) = hooked(look(), vec![spec]);
        let engine = builder.build().expect("builds");
        let run = engine.run("look").await.expect("runs");
        assert_eq!(probe.calls(), 0, "{name}: fails closed");
        let ledger = engine.ledger(run.id()).await.expect("ledger");
        let recorded = &verdicts(&ledger)[0].2[0];
        assert_eq!(recorded.0, name);
        assert_eq!(recorded.1, HookOutcome::Deny);
        assert!(recorded.2.contains(reason), "{name}: {}", recorded.2);
        assert_eq!(violations(&ledger), [(Violation::HookDenied, true)]);
    }
}

#[tokio::test]
async fn a_deny_before_the_model_fails_the_step_as_a_refusal() {
    let deny = hook("quiet", &[HookPoint::BeforeModel], &Seen::default(), |p| {
        if p.step == 1 {
            HookVerdict::deny("no more model calls")
        } else {
            HookVerdict::Allow
        }
    });
    // A script does not correct itself: the refusal fails the run.
    let engine = Engine::builder()
        .hook(deny)
        .planner(ScriptedPlanner::new(walk_to(State::Validate)))
        .build()
        .expect("builds");
    let run = engine.run("quiet").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.steps(), 1, "the planner was not asked for step 1");
    let failure = run.failure().expect("failed");
    assert_eq!(failure.kind, FailureKind::PolicyViolation);
    assert!(
        failure.message.contains("no more model calls"),
        "{}",
        failure.message
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(verdicts(&ledger)[0].0, HookPoint::BeforeModel);
    // Asking for approval before a model call cannot be granted: refused too.
    let ask = hook("ask", &[HookPoint::BeforeModel], &Seen::default(), |_| {
        HookVerdict::Narrow(Narrowing::require_approval("hm"))
    });
    let engine = Engine::builder()
        .hook(ask)
        .planner(ScriptedPlanner::new(walk_to(State::Validate)))
        .build()
        .expect("builds");
    let run = engine.run("ask").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Failed);
    assert!(
        run.failure()
            .expect("failed")
            .message
            .contains("where nothing can be approved"),
        "{:?}",
        run.failure()
    );
}

#[tokio::test]
async fn a_deny_at_run_start_fails_the_run_before_its_first_step() {
    let deny = hook("closed", &[HookPoint::RunStart], &Seen::default(), |p| {
        assert_eq!(p.goal.as_deref(), Some("anything"));
        HookVerdict::deny("closed for maintenance")
    });
    let engine = Engine::builder()
        .hook(deny)
        .planner(ScriptedPlanner::new(walk_to(State::Validate)))
        .build()
        .expect("builds");
    let run = engine.run("anything").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.steps(), 0);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PolicyViolation)
    );
}

const AFTER: [HookPoint; 5] = [
    HookPoint::AfterModel,
    HookPoint::AfterTool,
    HookPoint::ChildEnd,
    HookPoint::Pause,
    HookPoint::RunEnd,
];

#[tokio::test]
async fn observing_hooks_see_every_point_in_order_and_cannot_refuse() {
    let seen = Seen::default();
    let observer = hook("observer", &HookPoint::ALL, &seen, |_| HookVerdict::Allow);
    // Denies wherever it is asked: at the points that only observe, that is ignored.
    let denier = hook("denier", &AFTER, &Seen::default(), |_| {
        HookVerdict::deny("no")
    });
    let (tool, probe) = echo("look", Annotations::read_only());
    let child = ScriptedPlanner::new([ScriptStep::expect(
        State::Intake,
        Decision::transition(State::Done, "nothing"),
    )]);
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, look()),
        ScriptStep::expect(
            State::Explore,
            Decision::delegate_to("child", "sub", [(BudgetName::TOOL_CALLS, 1)], "split"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ]);
    let engine = Engine::builder()
        .tool(tool)
        .hook(observer)
        .hook(denier)
        .planner(ScriptedPlanner::new(steps))
        .planner_named("child", child)
        .budget("tool_calls", 5)
        .build()
        .expect("builds");
    let run = engine.run("observe").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 1);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert!(
        verdicts(&ledger).is_empty(),
        "observing hooks' verdicts are ignored"
    );
    let seen = points(&seen);
    use HookPoint::*;
    let step = [BeforeModel, AfterModel];
    let mut expected = vec![RunStart];
    expected.extend(step); // intake → explore
    expected.extend(step); // look
    expected.extend([BeforeTool, AfterTool]);
    expected.extend(step); // delegate
    expected.extend([ChildStart, RunStart]); // the child's own run
    expected.extend(step);
    expected.extend([RunEnd, ChildEnd]);
    expected.extend(step); // explore → decide
    expected.extend(step); // finish
    expected.push(RunEnd);
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn a_pause_is_shown_to_the_pause_hooks() {
    let seen = Seen::default();
    let observer = hook("observer", &[HookPoint::Pause], &seen, |_| {
        HookVerdict::Allow
    });
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::ask_human("which one?", ["a", "b"]),
    ));
    let engine = Engine::builder()
        .hook(observer)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("builds");
    let run = engine.run("ask").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Paused);
    let seen = seen.lock().expect("not poisoned");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].question.as_deref(), Some("which one?"));
}

#[tokio::test]
async fn a_batch_with_a_denied_call_is_refused_whole() {
    let seen = Seen::default();
    let deny_b = hook("no-b", &[HookPoint::BeforeTool], &seen, |p| {
        if p.input.as_deref() == Some(&json!({"q": "b"})) {
            HookVerdict::deny("not b")
        } else {
            HookVerdict::Allow
        }
    });
    let batch = Decision::call_tools(
        [
            ProposedCall::new("look", json!({"q": "a"}), "a"),
            ProposedCall::new("look", json!({"q": "b"}), "b"),
        ],
        "both",
    );
    let (builder, probe) = hooked(batch, vec![deny_b]);
    let engine = builder.build().expect("builds");
    let run = engine.run("batch").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 0, "no call of a refused batch runs");
    let indexes: Vec<Option<u32>> = seen
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|p| p.batch_index)
        .collect();
    assert_eq!(indexes, [Some(0), Some(1)]);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::HookDenied, true)]);
}

#[tokio::test]
async fn hooks_govern_the_runs_of_a_tree() {
    let seen = Seen::default();
    let deny = hook("guard", &[HookPoint::BeforeTool], &seen, |_| {
        HookVerdict::deny("children only read")
    });
    let (tool, probe) = echo("look", Annotations::read_only());
    let mut child = walk_to(State::Explore);
    child.push(ScriptStep::expect(State::Explore, look()));
    let mut parent = walk_to(State::Explore);
    parent.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::delegate_to("child", "sub", [(BudgetName::TOOL_CALLS, 1)], "split"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ]);
    let engine = Engine::builder()
        .tool(tool)
        .hook(deny)
        .planner(ScriptedPlanner::new(parent))
        .planner_named("child", ScriptedPlanner::new(child))
        .budget("tool_calls", 5)
        .build()
        .expect("builds");
    let run = engine.run("tree").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 0);
    let child =
        support::started_children(&engine.ledger(run.id()).await.expect("ledger"))[0].clone();
    let child_ledger = engine.ledger(&child).await.expect("child ledger");
    assert_eq!(
        verdicts(&child_ledger).len(),
        1,
        "the child's ledger records the verdict"
    );
    assert_eq!(seen.lock().expect("not poisoned")[0].run, child);
}

fn is_hook_verdicts(entry: &rein::ledger::Entry) -> bool {
    matches!(entry.event(), EntryKind::HookVerdicts { .. })
}

#[tokio::test]
async fn a_verdict_on_record_survives_a_crash_and_is_not_asked_again() {
    let seen = Seen::default();
    let deny = || {
        hook("guard", &[HookPoint::BeforeTool], &seen, |_| {
            HookVerdict::deny("no")
        })
    };
    let ledgers = CrashingLedgers::crashing_after(is_hook_verdicts);
    let (builder, _) = hooked(look(), vec![deny()]);
    let first = builder
        .ledger_store(ledgers.clone())
        .build()
        .expect("builds");
    let run = first.run("crash").await.expect("runs");
    assert!(ledgers.has_crashed());
    drop(first);
    assert_eq!(seen.lock().expect("not poisoned").len(), 1);

    let (builder, probe) = hooked(look(), vec![deny()]);
    let second = builder
        .ledger_store(ledgers.restarted())
        .build()
        .expect("builds");
    let stored = second.ledger(run.id()).await.expect("ledger");
    assert!(is_hook_verdicts(stored.entries().last().expect("entries")));
    let resumed = second.resume(run.id()).await.expect("resumes");
    assert_eq!(
        resumed.status(),
        RunStatus::Completed,
        "{:?}",
        resumed.failure()
    );
    assert_eq!(
        seen.lock().expect("not poisoned").len(),
        1,
        "the hook is not asked again for the same call"
    );
    assert_eq!(probe.calls(), 0);
    let ledger = second.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(count(&ledger, "hook_verdicts"), 1);
    assert_eq!(violations(&ledger), [(Violation::HookDenied, true)]);
}

#[tokio::test]
async fn a_resume_without_the_runs_hooks_refuses() {
    let observer = || {
        hook("audit", &[HookPoint::Pause], &Seen::default(), |_| {
            HookVerdict::Allow
        })
    };
    let script = || {
        let mut steps = walk_to(State::Explore);
        steps.push(ScriptStep::expect(
            State::Explore,
            Decision::ask_human("go on?", ["yes"]),
        ));
        steps.push(ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "ok"),
        ));
        steps.push(ScriptStep::expect(
            State::Decide,
            Decision::finish("done", json!(1)),
        ));
        ScriptedPlanner::new(steps)
    };
    let ledgers = CrashingLedgers::crashing_after(|_| false);
    let first = Engine::builder()
        .hook(observer())
        .planner(script())
        .ledger_store(ledgers.clone())
        .build()
        .expect("builds");
    let run = first.run("pause").await.expect("runs");
    assert_eq!(run.status(), RunStatus::Paused);
    let recorded = first.ledger(run.id()).await.expect("ledger");
    let Some(EntryKind::RunStarted { policy, .. }) =
        recorded.entries().first().map(rein::ledger::Entry::event)
    else {
        panic!("a run_started entry");
    };
    assert_eq!(
        policy["hooks"],
        json!([{"name": "audit"}]),
        "the snapshot names the hook"
    );

    let without = Engine::builder()
        .planner(script())
        .ledger_store(ledgers.restarted())
        .build()
        .expect("builds");
    let refused = without.resume_with_input(run.id(), "yes").await;
    let Err(error @ EngineError::HookMissing { .. }) = refused else {
        panic!("refused for the missing hook: {refused:?}");
    };
    assert!(error.to_string().contains("hook `audit`"), "{error}");

    // The same name with a command's hash is another hook.
    let other = observer().command(rein::tool::Digest::of_json(&json!(["sh", "x"])), None);
    let changed = Engine::builder()
        .hook(other)
        .planner(script())
        .ledger_store(ledgers.restarted())
        .build()
        .expect("builds");
    assert!(matches!(
        changed.resume_with_input(run.id(), "yes").await,
        Err(EngineError::HookMissing { .. })
    ));

    let with = Engine::builder()
        .hook(observer())
        .planner(script())
        .ledger_store(ledgers.restarted())
        .build()
        .expect("builds");
    let resumed = with
        .resume_with_input(run.id(), "yes")
        .await
        .expect("resumes");
    assert_eq!(resumed.status(), RunStatus::Completed);
}

#[test]
fn hooks_with_one_name_or_no_point_are_refused_at_build() {
    let allow = |name: &str, points: &[HookPoint]| {
        hook(name, points, &Seen::default(), |_| HookVerdict::Allow)
    };
    let twice = Engine::builder()
        .planner(ScriptedPlanner::new([]))
        .hook(allow("a", &[HookPoint::BeforeTool]))
        .hook(allow("a", &[HookPoint::AfterTool]))
        .build();
    assert!(
        matches!(&twice, Err(BuildError::InvalidOption { option: "hook", reason }) if reason.contains("two hooks are named \"a\"")),
        "{twice:?}"
    );
    let nowhere = Engine::builder()
        .planner(ScriptedPlanner::new([]))
        .hook(allow("b", &[]))
        .build();
    assert!(matches!(
        nowhere,
        Err(BuildError::InvalidOption { option: "hook", .. })
    ));
}

#[tokio::test]
async fn a_replay_reaches_the_recorded_verdicts_without_asking_the_hooks() {
    let seen = Seen::default();
    let deny = hook("guard", &[HookPoint::BeforeTool], &seen, |_| {
        HookVerdict::deny("not today")
    });
    let (builder, _) = hooked(look(), vec![deny]);
    let engine = builder.build().expect("builds");
    let run = engine.run("look").await.expect("runs");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let report = engine.replay(&ledger).await.expect("replays");
    assert!(report.matches(), "{:?}", report.divergence());
    assert_eq!(
        seen.lock().expect("not poisoned").len(),
        1,
        "the hook ran once"
    );
}

//! Deadlines: a run's `time` budget on the engine's clock. No step starts after it, a tool
//! call in flight gets only the time that remains, the run fails as `DeadlineExceeded`
//! (recorded), and time spent paused for a human does not count unless configured. A zero,
//! absurd or past deadline is refused before anything runs. Every call of a batch is cut
//! off at the deadline like a single call, and a child run ends at its parent's.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rein::clock::{Clock, ManualClock};
use rein::ledger::EntryKind;
use rein::policy::Deadline;
use rein::run::{FailureKind, Timestamp};
use rein::{
    Annotations, BuildError, Decision, Engine, EngineError, FnTool, RunSpec, RunStatus, ScriptStep,
    ScriptedPlanner, State, ToolError, json,
};
use support::{count, entries};

const T0: u64 = 1_700_000_000_000;

/// A manual clock the test keeps a handle on.
#[derive(Debug, Clone)]
struct TestClock(Arc<ManualClock>);

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        self.0.now()
    }
}

/// The engine's clock following tokio's (paused) clock, from `T0`.
#[derive(Debug)]
struct TokioClock(tokio::time::Instant);

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        let elapsed = u64::try_from(self.0.elapsed().as_millis()).unwrap_or(u64::MAX);
        Timestamp::from_unix_millis(T0 + elapsed)
    }
}

/// A read-only tool `work` that moves `clock` forward `millis` each time it runs.
fn work(clock: &Arc<ManualClock>, millis: u64) -> FnTool {
    let clock = Arc::clone(clock);
    FnTool::builder("work")
        .annotations(Annotations::read_only())
        .handler(move |_| {
            clock.advance(millis);
            async { Ok(json!("worked")) }
        })
        .build()
        .expect("a valid tool")
}

fn calls_then_finish(calls: usize) -> ScriptedPlanner {
    let mut steps = vec![ScriptStep::expect(
        State::Intake,
        Decision::transition(State::Explore, "start"),
    )];
    for _ in 0..calls {
        steps.push(ScriptStep::expect(
            State::Explore,
            Decision::call_tool("work", json!({}), "work"),
        ));
    }
    steps.extend([
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "done")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

#[tokio::test]
async fn no_step_starts_after_the_deadline() {
    let clock = Arc::new(ManualClock::starting_at(T0));
    let engine = Engine::builder()
        .tool(work(&clock, 600))
        .planner(calls_then_finish(3))
        .deadline(Deadline::new(Duration::from_millis(1_000)))
        .clock(TestClock(Arc::clone(&clock)))
        .build()
        .expect("engine builds");
    let run = engine.run("work against the clock").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    let failure = run.failure().expect("failure");
    assert_eq!(failure.kind, FailureKind::DeadlineExceeded);
    assert!(
        failure.message.contains("deadline of 1000 ms passed"),
        "{failure:?}"
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    // Two calls took 1200 ms: the third was never decided, let alone started.
    assert_eq!(count(&ledger, "tool_result"), 2);
    assert_eq!(count(&ledger, "decision"), 3);
    assert!(matches!(
        ledger.entries().last().map(rein::ledger::Entry::event),
        Some(EntryKind::RunFailed { failure }) if failure.kind == FailureKind::DeadlineExceeded
    ));
    assert_eq!(run.policy()["deadline"], json!({"time_ms": 1000}));
}

#[tokio::test(start_paused = true)]
async fn a_call_in_flight_gets_only_the_time_that_remains() {
    let slow = FnTool::builder("work")
        .annotations(Annotations::read_only().with_timeout(Duration::from_secs(60)))
        .handler(|_| async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok(json!("late"))
        })
        .build()
        .expect("a valid tool");
    let engine = Engine::builder()
        .tool(slow)
        .planner(calls_then_finish(1))
        .deadline(Deadline::new(Duration::from_millis(1_500)))
        .clock(TokioClock(tokio::time::Instant::now()))
        .build()
        .expect("engine builds");
    let started = tokio::time::Instant::now();
    let run = engine.run("slow work").await.expect("run");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::DeadlineExceeded)
    );
    // Cut at the deadline, not at the tool's own 60 s timeout nor its 10 s of work.
    assert_eq!(started.elapsed(), Duration::from_millis(1_500));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    let errors = entries(&ledger, "tool_error");
    assert!(
        matches!(
            errors[..],
            // The attempt in flight is given the time that remained, and timed out at it.
            [e] if matches!(e.event(), EntryKind::ToolError { error: ToolError::TimedOut { after }, duration_ms: 1_500, .. }
                if *after == Duration::from_millis(1_500))
        ),
        "{errors:?}"
    );
    assert_eq!(count(&ledger, "tool_result"), 0);
}

/// A planner that takes ten seconds to answer, like a slow model.
struct Slow;

impl rein::Planner for Slow {
    async fn plan(&self, _request: rein::PlanRequest<'_>) -> Result<Decision, rein::PlannerError> {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(Decision::fail("too late"))
    }
}

#[tokio::test(start_paused = true)]
async fn a_planner_still_thinking_at_the_deadline_is_cut_off_there() {
    let engine = Engine::builder()
        .planner(Slow)
        .deadline(Deadline::new(Duration::from_millis(2_000)))
        .clock(TokioClock(tokio::time::Instant::now()))
        .build()
        .expect("engine builds");
    let started = tokio::time::Instant::now();
    let run = engine.run("think slowly").await.expect("run");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::DeadlineExceeded),
        "{:?}",
        run.failure()
    );
    // Cut at the deadline, not after the planner's ten seconds.
    assert_eq!(started.elapsed(), Duration::from_millis(2_000));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    assert_eq!(count(&ledger, "decision"), 0, "no decision came");
}

/// A run that works 600 ms, asks a human, and after the answer works 600 ms more; the human
/// answers 10 s later.
async fn paused_for_a_human(deadline: Deadline) -> rein::Run {
    let clock = Arc::new(ManualClock::starting_at(T0));
    let engine = Engine::builder()
        .tool(work(&clock, 600))
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("work", json!({}), "work"),
            ),
            ScriptStep::expect(State::Explore, Decision::ask_human("go on?", ["yes"])),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("work", json!({}), "more"),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "done")),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
        ]))
        .deadline(deadline)
        .clock(TestClock(Arc::clone(&clock)))
        .build()
        .expect("engine builds");
    let paused = engine.run("ask midway").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    clock.advance(10_000);
    let run = engine
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    engine
        .ledger(run.id())
        .await
        .expect("ledger")
        .verify()
        .expect("verifies");
    run
}

#[tokio::test]
async fn time_spent_paused_counts_only_when_configured() {
    let deadline = Deadline::new(Duration::from_millis(1_500));
    let run = paused_for_a_human(deadline).await;
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());

    let run = paused_for_a_human(deadline.counting_paused(true)).await;
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::DeadlineExceeded)
    );
}

#[tokio::test]
async fn time_spent_waiting_for_a_durable_approval_does_not_count() {
    let clock = Arc::new(ManualClock::starting_at(T0));
    let (deploy, probe) = support::echo("deploy", Annotations::destructive());
    let mut steps = support::walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(State::Act, Decision::call_tool("deploy", json!({}), "ship")),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("shipped", json!("ok"))),
    ]);
    let engine = Engine::builder()
        .tool(deploy)
        .planner(ScriptedPlanner::new(steps))
        .approvals(
            rein::ApprovalPolicy::default()
                .with_mode(rein::policy::ApprovalMode::Durable)
                .with_timeout(Duration::from_secs(3600)),
        )
        .deadline(Deadline::new(Duration::from_millis(1_000)))
        .clock(TestClock(Arc::clone(&clock)))
        .build()
        .expect("engine builds");
    let paused = engine.run("ship").await.expect("run");
    let pending = paused.pending_approval().expect("pending").clone();
    clock.advance(60_000);
    let verdict =
        rein::ApprovalResponse::answer(&pending, rein::Verdict::Granted, "alice", "go ahead");
    let run = engine
        .approve(paused.id(), &verdict)
        .await
        .expect("approve");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 1);
}

#[tokio::test]
async fn a_zero_absurd_or_past_deadline_is_refused_before_anything_runs() {
    for (time, says) in [
        (Duration::ZERO, "no time for a single step"),
        (Duration::from_secs(400 * 24 * 3600), "more than a year"),
    ] {
        let built = Engine::builder()
            .planner(calls_then_finish(0))
            .deadline(Deadline::new(time))
            .build();
        assert!(
            matches!(&built, Err(BuildError::InvalidOption { option: "deadline", reason }) if reason.contains(says)),
            "{built:?}"
        );
    }

    let clock = Arc::new(ManualClock::starting_at(T0));
    let engine = Engine::builder()
        .planner(calls_then_finish(0))
        .clock(TestClock(Arc::clone(&clock)))
        .build()
        .expect("engine builds");
    let past = RunSpec::new("too late").with_deadline(Timestamp::from_unix_millis(T0 - 1));
    assert!(matches!(
        engine.run(past).await,
        Err(EngineError::DeadlinePassed { .. })
    ));
    let far = RunSpec::new("far").with_deadline(Timestamp::from_unix_millis(T0 + 10u64.pow(12)));
    assert!(matches!(
        engine.run(far).await,
        Err(EngineError::InvalidDeadline { .. })
    ));
    assert!(engine.list_runs().await.expect("list").is_empty());

    // A deadline instant in the future becomes the run's recorded deadline.
    let soon = RunSpec::new("soon").with_deadline(Timestamp::from_unix_millis(T0 + 5_000));
    let run = engine.run(soon).await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed);
    assert_eq!(run.policy()["deadline"], json!({"time_ms": 5000}));
}

/// A read-only tool `hang` that answers only after an hour; its own timeout is 600 s.
fn hanging(name: &str) -> FnTool {
    FnTool::builder(name)
        .annotations(Annotations::read_only().with_timeout(Duration::from_secs(600)))
        .handler(|_| async {
            tokio::time::sleep(Duration::from_secs(3_600)).await;
            Ok(json!("late"))
        })
        .build()
        .expect("a valid tool")
}

/// Whether `entry` is a `tool_error` of a call the deadline cut off after `ms`.
fn cut_off_after(entry: &rein::ledger::Entry, ms: u64) -> bool {
    matches!(entry.event(), EntryKind::ToolError { error: ToolError::TimedOut { after }, duration_ms, .. }
        if *after == Duration::from_millis(ms) && *duration_ms == ms)
}

#[tokio::test(start_paused = true)]
async fn every_call_of_a_batch_gets_only_the_time_that_remains() {
    let batch = Decision::call_tools(
        (0..3).map(|i| rein::planner::ProposedCall::new("hang", json!({ "i": i }), "all at once")),
        "read everything",
    );
    let planner = ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
        ScriptStep::expect(State::Explore, batch),
        ScriptStep::expect(State::Explore, Decision::fail("should not get here")),
    ]);
    let engine = Engine::builder()
        .tool(hanging("hang"))
        .planner(planner)
        .deadline(Deadline::new(Duration::from_millis(1_500)))
        .clock(TokioClock(tokio::time::Instant::now()))
        .build()
        .expect("engine builds");
    let started = tokio::time::Instant::now();
    let run = engine.run("hang in a batch").await.expect("run");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::DeadlineExceeded),
        "{:?}",
        run.failure()
    );
    // Cut at the deadline, as a single call is: not at the tools' own 600 s.
    assert_eq!(started.elapsed(), Duration::from_millis(1_500));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    let errors = entries(&ledger, "tool_error");
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors.iter().all(|e| cut_off_after(e, 1_500)), "{errors:?}");
    assert_eq!(count(&ledger, "tool_result"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_child_run_ends_at_its_parents_deadline() {
    // The parent works one second, then delegates to a child whose call hangs.
    let slow = FnTool::builder("work")
        .annotations(Annotations::read_only())
        .handler(|_| async {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            Ok(json!("worked"))
        })
        .build()
        .expect("a valid tool");
    let parent = ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("work", json!({}), "work"),
        ),
        ScriptStep::expect(
            State::Explore,
            Decision::delegate_to("child", "hang", std::iter::empty(), "hand it over"),
        ),
        ScriptStep::expect(State::Explore, Decision::fail("should not get here")),
    ]);
    let child = ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("hang", json!({}), "wait"),
        ),
        ScriptStep::expect(State::Explore, Decision::fail("should not get here")),
    ]);
    let engine = Engine::builder()
        .tool(slow)
        .tool(hanging("hang"))
        .planner(parent)
        .planner_named("child", child)
        .deadline(Deadline::new(Duration::from_millis(1_500)))
        .clock(TokioClock(tokio::time::Instant::now()))
        .build()
        .expect("engine builds");
    let started = tokio::time::Instant::now();
    let run = engine.run("delegate against the clock").await.expect("run");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::DeadlineExceeded),
        "{:?}",
        run.failure()
    );
    // The tree ends at the root's deadline, not 1.5 s after the child started.
    assert_eq!(started.elapsed(), Duration::from_millis(1_500));
    let tree = engine
        .verify_tree(run.id())
        .await
        .expect("the tree verifies");
    let [child] = tree.children.as_slice() else {
        panic!("one child: {tree:?}");
    };
    let child_run = engine.load_run(&child.id).await.expect("child");
    assert_eq!(
        child_run.failure().map(|f| f.kind),
        Some(FailureKind::DeadlineExceeded)
    );
    // The child was given what its parent had left, and its call the same.
    assert_eq!(child_run.policy()["deadline"], json!({"time_ms": 500}));
    let ledger = engine.ledger(&child.id).await.expect("child ledger");
    let errors = entries(&ledger, "tool_error");
    assert!(
        matches!(errors[..], [e] if cut_off_after(e, 500)),
        "{errors:?}"
    );
}

//! Sub-runs: a `delegate` decision starts a child run with a budget carved out of its
//! parent's. The child cannot spend more than it was given, delegation stops at the depth
//! limit, an abort of the parent reaches the child's tools, a child's question pauses the
//! whole tree (with the child's carve set aside in the parent's budget while it waits), and
//! a tree of three levels survives a restart and verifies as a tree. A tree as deep as
//! `MAX_DEPTH_CEILING` runs, pauses and resumes on an ordinary stack, a deeper limit is not
//! built, and ledgers made by hand into a loop of runs are refused at the ceiling.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rein::ledger::{EntryKind, Violation};
use rein::run::{BudgetName, EvidenceKind, FailureKind};
use rein::subrun::{ChildOutcome, MAX_DEPTH_CEILING};
use rein::{
    Annotations, BuildError, Decision, Engine, EngineBuilder, FnTool, Ledger, Run, RunEvent, RunId,
    RunStatus, ScriptStep, ScriptedPlanner, State, json,
};
use support::{
    assert_chain, calls, count, echo, explore_script, started_children, violations, walk_to,
};
use tokio::sync::Notify;

/// A parent that delegates once (`delegation`) and then finishes.
fn parent_builder(delegation: Decision) -> EngineBuilder {
    Engine::builder().planner(explore_script(vec![delegation], "parent"))
}

/// The one child the ledger started.
fn child_of(ledger: &Ledger) -> RunId {
    let started = started_children(ledger);
    assert_eq!(started.len(), 1, "one child started");
    started[0].clone()
}

/// The child outcomes the run's evidence holds.
fn child_evidence(run: &Run) -> Vec<ChildOutcome> {
    run.evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::Child { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_child_runs_under_a_carved_budget_and_its_result_and_spend_come_back() {
    let (read, probe) = echo("read", Annotations::read_only());
    let child = explore_script(
        vec![
            Decision::call_tool("read", json!({"n": 1}), "look"),
            Decision::call_tool("read", json!({"n": 2}), "look again"),
        ],
        "child",
    );
    let engine = parent_builder(Decision::delegate_to(
        "reader",
        "read twice",
        calls(3),
        "split",
    ))
    .tool(read)
    .planner_named("reader", child)
    .budget("tool_calls", 5)
    .build()
    .expect("engine");
    let run = engine
        .run(rein::RunSpec::new("Delegate the reading").with_var("repo", json!("rein")))
        .await
        .expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 2);
    // The child's two calls are charged to the parent, which made none itself, and the rest
    // of the carve is given back.
    assert_eq!(run.usage().used(&BudgetName::TOOL_CALLS), 2);
    assert_eq!(run.usage().reserved(&BudgetName::TOOL_CALLS), 0);
    assert_eq!(
        child_evidence(&run),
        vec![ChildOutcome::Completed {
            summary: "child".into(),
            result: json!({"by": "child"}),
        }]
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    let child = child_of(&ledger);
    let EntryKind::ChildStarted { carved, .. } = &ledger
        .entries()
        .iter()
        .find(|e| e.event().name() == "child_started")
        .expect("started")
        .event()
    else {
        unreachable!()
    };
    assert_eq!(carved.get(&BudgetName::TOOL_CALLS), Some(&3));
    // The child's ledger links back to the parent; its run is its own.
    let child_ledger = engine.ledger(&child).await.expect("child ledger");
    assert_chain(&child_ledger);
    assert_eq!(child_ledger.entries()[1].event().name(), "child_of");
    // The child is given the parent's run variables.
    let child_run = engine.load_run(&child).await.expect("child run");
    assert_eq!(child_run.vars().get("repo"), Some(&json!("rein")));
    assert_eq!(count(&child_ledger, "tool_call"), 2);
    assert_eq!(count(&ledger, "tool_call"), 0);
    let tree = engine.verify_tree(run.id()).await.expect("tree verifies");
    assert_eq!(tree.children.len(), 1);
    assert_eq!(tree.children[0].id, child);
    assert_eq!(tree.children[0].status, RunStatus::Completed);
    assert_eq!(
        tree.children[0]
            .spent
            .as_ref()
            .and_then(|s| s.get(&BudgetName::TOOL_CALLS)),
        Some(&2)
    );
}

#[tokio::test]
async fn a_child_cannot_spend_more_than_was_carved_out() {
    let (read, probe) = echo("read", Annotations::read_only());
    let greedy = explore_script(
        vec![
            Decision::call_tool("read", json!({"n": 1}), "one"),
            Decision::call_tool("read", json!({"n": 2}), "two"),
            Decision::call_tool("read", json!({"n": 3}), "three"),
        ],
        "child",
    );
    let engine = parent_builder(Decision::delegate_to(
        "greedy",
        "read a lot",
        calls(1),
        "split",
    ))
    .tool(read)
    .planner_named("greedy", greedy)
    .budget("tool_calls", 10)
    .build()
    .expect("engine");
    let run = engine.run("Delegate").await.expect("run");
    // The child ran out at its carve of 1; the parent saw it fail and went on.
    assert_eq!(probe.calls(), 1);
    assert_eq!(run.usage().used(&BudgetName::TOOL_CALLS), 1);
    let outcomes = child_evidence(&run);
    let [ChildOutcome::Failed { failure }] = outcomes.as_slice() else {
        panic!("expected one failed child, got {outcomes:?}");
    };
    assert_eq!(failure.kind, FailureKind::BudgetExhausted);
    assert_eq!(run.status(), RunStatus::Completed);
}

#[tokio::test]
async fn asking_for_more_than_remains_is_a_ledgered_rejection_and_starts_no_child() {
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .planner(explore_script(
            vec![
                Decision::call_tool("read", json!({}), "first"),
                Decision::delegate("more", calls(3), "split"),
            ],
            "parent",
        ))
        .tool(read)
        .budget("tool_calls", 3)
        .build()
        .expect("engine");
    let run = engine.run("Delegate too much").await.expect("run");
    assert_eq!(probe.calls(), 1);
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::BudgetExhausted)
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(
        violations(&ledger),
        vec![(Violation::BudgetExhausted, false)]
    );
    assert_eq!(count(&ledger, "child_started"), 0);
    let message = run.failure().map(|f| f.message.clone()).unwrap_or_default();
    assert!(message.contains("tool_calls"), "{message}");
    assert_eq!(engine.list_runs().await.expect("runs").len(), 1);
}

#[tokio::test]
async fn delegating_deeper_than_the_limit_is_rejected_in_the_run_that_asks() {
    // The root may delegate (depth 1); its child may not (depth 2 > 1).
    let child = explore_script(
        vec![Decision::delegate_to("child", "again", calls(1), "deeper")],
        "child",
    );
    let engine = parent_builder(Decision::delegate_to("child", "sub", calls(2), "split"))
        .planner_named("child", child)
        .budget("tool_calls", 5)
        .max_depth(1)
        .build()
        .expect("engine");
    let run = engine.run("Delegate deep").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let child = child_of(&ledger);
    let child_ledger = engine.ledger(&child).await.expect("child ledger");
    assert_eq!(
        violations(&child_ledger),
        vec![(Violation::DelegationRefused, false)]
    );
    assert_eq!(count(&child_ledger, "child_started"), 0);
    let outcomes = child_evidence(&run);
    let [ChildOutcome::Failed { failure }] = outcomes.as_slice() else {
        panic!("expected one failed child, got {outcomes:?}");
    };
    assert!(failure.message.contains("depth 2"), "{}", failure.message);
    assert!(failure.message.contains("max_depth"), "{}", failure.message);
    // A limit of 0 forbids delegation at the root.
    let engine = parent_builder(Decision::delegate("sub", calls(1), "split"))
        .max_depth(0)
        .build()
        .expect("engine");
    let run = engine.run("No delegation").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(
        violations(&ledger),
        vec![(Violation::DelegationRefused, false)]
    );
    assert_eq!(run.status(), RunStatus::Failed);
}

#[tokio::test]
async fn an_unknown_planner_or_an_empty_goal_is_refused() {
    for (delegation, expected) in [
        (
            Decision::delegate_to("nobody", "sub", calls(1), "x"),
            "nobody",
        ),
        (Decision::delegate(" ", calls(1), "x"), "goal"),
    ] {
        let engine = parent_builder(delegation).build().expect("engine");
        let run = engine.run("Delegate").await.expect("run");
        let ledger = engine.ledger(run.id()).await.expect("ledger");
        assert_eq!(
            violations(&ledger),
            vec![(Violation::DelegationRefused, false)]
        );
        let message = run.failure().map(|f| f.message.clone()).unwrap_or_default();
        assert!(message.contains(expected), "{message}");
    }
}

/// A tool that never returns by itself and counts the calls whose future was dropped.
fn hanging(entered: Arc<Notify>, dropped: Arc<AtomicUsize>) -> FnTool {
    struct OnDrop(Arc<AtomicUsize>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    FnTool::builder("hang")
        .annotations(Annotations::read_only())
        .handler(move |_: rein::Value| {
            let (entered, dropped) = (Arc::clone(&entered), Arc::clone(&dropped));
            async move {
                let _guard = OnDrop(dropped);
                entered.notify_one();
                std::future::pending::<()>().await;
                Ok(json!(null))
            }
        })
        .build()
        .expect("a valid tool")
}

#[tokio::test]
async fn aborting_the_parent_stops_the_childs_tool_and_fails_both() {
    let (entered, dropped) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    let child = explore_script(
        vec![Decision::call_tool("hang", json!({}), "wait")],
        "child",
    );
    let engine = parent_builder(Decision::delegate_to("child", "sub", calls(2), "split"))
        .tool(hanging(Arc::clone(&entered), Arc::clone(&dropped)))
        .planner_named("child", child)
        .build()
        .expect("engine");
    let handle = engine.start("Delegate and abort").await.expect("started");
    let mut events = handle.subscribe();
    entered.notified().await;
    handle.abort();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    // The child's tool future was dropped: nothing of the child keeps running.
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    // The child's end is recorded in the parent: its carve is given back, and the attempt
    // it started is charged.
    assert_eq!(count(&ledger, "child_ended"), 1);
    assert_eq!(run.usage().reserved(&BudgetName::TOOL_CALLS), 0);
    assert_eq!(run.usage().used(&BudgetName::TOOL_CALLS), 1);
    let child = child_of(&ledger);
    let child_run = engine.load_run(&child).await.expect("child");
    assert_eq!(
        child_run.failure().map(|f| f.kind),
        Some(FailureKind::Aborted)
    );
    engine
        .verify_tree(run.id())
        .await
        .expect("the tree verifies");
    // The child's entries reached the parent's subscribers, tagged with the child's id.
    let mut from_child = 0;
    while let Some(event) = events.next().await {
        if let RunEvent::Recorded(entry) = event
            && *entry.run_id() == child
        {
            from_child += 1;
        }
    }
    assert_eq!(
        from_child,
        engine.ledger(&child).await.expect("ledger").len()
    );
}

#[tokio::test]
async fn a_paused_child_pauses_its_parent_and_answering_the_parent_answers_the_child() {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::ask_human("go on?", ["yes", "no"]),
    ));
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "answered"),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("child", json!("asked")),
    ));
    let engine = parent_builder(Decision::delegate_to("asker", "ask", calls(1), "split"))
        .planner_named("asker", ScriptedPlanner::new(steps))
        .build()
        .expect("engine");
    let run = engine.run("Delegate a question").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    assert_eq!(
        run.pending_question().map(|q| q.question.as_str()),
        Some("go on?")
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let child = child_of(&ledger);
    assert_eq!(
        engine.load_run(&child).await.expect("child").status(),
        RunStatus::Paused
    );
    // While the child works, its carve is set aside in the parent's budget, also in the
    // parent's stored snapshot.
    let tool_calls = BudgetName::TOOL_CALLS;
    assert_eq!(run.usage().reserved(&tool_calls), 1);
    let stored = engine.load_run(run.id()).await.expect("parent");
    assert_eq!(stored.usage().reserved(&tool_calls), 1);
    assert_eq!(stored.usage().used(&tool_calls), 0);
    // An answer outside the options is refused for the whole tree, nothing recorded.
    assert!(engine.resume_with_input(run.id(), "maybe").await.is_err());
    let run = engine
        .resume_with_input(run.id(), "yes")
        .await
        .expect("resumed");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    // The child ended having called nothing: the carve is given back, nothing is charged.
    assert_eq!(run.usage().reserved(&tool_calls), 0);
    assert_eq!(run.usage().used(&tool_calls), 0);
    let child_run = engine.load_run(&child).await.expect("child");
    assert_eq!(child_run.status(), RunStatus::Completed);
    assert!(child_run.evidence().iter().any(|e| matches!(
        &e.kind,
        EvidenceKind::HumanInput { answer, .. } if answer == "yes"
    )));
    engine
        .verify_tree(run.id())
        .await
        .expect("the tree verifies");
}

/// Root → child → grandchild, the grandchild asking a question, on filesystem stores.
fn three_levels(dir: &std::path::Path, read: FnTool) -> Engine {
    let mut asks = walk_to(State::Explore);
    asks.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool("read", json!({"who": "grandchild"}), "look"),
    ));
    asks.push(ScriptStep::expect(
        State::Explore,
        Decision::ask_human("ship it?", ["ship", "hold"]),
    ));
    asks.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "answered"),
    ));
    asks.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("grandchild", json!(3)),
    ));
    Engine::builder()
        .planner(explore_script(
            vec![Decision::delegate_to(
                "middle",
                "level 1",
                calls(4),
                "split",
            )],
            "root",
        ))
        .planner_named(
            "middle",
            explore_script(
                vec![
                    Decision::call_tool("read", json!({"who": "child"}), "look"),
                    Decision::delegate_to("leaf", "level 2", calls(2), "split again"),
                ],
                "child",
            ),
        )
        .planner_named("leaf", ScriptedPlanner::new(asks))
        .tool(read)
        .budget("tool_calls", 6)
        .filesystem(dir)
        .build()
        .expect("engine")
}

#[tokio::test]
async fn a_three_level_tree_survives_a_restart_and_verifies_as_a_tree() {
    let dir = tempfile::tempdir().expect("dir");
    let (read, probe) = echo("read", Annotations::read_only());
    let root = {
        let engine = three_levels(dir.path(), read.clone());
        let run = engine.run("Three levels").await.expect("run");
        assert_eq!(run.status(), RunStatus::Paused);
        let tree = engine.verify_tree(run.id()).await.expect("verifies paused");
        assert_eq!(tree.runs().count(), 3);
        assert!(tree.runs().all(|r| r.status == RunStatus::Paused));
        run.id().clone()
    };
    // A new engine over the same directory: the root's ledger knows its open child.
    let engine = three_levels(dir.path(), read);
    let run = engine
        .resume_with_input(&root, "ship")
        .await
        .expect("resumed after the restart");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 2);
    // Both reads, made two levels down, are charged to the root.
    assert_eq!(run.usage().used(&BudgetName::TOOL_CALLS), 2);
    let tree = engine.verify_tree(&root).await.expect("the tree verifies");
    assert_eq!(tree.runs().count(), 3);
    assert!(tree.runs().all(|r| r.status == RunStatus::Completed));
    let child = &tree.children[0];
    assert_eq!(child.children.len(), 1);
    assert_eq!(
        child
            .spent
            .as_ref()
            .and_then(|s| s.get(&BudgetName::TOOL_CALLS)),
        Some(&2)
    );
    assert_eq!(
        child.children[0]
            .spent
            .as_ref()
            .and_then(|s| s.get(&BudgetName::TOOL_CALLS)),
        Some(&1)
    );
    for r in tree.runs() {
        assert_chain(&engine.ledger(&r.id).await.expect("ledger"));
    }
}

#[tokio::test]
async fn a_child_ledger_changed_after_its_end_breaks_the_tree() {
    let dir = tempfile::tempdir().expect("dir");
    let engine = parent_builder(Decision::delegate_to("child", "sub", calls(1), "split"))
        .planner_named("child", explore_script(vec![], "child"))
        .filesystem(dir.path())
        .build()
        .expect("engine");
    let run = engine.run("Delegate").await.expect("run");
    let child = child_of(&engine.ledger(run.id()).await.expect("ledger"));
    // Cut the child's last entry (whole lines: its own chain still verifies).
    let path = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(child.as_str()))
                && p.extension().is_some_and(|x| x == "jsonl")
        })
        .expect("the child's ledger file");
    let text = std::fs::read_to_string(&path).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    // The child's snapshot names the cut entry, so loading it already refuses; either
    // way the tree does not verify.
    let err = engine
        .verify_tree(run.id())
        .await
        .expect_err("the tree is broken");
    let text = err.to_string();
    assert!(
        text.contains(child.as_str()) || text.contains("cut"),
        "{text}"
    );
}

#[tokio::test]
async fn a_graceful_interrupt_of_the_parent_reaches_the_child_and_resume_continues_both() {
    let (slow, gate, probe) = support::gated("slow", Annotations::read_only());
    let child = explore_script(
        vec![Decision::call_tool("slow", json!({}), "wait for it")],
        "child",
    );
    let engine = parent_builder(Decision::delegate_to("child", "sub", calls(2), "split"))
        .tool(slow)
        .planner_named("child", child)
        .build()
        .expect("engine");
    let handle = engine
        .start("Delegate and interrupt")
        .await
        .expect("started");
    let parent = handle.id().clone();
    let mut events = handle.subscribe();
    gate.entered().await;
    handle.interrupt();
    // Once the parent has recorded the interrupt, it has forwarded it to the child.
    while let Some(event) = events.next().await {
        if let RunEvent::Recorded(entry) = event
            && *entry.run_id() == parent
            && matches!(entry.event(), EntryKind::Interrupt { .. })
        {
            break;
        }
    }
    gate.release();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Interrupted);
    let child = child_of(&engine.ledger(&parent).await.expect("ledger"));
    let child_run = engine.load_run(&child).await.expect("child");
    assert_eq!(child_run.status(), RunStatus::Interrupted);
    assert_eq!(
        count(&engine.ledger(&child).await.expect("ledger"), "interrupt"),
        1
    );
    // Resuming the parent resumes the child first; both end, the tool ran once.
    let run = engine.resume(&parent).await.expect("resumed");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(probe.calls(), 1);
    assert_eq!(
        engine.load_run(&child).await.expect("child").status(),
        RunStatus::Completed
    );
    engine
        .verify_tree(&parent)
        .await
        .expect("the tree verifies");
}

#[tokio::test]
async fn a_paused_child_answered_directly_keeps_its_planner_and_its_parent_settles_it() {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::ask_human("go on?", ["yes", "no"]),
    ));
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "answered"),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("child", json!("asked")),
    ));
    let engine = parent_builder(Decision::delegate_to("asker", "ask", calls(1), "split"))
        .planner_named("asker", ScriptedPlanner::new(steps))
        .build()
        .expect("engine");
    let run = engine.run("Delegate a question").await.expect("run");
    let child = child_of(&engine.ledger(run.id()).await.expect("ledger"));
    // Answered directly, the child is driven by its own planner, not the parent's script.
    let child_run = engine
        .resume_with_input(&child, "yes")
        .await
        .expect("child resumed");
    assert_eq!(
        child_run.status(),
        RunStatus::Completed,
        "{:?}",
        child_run.failure()
    );
    assert_eq!(child_run.summary(), Some("child"));
    // The parent, answered in turn, finds its child ended and settles it.
    let run = engine
        .resume_with_input(run.id(), "yes")
        .await
        .expect("parent resumed");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(child_evidence(&run).len(), 1);
    engine
        .verify_tree(run.id())
        .await
        .expect("the tree verifies");
}

/// A parent with `limit` tool calls delegates `carve` of them (after `before` calls of its
/// own) to a child that tries `tries` calls: what ran, and what the parent used.
async fn carve_case(limit: u64, before: u64, carve: u64, tries: u64) -> (usize, u64, RunStatus) {
    let (read, probe) = echo("read", Annotations::read_only());
    let mut parent = Vec::new();
    for n in 0..before {
        parent.push(Decision::call_tool("read", json!({"parent": n}), "own"));
    }
    parent.push(Decision::delegate_to("child", "sub", calls(carve), "split"));
    let child = (0..tries)
        .map(|n| Decision::call_tool("read", json!({"child": n}), "try"))
        .collect();
    let engine = Engine::builder()
        .planner(explore_script(parent, "parent"))
        .planner_named("child", explore_script(child, "child"))
        .tool(read)
        .budget("tool_calls", limit)
        .build()
        .expect("engine");
    let run = engine.run("Carve").await.expect("run");
    engine
        .verify_tree(run.id())
        .await
        .expect("the tree verifies");
    (
        probe.calls(),
        run.usage().used(&BudgetName::TOOL_CALLS),
        run.status(),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// Whatever the limit, the parent's own spending, the carve and the child's appetite:
    /// the child never runs more than was carved, the parent never goes over its limit, and
    /// a carve larger than what is left starts nothing.
    #[test]
    fn a_child_never_spends_more_than_its_carve_nor_a_tree_more_than_its_root_limit(
        limit in 0u64..6,
        before in 0u64..4,
        carve in 0u64..8,
        tries in 0u64..8,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
        let (ran, used, status) = rt.block_on(carve_case(limit, before, carve, tries));
        let own = before.min(limit);
        let left = limit - own;
        proptest::prop_assert!(used <= limit, "used {used} of {limit}");
        proptest::prop_assert_eq!(ran as u64, used);
        if before > limit {
            // The parent ran out before it could delegate.
            proptest::prop_assert_eq!(status, RunStatus::Failed);
        } else if carve > left {
            proptest::prop_assert_eq!(used, own, "a refused carve starts no child");
            proptest::prop_assert_eq!(status, RunStatus::Failed);
        } else {
            proptest::prop_assert_eq!(used, own + tries.min(carve));
            proptest::prop_assert_eq!(status, RunStatus::Completed);
        }
    }
}

/// A chain `depth` levels below the root, on filesystem stores: the root and each level
/// delegate one level down (to the planner `level{k}`); the deepest asks a question.
fn chain(dir: &std::path::Path, depth: u32) -> Engine {
    let down = |k: u32| {
        Decision::delegate_to(
            format!("level{k}"),
            format!("level {k}"),
            std::iter::empty(),
            "one level down",
        )
    };
    let mut asks = walk_to(State::Explore);
    asks.extend([
        ScriptStep::expect(State::Explore, Decision::ask_human("ship it?", ["ship"])),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "asked")),
        ScriptStep::expect(State::Decide, Decision::finish("the bottom", json!(0))),
    ]);
    let mut builder = Engine::builder()
        .planner(explore_script(vec![down(1)], "root"))
        .planner_named(format!("level{depth}"), ScriptedPlanner::new(asks));
    for k in 1..depth {
        builder = builder.planner_named(
            format!("level{k}"),
            explore_script(vec![down(k + 1)], &format!("level {k}")),
        );
    }
    builder
        .max_depth(depth)
        .filesystem(dir)
        .build()
        .expect("engine")
}

#[tokio::test]
async fn a_tree_as_deep_as_the_ceiling_runs_pauses_and_resumes() {
    // Every level driven inside the one above would overflow the stack long before this.
    let dir = tempfile::tempdir().expect("dir");
    let root = {
        let engine = chain(dir.path(), MAX_DEPTH_CEILING);
        let run = engine.run("All the way down").await.expect("run");
        assert_eq!(run.status(), RunStatus::Paused, "{:?}", run.failure());
        assert_eq!(
            run.pending_question().map(|q| &*q.question),
            Some("ship it?")
        );
        run.id().clone()
    };
    let engine = chain(dir.path(), MAX_DEPTH_CEILING);
    let run = engine
        .resume_with_input(&root, "ship")
        .await
        .expect("resumed after a restart");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let tree = engine.verify_tree(&root).await.expect("the tree verifies");
    assert_eq!(tree.runs().count(), MAX_DEPTH_CEILING as usize + 1);
    assert!(tree.runs().all(|r| r.status == RunStatus::Completed));

    // The ceiling is the ceiling: an engine allowing one level more is not built.
    let built = Engine::builder()
        .planner(explore_script(Vec::new(), "root"))
        .max_depth(MAX_DEPTH_CEILING + 1)
        .build();
    assert!(
        matches!(&built, Err(e @ BuildError::MaxDepthTooLarge { depth: 33, ceiling: 32 })
            if e.to_string().contains("at most 32")),
        "{built:?}"
    );
}

#[tokio::test]
async fn runs_naming_each_other_as_children_are_refused_at_the_ceiling() {
    // Two ledgers assembled by hand, each naming the other as its child (and each linked
    // to the other's `child_started` entry): verification used to follow the loop forever.
    let dir = tempfile::tempdir().expect("dir");
    let engine = Engine::builder()
        .planner(explore_script(Vec::new(), "root"))
        .filesystem(dir.path())
        .build()
        .expect("engine");
    let borrowed = engine.run("A run to borrow from").await.expect("run");
    let first = engine
        .ledger(borrowed.id())
        .await
        .expect("ledger")
        .entries()[0]
        .clone();
    let (a, b) = (
        RunId::new("loop-a").expect("an id"),
        RunId::new("loop-b").expect("an id"),
    );
    let started = |child: &RunId| EntryKind::ChildStarted {
        child: child.clone(),
        goal: "the other".into(),
        carved: rein::subrun::Spend::new(),
        planner: None,
    };
    let mut ledgers = [Ledger::new(a.clone()), Ledger::new(b.clone())];
    let mut heads = Vec::new();
    for (ledger, child) in ledgers.iter_mut().zip([&b, &a]) {
        ledger.append(first.at(), State::Intake, first.event().clone());
        heads.push(
            ledger
                .append(first.at(), State::Intake, started(child))
                .head(),
        );
    }
    for (ledger, (parent, head)) in ledgers.iter_mut().zip([(&b, heads[1]), (&a, heads[0])]) {
        let link = EntryKind::ChildOf {
            parent: parent.clone(),
            parent_head: head,
            depth: 1,
            planner: None,
        };
        ledger.append(first.at(), State::Intake, link);
        let lines: Vec<u8> = ledger
            .entries()
            .iter()
            .flat_map(|e| e.json_line().iter().copied())
            .collect();
        let path = rein::store::FsLayout::new(dir.path()).ledger(ledger.run_id());
        std::fs::write(path, lines).expect("write the ledger");
    }
    let err = engine.verify_tree(&a).await.expect_err("a loop is no tree");
    assert!(
        matches!(
            &err,
            rein::EngineError::TreeBroken {
                reason: rein::subrun::TreeError::TooDeep {
                    ceiling: MAX_DEPTH_CEILING
                },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("by hand"), "{err}");
}

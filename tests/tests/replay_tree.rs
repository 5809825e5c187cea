//! Replaying a run that delegated: the whole tree is replayed, each child served its own
//! recorded decisions, tools' outcomes and answers in the order the tree ran them; the
//! report covers every child, a child that goes elsewhere is named in the divergence, and a
//! child whose recorded ledger is missing is a typed error naming it.

mod support;

use rein::ledger::EntryKind;
use rein::store::{LedgerStore, MemoryLedgerStore};
use rein::subrun::TreeError;
use rein::{
    Annotations, Decision, Engine, EngineBuilder, EngineError, FnTool, Ledger, RunStatus,
    ScriptStep, ScriptedPlanner, State, json,
};
use support::{Probe, calls, echo, explore_script, started_children, walk_to};

fn read(who: &str) -> Decision {
    Decision::call_tool("read", json!({ "who": who }), "look")
}

/// Root → child, each calling `read`.
fn two_levels(read_tool: FnTool) -> EngineBuilder {
    Engine::builder()
        .planner(explore_script(
            vec![
                read("root"),
                Decision::delegate_to("reader", "read for me", calls(2), "split"),
                read("root again"),
            ],
            "root",
        ))
        .planner_named("reader", explore_script(vec![read("child")], "child"))
        .tool(read_tool)
        .budget("tool_calls", 6)
}

/// Root → child → grandchild, each calling `read`; the grandchild asks a question (answered
/// through the root) and the child's delegation names no planner (it is driven by its own).
fn three_levels(read_tool: FnTool) -> EngineBuilder {
    let mut leaf = walk_to(State::Explore);
    leaf.extend([
        ScriptStep::expect(State::Explore, read("grandchild")),
        ScriptStep::expect(
            State::Explore,
            Decision::ask_human("ship?", ["ship", "hold"]),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "asked")),
        ScriptStep::expect(State::Decide, Decision::finish("leaf", json!(3))),
    ]);
    Engine::builder()
        .planner(explore_script(
            vec![
                read("root"),
                Decision::delegate_to("middle", "level 1", calls(4), "split"),
            ],
            "root",
        ))
        .planner_named(
            "middle",
            explore_script(
                vec![
                    read("child"),
                    Decision::delegate_to("leaf", "level 2", calls(2), "split again"),
                    read("child again"),
                ],
                "child",
            ),
        )
        .planner_named("leaf", ScriptedPlanner::new(leaf))
        .tool(read_tool)
        .budget("tool_calls", 8)
}

/// Runs a tree to its end on `engine` (answering every question "ship"); its root's ledger.
async fn record(engine: &Engine) -> Ledger {
    let mut run = engine.run("Delegate").await.expect("run");
    while run.status() == RunStatus::Paused {
        run = engine
            .resume_with_input(run.id(), "ship")
            .await
            .expect("resume");
    }
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    engine.ledger(run.id()).await.expect("ledger")
}

#[tokio::test]
async fn a_parent_and_its_child_replay_as_matching_and_no_tool_runs() {
    let (read_tool, probe): (FnTool, Probe) = echo("read", Annotations::read_only());
    let engine = two_levels(read_tool).build().expect("engine");
    let ledger = record(&engine).await;
    assert_eq!(probe.calls(), 3);
    let child = started_children(&ledger)[0].clone();

    let report = engine.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
    assert_eq!(report.divergence(), None);
    assert_eq!(probe.calls(), 3, "replay runs no tool");
    assert_eq!(&report.run, ledger.run_id());
    assert_eq!(report.children.len(), 1);
    let child_report = &report.children[0];
    assert_eq!(child_report.run, child);
    assert_eq!(child_report.replayed.status, RunStatus::Completed);
    assert_eq!(child_report.replayed.result, Some(json!({"by": "child"})));
    assert_eq!(
        child_report.recorded,
        engine.ledger(&child).await.expect("child").outline()
    );
}

#[tokio::test]
async fn a_three_level_tree_with_a_question_below_replays_as_matching() {
    let (read_tool, probe) = echo("read", Annotations::read_only());
    let engine = three_levels(read_tool).build().expect("engine");
    let ledger = record(&engine).await;
    assert_eq!(probe.calls(), 4);

    let report = engine.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
    assert_eq!(probe.calls(), 4, "replay runs no tool");
    assert_eq!(report.reports().count(), 3);
    let grandchild = &report.children[0].children[0];
    assert_eq!(grandchild.replayed.result, Some(json!(3)));
    assert!(
        report
            .reports()
            .all(|r| r.replayed.status == RunStatus::Completed)
    );
    // Every replayed run took as many decisions as its record, each its own.
    assert!(
        report
            .reports()
            .all(|r| r.recorded.decisions == r.replayed.decisions)
    );
}

/// `ledger` with the result of its `finish` decision replaced by `result`, sealed again.
fn with_finish_result(ledger: &Ledger, result: &serde_json::Value) -> Ledger {
    let mut changed = Ledger::new(ledger.run_id().clone());
    for entry in ledger.entries() {
        let event = match entry.event() {
            EntryKind::Decision {
                step,
                decision: Decision::Finish { summary, .. },
            } => EntryKind::Decision {
                step: *step,
                decision: Decision::finish(summary.clone(), result.clone()),
            },
            other => other.clone(),
        };
        changed.append(entry.at(), entry.state(), event);
    }
    changed
}

#[tokio::test]
async fn a_child_whose_recorded_decision_differs_diverges_and_is_named() {
    let (read_tool, _) = echo("read", Annotations::read_only());
    let engine = two_levels(read_tool.clone()).build().expect("engine");
    let ledger = record(&engine).await;
    let child = started_children(&ledger)[0].clone();
    let child_ledger = engine.ledger(&child).await.expect("child");

    // Another engine's store holds the child's ledger with its last decision changed (a
    // sound chain all the same): the replayed child finishes with another result.
    let store = MemoryLedgerStore::default();
    for entry in with_finish_result(&child_ledger, &json!("changed")).entries() {
        store.append(entry).await.expect("append");
    }
    let other = two_levels(read_tool)
        .ledger_store(store)
        .build()
        .expect("engine");
    let report = other.replay(&ledger).await.expect("replay");
    assert!(!report.matches());
    assert_eq!(
        report.recorded, report.replayed,
        "the root itself goes the same way"
    );
    assert_eq!(report.children[0].run, child);
    assert_eq!(report.children[0].replayed.result, Some(json!("changed")));
    let divergence = report.divergence().expect("a divergence");
    assert!(divergence.contains(child.as_str()), "{divergence}");
    assert!(divergence.contains("different outcome"), "{divergence}");
}

#[tokio::test]
async fn a_child_ledger_missing_from_the_store_is_an_error_naming_it() {
    let (read_tool, _) = echo("read", Annotations::read_only());
    let engine = two_levels(read_tool.clone()).build().expect("engine");
    let ledger = record(&engine).await;
    let child = started_children(&ledger)[0].clone();

    let stranger = two_levels(read_tool).build().expect("engine");
    let err = stranger
        .replay(&ledger)
        .await
        .expect_err("the child's ledger is missing");
    match &err {
        EngineError::TreeBroken {
            parent,
            child: missing,
            reason: TreeError::Missing,
        } => {
            assert_eq!(parent, ledger.run_id());
            assert_eq!(missing, &child);
        }
        other => panic!("expected a missing child, got {other:?}"),
    }
    assert!(err.to_string().contains(child.as_str()), "{err}");
}

#[tokio::test]
async fn a_child_the_replay_never_starts_is_reported_as_such() {
    let (read_tool, _) = echo("read", Annotations::read_only());
    let engine = two_levels(read_tool.clone()).build().expect("engine");
    let ledger = record(&engine).await;
    let child = started_children(&ledger)[0].clone();
    let store = MemoryLedgerStore::default();
    for entry in engine.ledger(&child).await.expect("child").entries() {
        store.append(entry).await.expect("append");
    }
    // An engine that forbids delegation refuses the recorded one: the root goes elsewhere
    // and the child is never started.
    let refusing = two_levels(read_tool)
        .max_depth(0)
        .ledger_store(store)
        .build()
        .expect("engine");
    let report = refusing.replay(&ledger).await.expect("replay");
    assert!(!report.matches());
    assert_eq!(report.replayed.status, RunStatus::Failed);
    assert_eq!(report.children.len(), 1);
    let missed = &report.children[0];
    assert_eq!(missed.run, child);
    assert!(!missed.matches());
    let said = missed.divergence().expect("a divergence");
    assert!(said.contains(child.as_str()), "{said}");
    assert!(said.contains("never started"), "{said}");
    // The root's own divergence comes first: it is where the replay left the record.
    let first = report.divergence().expect("a divergence");
    assert!(!first.contains(child.as_str()), "{first}");
}

#[tokio::test]
async fn a_child_started_after_the_parent_ended_breaks_the_tree_for_verify_and_replay() {
    let (read_tool, _) = echo("read", Annotations::read_only());
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = two_levels(read_tool.clone())
        .filesystem(dir.path())
        .build()
        .expect("engine");
    let ledger = record(&engine).await;
    let root = ledger.run_id().clone();
    engine
        .verify_tree(&root)
        .await
        .expect("the recorded tree verifies");
    drop(engine);

    // A child_started appended after run_completed, its hash recomputed, naming a child
    // that never existed: the root's own chain still verifies.
    let last = ledger.entries().last().expect("entries").clone();
    let mut forged = ledger.clone();
    let entry = forged
        .append(
            last.at(),
            last.state(),
            EntryKind::ChildStarted {
                child: "never-ran".parse().expect("id"),
                goal: "forged".into(),
                carved: Default::default(),
                planner: None,
            },
        )
        .to_json_line();
    forged.verify().expect("the chain alone verifies");
    let path = dir.path().join("ledgers").join(format!("{root}.jsonl"));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("ledger file");
    std::io::Write::write_all(&mut file, entry.as_bytes()).expect("append");

    let engine = two_levels(read_tool)
        .filesystem(dir.path())
        .build()
        .expect("engine");
    let expect_after_end = |err: EngineError| match err {
        EngineError::TreeBroken {
            parent,
            child,
            reason:
                TreeError::Recorded(rein::ledger::ChildLinkError::AfterEnd {
                    kind, seq, ended, ..
                }),
        } => {
            assert_eq!(parent, root);
            assert_eq!(child.as_str(), "never-ran");
            assert_eq!(
                (kind, seq, ended),
                ("child_started", last.seq() + 1, last.seq())
            );
        }
        other => panic!("expected a child started after the parent ended, got {other:?}"),
    };
    expect_after_end(
        engine
            .verify_tree(&root)
            .await
            .expect_err("verify refuses it"),
    );
    let stored = engine.ledger(&root).await.expect("the chain loads");
    let err = engine.replay(&stored).await.expect_err("replay refuses it");
    assert!(
        !err.to_string().contains("recorded the child's end"),
        "{err}"
    );
    expect_after_end(err);
}

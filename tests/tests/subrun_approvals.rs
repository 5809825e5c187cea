//! A child run paused on a durable approval pauses its tree with a question that says where
//! the tree waits (the child, the tool, the input hash) and how to go on: a verdict on the
//! child's call, then the answer "resume". No answer is taken for a verdict, and once the
//! verdict is given the tree goes on to its end, verifies, and replays.

mod support;

use std::time::Duration;

use rein::ledger::EntryKind;
use rein::policy::ApprovalMode;
use rein::run::EvidenceKind;
use rein::subrun::ChildOutcome;
use rein::{
    Annotations, ApprovalPolicy, ApprovalResponse, Decision, Engine, EngineError, RunId, RunStatus,
    ScriptStep, ScriptedPlanner, State, Verdict, json,
};
use support::{Probe, calls, count, echo, explore_script, started_children, walk_to};

/// Walks to act, deploys to prod (destructive: it needs approval), validates, finishes.
fn deployer() -> ScriptedPlanner {
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", json!({"env": "prod"}), "ship it"),
        ),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("shipped", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

/// Under durable approvals: the root delegates to "deployer" directly (`levels` 1), or to
/// "middle", which delegates to "deployer" (`levels` 2).
fn engine(levels: u32) -> (Engine, Probe) {
    let (deploy, probe) = echo("deploy", Annotations::destructive());
    let first = if levels == 1 { "deployer" } else { "middle" };
    let engine = Engine::builder()
        .planner(explore_script(
            vec![Decision::delegate_to(first, "ship", calls(2), "split")],
            "root",
        ))
        .planner_named(
            "middle",
            explore_script(
                vec![Decision::delegate_to(
                    "deployer",
                    "ship below",
                    calls(1),
                    "split again",
                )],
                "middle",
            ),
        )
        .planner_named("deployer", deployer())
        .tool(deploy)
        .approvals(
            ApprovalPolicy::default()
                .with_mode(ApprovalMode::Durable)
                .with_timeout(Duration::from_secs(3600)),
        )
        .budget("tool_calls", 3)
        .build()
        .expect("engine");
    (engine, probe)
}

/// How many entries each of `ids`' ledgers holds.
async fn lengths(engine: &Engine, ids: &[RunId]) -> Vec<usize> {
    let mut lens = Vec::new();
    for id in ids {
        lens.push(engine.ledger(id).await.expect("ledger").len());
    }
    lens
}

/// Runs the tree of `levels` until it pauses on the deployer's approval; checks the root's
/// question names the deployer and its call and that no answer passes for the verdict;
/// grants it, resumes the root with "resume", and checks the tree completes and verifies.
async fn check(levels: u32) {
    let (engine, probe) = engine(levels);
    let run = engine.run("Ship through a child").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused, "{:?}", run.failure());
    let root = run.id().clone();
    let mut waiting = started_children(&engine.ledger(&root).await.expect("ledger"))[0].clone();
    for _ in 1..levels {
        waiting = started_children(&engine.ledger(&waiting).await.expect("ledger"))[0].clone();
    }
    let pending = engine
        .pending_approval(&waiting)
        .await
        .expect("look")
        .expect("the deployer waits for a verdict");
    assert_eq!(pending.tool.as_str(), "deploy");

    // The root's question says where the tree waits and how to go on.
    let asked = run.pending_question().expect("a question");
    for part in [
        waiting.as_str(),
        "`deploy`",
        &pending.input_hash.to_string(),
        "approve",
        "\"resume\"",
    ] {
        assert!(
            asked.question.contains(part),
            "{part} in {}",
            asked.question
        );
    }
    assert_eq!(asked.options, vec!["resume".to_owned()]);
    assert!(
        run.waiting_for()
            .expect("paused")
            .contains(waiting.as_str())
    );

    // No answer is a verdict: each is refused while the call waits, and nothing is recorded.
    let ids = [root.clone(), waiting.clone()];
    let before = lengths(&engine, &ids).await;
    for answer in ["yes, ship it", "resume"] {
        let refused = engine.resume_with_input(&root, answer).await;
        assert!(
            matches!(&refused, Err(EngineError::AwaitingApproval { id, .. }) if *id == waiting),
            "{refused:?}"
        );
    }
    assert!(matches!(
        engine.resume(&root).await,
        Err(EngineError::AwaitingApproval { .. })
    ));
    assert_eq!(lengths(&engine, &ids).await, before);
    assert_eq!(probe.calls(), 0);
    assert_eq!(
        engine.load_run(&waiting).await.expect("run").status(),
        RunStatus::Paused
    );

    // The verdict on the deployer's call: it runs, and the deployer ends.
    let verdict = ApprovalResponse::answer(&pending, Verdict::Granted, "alice", "ticket 7");
    let deployer = engine.approve(&waiting, &verdict).await.expect("approve");
    assert_eq!(
        deployer.status(),
        RunStatus::Completed,
        "{:?}",
        deployer.failure()
    );
    assert_eq!(deployer.summary(), Some("shipped"));
    assert_eq!(probe.calls(), 1);

    // The root goes on with its one answer (any other is refused), and the tree ends.
    assert!(matches!(
        engine.resume_with_input(&root, "go").await,
        Err(EngineError::InvalidAnswer { .. })
    ));
    let run = engine
        .resume_with_input(&root, "resume")
        .await
        .expect("resumed");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert!(run.evidence().iter().any(|e| matches!(
        &e.kind,
        EvidenceKind::Child {
            outcome: ChildOutcome::Completed { .. },
            ..
        }
    )));
    let tree = engine.verify_tree(&root).await.expect("the tree verifies");
    assert_eq!(tree.runs().count(), levels as usize + 1);
    assert!(tree.runs().all(|r| r.status == RunStatus::Completed));
    // The run that waited was given a verdict, no answer; a run between it and the root
    // paused on the same question, and took the same answer to go on.
    let ledger = engine.ledger(&waiting).await.expect("ledger");
    assert_eq!(count(&ledger, "human_input_received"), 0);
    for r in tree.runs().skip(1) {
        let ledger = engine.ledger(&r.id).await.expect("ledger");
        assert!(ledger.entries().iter().all(|e| !matches!(
            e.event(),
            EntryKind::HumanInputReceived { answer, .. } if answer != "resume"
        )));
    }
    assert_eq!(
        count(
            &engine.ledger(&waiting).await.expect("ledger"),
            "approval_granted"
        ),
        1
    );
    // The tree replays: the verdict is served to the run that waited for it.
    let report = engine
        .replay(&engine.ledger(&root).await.expect("ledger"))
        .await
        .expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
    assert_eq!(report.reports().count(), levels as usize + 1);
    assert_eq!(probe.calls(), 1, "replay runs no tool");
}

#[tokio::test]
async fn a_child_waiting_for_a_verdict_pauses_its_parent_which_goes_on_after_it() {
    check(1).await;
}

#[tokio::test]
async fn a_grandchild_waiting_for_a_verdict_is_named_by_the_root() {
    check(2).await;
}

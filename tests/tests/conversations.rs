//! Conversations: a follow-up is a new run that continues a finished one — its second
//! ledger entry names the run it continues and that run's head, its planner sees the
//! earlier runs, its budgets are its own unless carried over, the chain of runs verifies
//! (and a tampered earlier run breaks it), and follow-ups queued on a running handle start
//! when the run ends. Bad follow-ups get typed errors.

mod support;

use std::sync::{Arc, Mutex};

use rein::conversation::{ConversationError, FollowUp};
use rein::ledger::EntryKind;
use rein::policy::PolicySnapshot;
use rein::run::BudgetName;
use rein::{
    Annotations, Decision, Engine, EngineError, PlanRequest, Planner, PlannerError, RunStatus,
    State, json,
};
use support::{echo, explore_script, gated};

/// Why a follow-up was refused.
fn refused(err: &EngineError) -> &ConversationError {
    match err {
        EngineError::FollowUpRefused { source, .. } => source,
        other => panic!("not a refused follow-up: {other:?}"),
    }
}

/// What one request showed of the earlier runs: each one's goal and result.
type Seen = Vec<(String, Option<rein::Value>)>;

/// A planner that records, at every step, the goals and results of the earlier runs its
/// request shows, and answers in three steps.
#[derive(Default, Clone)]
struct Remembering {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Planner for Remembering {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let earlier = request
            .conversation()
            .iter()
            .map(|e| (e.run.goal().to_owned(), e.run.result().cloned()))
            .collect();
        self.seen.lock().unwrap().push(earlier);
        let answered = request
            .evidence()
            .iter()
            .any(|e| matches!(e.kind, rein::run::EvidenceKind::HumanInput { .. }));
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "look"),
            // A goal that starts with "ask" asks a human first: the run pauses.
            State::Explore if request.goal().starts_with("ask") && !answered => {
                Decision::ask_human("which one?", ["this one"])
            }
            State::Explore => Decision::transition(State::Decide, "answer"),
            _ => Decision::finish("answered", json!(request.goal())),
        })
    }
}

#[tokio::test]
async fn a_follow_up_names_the_run_it_continues_and_its_planner_sees_the_conversation() {
    let planner = Remembering::default();
    let engine = Engine::builder()
        .planner(planner.clone())
        .build()
        .expect("builds");
    let first = engine.run("one").await.expect("runs");
    let second = engine
        .follow_up(first.id(), "two")
        .await
        .expect("starts")
        .await
        .expect("runs");
    let third = engine
        .follow_up(second.id(), FollowUp::new("three"))
        .await
        .expect("starts")
        .await
        .expect("runs");
    assert_eq!(third.status(), RunStatus::Completed);

    // The second entry of each follow-up names the run before and its ledger's last entry.
    for (earlier, later, turn) in [(&first, &second, 1), (&second, &third, 2)] {
        let head = engine
            .ledger(earlier.id())
            .await
            .expect("ledger")
            .head()
            .expect("entries");
        let ledger = engine.ledger(later.id()).await.expect("ledger");
        assert_eq!(ledger.entries()[0].event().name(), "run_started");
        assert_eq!(
            ledger.entries()[1].event(),
            &EntryKind::FollowUpOf {
                previous: earlier.id().clone(),
                previous_head: head,
                turn,
            }
        );
    }

    // The third run's planner saw the first two, oldest first, with their answers.
    let seen = planner.seen.lock().unwrap().clone();
    let last = seen.last().expect("planned");
    assert_eq!(
        last,
        &[
            ("one".to_owned(), Some(json!("one"))),
            ("two".to_owned(), Some(json!("two"))),
        ]
    );
    // The first run's planner saw no conversation.
    assert!(seen[0].is_empty());

    let chain = engine
        .verify_conversation(third.id())
        .await
        .expect("verifies");
    assert_eq!(
        chain,
        [first.id().clone(), second.id().clone(), third.id().clone()]
    );
}

#[tokio::test]
async fn budgets_are_the_follow_ups_own_unless_carried_over() {
    let (tool, _) = echo("look", Annotations::read_only());
    let script = explore_script(
        vec![Decision::call_tool("look", json!({}), "look once")],
        "looked",
    );
    let engine = Engine::builder()
        .tool(tool)
        .planner(script)
        .budget("tool_calls", 3)
        .build()
        .expect("builds");
    let first = engine.run("look").await.expect("runs");
    assert_eq!(first.usage().used(&BudgetName::TOOL_CALLS), 1);
    let limit = |run: &rein::Run| {
        PolicySnapshot::from_value(run.policy())
            .expect("a policy")
            .budget
            .limit(&BudgetName::TOOL_CALLS)
    };
    let own = engine
        .follow_up(first.id(), "again")
        .await
        .expect("starts")
        .await
        .expect("runs");
    assert_eq!(limit(&own), Some(3));
    let carried = engine
        .follow_up(own.id(), FollowUp::new("and again").carry_budgets())
        .await
        .expect("starts")
        .await
        .expect("runs");
    // What the run before it had left: 3 less the one call it made.
    assert_eq!(limit(&carried), Some(2));
    assert_eq!(carried.status(), RunStatus::Completed);
}

#[tokio::test]
async fn a_follow_up_of_a_run_that_does_not_exist_or_has_not_ended_is_refused() {
    let (tool, gate, _) = gated("wait", Annotations::read_only());
    let script = explore_script(
        vec![Decision::call_tool("wait", json!({}), "wait")],
        "waited",
    );
    let engine = Engine::builder()
        .tool(tool)
        .planner(script)
        .build()
        .expect("builds");

    let nobody: rein::RunId = "no-such-run".parse().unwrap();
    let err = engine.follow_up(&nobody, "hello").await.unwrap_err();
    assert!(
        matches!(refused(&err), ConversationError::NotFound { run } if run == &nobody),
        "{err:?}"
    );
    assert!(err.to_string().contains("check the id"), "{err}");

    let running = engine.start("wait").await.expect("starts");
    gate.entered().await;
    let err = engine.follow_up(running.id(), "next").await.unwrap_err();
    assert!(
        matches!(
            refused(&err),
            ConversationError::NotFinished {
                status: RunStatus::Running,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("RunHandle::follow_up"), "{err}");
    gate.release();
    assert_eq!(running.await.expect("runs").status(), RunStatus::Completed);
    // Nothing was started for the refused follow-ups.
    assert_eq!(engine.list_runs().await.expect("lists").len(), 1);
}

#[tokio::test]
async fn follow_ups_queued_while_a_run_goes_start_when_it_ends_one_after_the_other() {
    let (tool, gate, _) = gated("wait", Annotations::read_only());
    let script = explore_script(
        vec![Decision::call_tool("wait", json!({}), "wait")],
        "waited",
    );
    let engine = Engine::builder()
        .tool(tool)
        .planner(script)
        .build()
        .expect("builds");
    let first = engine.start("first").await.expect("starts");
    gate.entered().await;
    let second = first.follow_up("second");
    let third = first.follow_up("third");
    // Neither started yet: the first run is still in its tool call.
    assert_eq!(engine.list_runs().await.expect("lists").len(), 1);
    let first_id = first.id().clone();
    gate.release();
    assert_eq!(first.await.expect("runs").status(), RunStatus::Completed);

    let second = second.await.expect("the second started");
    gate.entered().await;
    gate.release();
    let second = second.await.expect("runs");
    let third = third.await.expect("the third started");
    gate.entered().await;
    gate.release();
    let third = third.await.expect("runs");
    assert_eq!(second.goal(), "second");
    assert_eq!(third.goal(), "third");
    assert_eq!(
        engine
            .verify_conversation(third.id())
            .await
            .expect("verifies"),
        [first_id, second.id().clone(), third.id().clone()]
    );
}

#[tokio::test]
async fn a_tampered_earlier_run_breaks_the_later_ones_verification_and_follow_ups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::builder()
        .planner(Remembering::default())
        .filesystem(dir.path())
        .build()
        .expect("builds");
    let first = engine.run("the first goal").await.expect("runs");
    let second = engine
        .follow_up(first.id(), "two")
        .await
        .expect("starts")
        .await
        .expect("runs");
    let third = engine
        .follow_up(second.id(), "three")
        .await
        .expect("starts")
        .await
        .expect("runs");
    engine
        .verify_conversation(third.id())
        .await
        .expect("verifies untouched");

    // Edit the first run's goal in its ledger file.
    let path = dir
        .path()
        .join("ledgers")
        .join(format!("{}.jsonl", first.id()));
    let text = std::fs::read_to_string(&path).expect("a ledger file");
    std::fs::write(&path, text.replace("the first goal", "another goal")).expect("written");

    let err = engine.verify_conversation(third.id()).await.unwrap_err();
    let EngineError::ConversationBroken { run, source } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(run, third.id());
    assert!(
        matches!(&**source, ConversationError::Unverified { run: broken, .. } if broken == first.id()),
        "{err:?}"
    );
    let err = engine.follow_up(third.id(), "four").await.unwrap_err();
    assert!(
        matches!(refused(&err), ConversationError::Unverified { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_resumed_follow_up_still_sees_its_conversation() {
    let planner = Remembering::default();
    let engine = Engine::builder()
        .planner(planner.clone())
        .build()
        .expect("builds");
    let first = engine.run("one").await.expect("runs");
    let paused = engine
        .follow_up(first.id(), "ask which")
        .await
        .expect("starts")
        .await
        .expect("runs");
    assert_eq!(paused.status(), RunStatus::Paused);
    // A paused run is no run to follow up on yet.
    let err = engine.follow_up(paused.id(), "next").await.unwrap_err();
    assert!(
        matches!(
            refused(&err),
            ConversationError::NotFinished {
                status: RunStatus::Paused,
                ..
            }
        ),
        "{err:?}"
    );
    planner.seen.lock().unwrap().clear();
    let resumed = engine
        .resume_with_input(paused.id(), "this one")
        .await
        .expect("resumes");
    assert_eq!(resumed.status(), RunStatus::Completed);
    let seen = planner.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for earlier in seen {
        assert_eq!(earlier, [("one".to_owned(), Some(json!("one")))]);
    }
}

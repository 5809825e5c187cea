//! Budget and ledger continuity: pausing for a human, resuming, and restarting the process
//! (a fresh engine over the same directory) never reset a budget or start a new ledger, and
//! a restart cannot widen the policy a run started under.

mod support;

use std::io::Write as _;

use rein::ledger::{EntryKind, Violation};
use rein::planner::Condition;
use rein::run::{BudgetName, EvidenceKind, FailureKind};
use rein::store::FsStores;
use rein::{
    Annotations, Decision, Engine, EngineError, Ledger, Run, RunStatus, ScriptStep,
    ScriptedPlanner, State, json,
};
use support::{assert_chain, count, echo, entries, violations, walk_to};

/// Reads once, asks whether to go on, then reads `after` more times (on "yes") and finishes.
fn ask_then_read(after: usize) -> ScriptedPlanner {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool("read", json!({"page": 0}), "first page"),
    ));
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::ask_human("Read further?", ["yes", "no"]),
    ));
    for page in 1..=after {
        steps.push(
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("read", json!({ "page": page }), "next page"),
            )
            .when(
                Condition::LastAnswerIs("yes".into()),
                Decision::transition(State::Decide, "told to stop"),
            ),
        );
    }
    steps.push(ScriptStep::any(Decision::transition(
        State::Decide,
        "read enough",
    )));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("read", json!("ok")),
    ));
    ScriptedPlanner::new(steps)
}

fn tool_calls(run: &Run) -> u64 {
    run.usage().used(&BudgetName::TOOL_CALLS)
}

/// Checks that `after` is `before` continued: same chain, longer, still verifying.
fn assert_continues(before: &Ledger, after: &Ledger) {
    assert_chain(after);
    assert!(after.len() > before.len());
    assert_eq!(&after.entries()[..before.len()], before.entries());
}

#[tokio::test]
async fn ask_human_pauses_and_resume_continues_with_the_same_budget_and_ledger() {
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(ask_then_read(1))
        .budget("tool_calls", 5)
        .build()
        .expect("engine builds");

    let paused = engine.run("read with a human").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    let pending = paused.pending_question().expect("a pending question");
    assert_eq!(pending.question, "Read further?");
    assert_eq!(pending.options, ["yes", "no"]);
    assert_eq!(tool_calls(&paused), 1);
    let before = engine.ledger(paused.id()).await.expect("ledger");
    assert_eq!(count(&before, "human_input_requested"), 1);
    assert_eq!(count(&before, "run_paused"), 1);
    // What the engine reports is what the ledger rebuilds.
    assert_eq!(engine.load_run(paused.id()).await.expect("load"), paused);

    let done = engine
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(done.status(), RunStatus::Completed, "{:?}", done.failure());
    assert_eq!(done.id(), paused.id());
    assert_eq!(tool_calls(&done), 2, "usage continues from the pause");
    assert_eq!(probe.calls(), 2);
    let after = engine.ledger(done.id()).await.expect("ledger");
    assert_continues(&before, &after);
    let answers: Vec<_> = entries(&after, "human_input_received")
        .into_iter()
        .map(|e| e.event().clone())
        .collect();
    assert_eq!(
        answers,
        [EntryKind::HumanInputReceived {
            answer: "yes".into(),
            by: None,
        }]
    );
    assert_eq!(count(&after, "run_resumed"), 1);
    let human: Vec<_> = done
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::HumanInput { question, answer } => {
                Some((question.as_str(), answer.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(human, [("Read further?", "yes")]);
    assert_eq!(engine.load_run(done.id()).await.expect("load"), done);
}

#[tokio::test]
async fn a_pause_never_resets_a_budget() {
    // One call before the pause and two after, with a limit of two: the second is refused.
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(ask_then_read(2))
        .budget("tool_calls", 2)
        .build()
        .expect("engine builds");
    let paused = engine.run("budget across a pause").await.expect("run");
    let run = engine
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(tool_calls(&run), 2);
    assert_eq!(probe.calls(), 2);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::BudgetExhausted)
    );
}

fn fs_engine(dir: &std::path::Path, limit: u64) -> (Engine, support::Probe) {
    let (read, probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(ask_then_read(2))
        .budget("tool_calls", limit)
        .filesystem(dir)
        .build()
        .expect("engine builds");
    (engine, probe)
}

#[tokio::test]
async fn a_restart_continues_the_run_budget_and_ledger_from_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (first, first_probe) = fs_engine(dir.path(), 5);
    let paused = first.run("survive a restart").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    let before = first.ledger(paused.id()).await.expect("ledger");
    drop(first);

    // "Another process": a fresh engine over the same directory.
    let (second, second_probe) = fs_engine(dir.path(), 5);
    assert_eq!(
        second.list_runs().await.expect("list"),
        [paused.id().clone()]
    );
    assert_eq!(second.load_run(paused.id()).await.expect("load"), paused);
    let done = second
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(done.status(), RunStatus::Completed, "{:?}", done.failure());
    assert_eq!(tool_calls(&done), 3, "1 before the restart, 2 after");
    assert_eq!((first_probe.calls(), second_probe.calls()), (1, 2));
    let after = second.ledger(done.id()).await.expect("ledger");
    assert_continues(&before, &after);

    // And a third process reads the same finished run.
    let (third, _) = fs_engine(dir.path(), 5);
    assert_eq!(third.load_run(done.id()).await.expect("load"), done);
    assert!(matches!(
        third.resume(done.id()).await,
        Err(EngineError::RunFinished {
            status: RunStatus::Completed,
            ..
        })
    ));
}

#[tokio::test]
async fn a_restart_never_resets_a_budget_or_widens_the_recorded_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (first, _) = fs_engine(dir.path(), 2);
    let paused = first.run("policy snapshot").await.expect("run");
    drop(first);

    // The new process is configured with a larger limit; the run keeps the one it started with.
    let (second, probe) = fs_engine(dir.path(), 100);
    let run = second
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(tool_calls(&run), 2);
    assert_eq!(probe.calls(), 1);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::BudgetExhausted)
    );
    let ledger = second.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::BudgetExhausted, false)]);
}

#[tokio::test]
async fn a_torn_last_line_is_cut_on_restart_and_said_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (first, _) = fs_engine(dir.path(), 5);
    let paused = first.run("torn tail").await.expect("run");
    let before = first.ledger(paused.id()).await.expect("ledger");
    drop(first);

    // The process died halfway through writing an entry.
    let stores = FsStores::open(dir.path()).expect("stores");
    let path = stores.ledgers().ledger_path(paused.id());
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("ledger file");
    file.write_all(br#"{"seq":99,"at":1,"run_id":"#)
        .expect("write");
    drop(file);

    let (second, _) = fs_engine(dir.path(), 5);
    let done = second
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(done.status(), RunStatus::Completed, "{:?}", done.failure());
    let after = second.ledger(done.id()).await.expect("ledger");
    assert_continues(&before, &after);
    let resumed: Vec<_> = after
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::RunResumed { note } => Some(note.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(resumed.len(), 1);
    assert!(resumed[0].contains("torn"), "{resumed:?}");
}

//! Run handles: interrupt (graceful), abort (hard), steer (a note before the next decision) and
//! subscribe (a live, lossy view of the ledger). Timing is made deterministic with tools,
//! planners and approvers that block on a gate the test opens — no sleeps.

mod support;

use std::sync::Arc;

use rein::ledger::{EntryKind, InterruptKind};
use rein::planner::Condition;
use rein::run::{EvidenceKind, FailureKind, NoteSource};
use rein::{
    Annotations, ApprovalRequest, ApprovalResponse, Approver, ApproverError, Decision, Engine,
    EngineBuilder, PlanRequest, Planner, PlannerError, RunEvent, RunStatus, ScriptStep,
    ScriptedPlanner, State, json,
};
use support::{Gate, Probe, assert_chain, count, echo, gated, walk_to};
use tokio::sync::Notify;

/// Explore: call the gated `slow` tool, then whatever `after` says.
fn slow_then(after: Vec<ScriptStep>) -> (EngineBuilder, Gate, Probe, Probe) {
    let (slow, gate, slow_probe) = gated("slow", Annotations::read_only());
    let (read, read_probe) = echo("read", Annotations::read_only());
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool("slow", json!({}), "wait for it"),
    ));
    steps.extend(after);
    let builder = Engine::builder()
        .tool(slow)
        .tool(read)
        .planner(ScriptedPlanner::new(steps));
    (builder, gate, slow_probe, read_probe)
}

fn finish_from_explore() -> Vec<ScriptStep> {
    vec![
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]
}

/// The ledger's interrupt entries and the run's failure, after an abort.
async fn check_aborted(engine: &Engine, handle: rein::RunHandle) -> rein::Ledger {
    handle.abort();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    let tail: Vec<_> = ledger
        .entries()
        .iter()
        .rev()
        .take(2)
        .map(|e| e.event().clone())
        .collect();
    assert!(matches!(tail[0], EntryKind::RunFailed { .. }), "{tail:?}");
    assert_eq!(
        tail[1],
        EntryKind::Interrupt {
            kind: InterruptKind::Abort
        }
    );
    ledger
}

#[tokio::test]
async fn abort_drops_the_tool_call_in_flight_and_fails_the_run() {
    let (builder, gate, slow, _) = slow_then(finish_from_explore());
    let engine = builder.build().expect("engine builds");
    let handle = engine.start("abort a tool").await.expect("start");
    gate.entered().await;
    let ledger = check_aborted(&engine, handle).await;
    assert_eq!(slow.calls(), 1);
    assert_eq!(count(&ledger, "tool_call"), 1);
    assert_eq!(count(&ledger, "tool_result"), 0);
    let errors: Vec<_> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolError { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(errors, [rein::ToolError::Cancelled]);
}

/// A planner that blocks on its second decision until the gate opens.
#[derive(Debug)]
struct StuckPlanner {
    entered: Arc<Notify>,
}

impl Planner for StuckPlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        if request.step() == 0 {
            return Ok(Decision::transition(State::Explore, "start"));
        }
        self.entered.notify_one();
        std::future::pending().await
    }
}

#[tokio::test]
async fn abort_stops_a_planner_that_does_not_answer() {
    let entered = Arc::new(Notify::new());
    let engine = Engine::builder()
        .planner(StuckPlanner {
            entered: Arc::clone(&entered),
        })
        .build()
        .expect("engine builds");
    let handle = engine.start("abort a planner").await.expect("start");
    entered.notified().await;
    let ledger = check_aborted(&engine, handle).await;
    assert_eq!(
        count(&ledger, "decision"),
        1,
        "the pending decision never came"
    );
}

/// An approver that never answers, and says when it was asked.
#[derive(Debug)]
struct NeverAnswers {
    asked: Arc<Notify>,
}

impl Approver for NeverAnswers {
    async fn decide(&self, _: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        self.asked.notify_one();
        std::future::pending().await
    }
}

#[tokio::test]
async fn abort_stops_a_pending_approval() {
    let asked = Arc::new(Notify::new());
    let (deploy, probe) = echo("deploy", Annotations::destructive());
    let mut steps = walk_to(State::Act);
    steps.push(ScriptStep::expect(
        State::Act,
        Decision::call_tool("deploy", json!({}), "ship"),
    ));
    let engine = Engine::builder()
        .tool(deploy)
        .approver(NeverAnswers {
            asked: Arc::clone(&asked),
        })
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let handle = engine.start("abort an approval").await.expect("start");
    asked.notified().await;
    let ledger = check_aborted(&engine, handle).await;
    assert_eq!(probe.calls(), 0);
    assert_eq!(count(&ledger, "approval_requested"), 1);
    assert_eq!(count(&ledger, "approval_granted"), 0);
    assert_eq!(count(&ledger, "tool_call"), 0);
}

#[tokio::test]
async fn interrupt_lets_the_planner_take_one_more_step_and_resume_continues() {
    let (builder, gate, slow, _) = slow_then(finish_from_explore());
    let engine = builder.build().expect("engine builds");
    let handle = engine.start("interrupt").await.expect("start");
    let id = handle.id().clone();
    gate.entered().await;
    handle.interrupt();
    gate.release();
    let run = handle.await.expect("run");
    // The call in flight finished; the planner's one more step moved to decide; then it stopped.
    assert_eq!(run.status(), RunStatus::Interrupted);
    assert_eq!(run.state(), State::Decide);
    assert_eq!(slow.calls(), 1);
    let before = engine.ledger(&id).await.expect("ledger");
    assert_eq!(count(&before, "tool_result"), 1);
    let names = support::kinds(&before);
    assert_eq!(
        names[names.len() - 4..],
        ["interrupt", "decision", "transition", "run_interrupted"]
    );
    assert_eq!(engine.load_run(&id).await.expect("load"), run);

    let run = engine.resume(&id).await.expect("resume");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let after = engine.ledger(&id).await.expect("ledger");
    assert_chain(&after);
    assert_eq!(&after.entries()[..before.len()], before.entries());
    assert_eq!(count(&after, "run_resumed"), 1);
}

#[tokio::test]
async fn an_interrupted_run_makes_no_further_tool_call() {
    let (builder, gate, _, read) = slow_then(vec![ScriptStep::expect(
        State::Explore,
        Decision::call_tool("read", json!({}), "one more"),
    )]);
    let engine = builder.build().expect("engine builds");
    let handle = engine.start("interrupt").await.expect("start");
    gate.entered().await;
    handle.interrupt();
    gate.release();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Interrupted);
    assert_eq!(read.calls(), 0, "no tool call after an interrupt");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(count(&ledger, "tool_call"), 1);
    // The proposed call used up no step: resume asks for it again, and it runs then.
    let decisions = count(&ledger, "decision");
    engine.resume(run.id()).await.expect("resume");
    assert_eq!(
        read.calls(),
        1,
        "the call proposed at the interrupt runs after resume"
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert!(count(&ledger, "decision") > decisions);
}

#[tokio::test]
async fn a_planner_may_finish_in_its_last_step_after_an_interrupt() {
    let (builder, gate, _, _) = slow_then(vec![ScriptStep::expect(
        State::Explore,
        Decision::fail("asked to stop"),
    )]);
    let engine = builder.build().expect("engine builds");
    let handle = engine.start("interrupt").await.expect("start");
    gate.entered().await;
    handle.interrupt();
    gate.release();
    let run = handle.await.expect("run");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PlannerGaveUp)
    );
}

#[tokio::test]
async fn a_steering_note_reaches_the_planner_before_its_next_decision() {
    let (builder, gate, _, _) = slow_then(vec![
        ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "steered"),
        )
        .when(
            Condition::EvidenceContains("staging cluster".into()),
            Decision::fail("the note did not arrive"),
        ),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]);
    let engine = builder.build().expect("engine builds");
    let handle = engine.start("steer").await.expect("start");
    gate.entered().await;
    handle.steer("prefer the staging cluster");
    gate.release();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let notes: Vec<_> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::SystemNote { source, note } => Some((*source, note.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        notes,
        [(NoteSource::Steering, "prefer the staging cluster")]
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let names = support::kinds(&ledger);
    let steering = names
        .iter()
        .position(|n| *n == "steering")
        .expect("steering");
    assert_eq!(
        names[steering - 1],
        "tool_result",
        "recorded after the call"
    );
    assert_eq!(
        names[steering + 1],
        "decision",
        "and before the next decision"
    );
}

#[tokio::test]
async fn the_first_subscriber_sees_every_entry_in_ledger_order() {
    let (builder, gate, _, _) = slow_then(finish_from_explore());
    let engine = builder.build().expect("engine builds");
    let handle = engine.start("subscribe").await.expect("start");
    let mut events = handle.subscribe();
    gate.entered().await;
    // A later subscriber sees only what comes after it subscribed.
    let mut late = handle.subscribe();
    gate.release();
    let run = handle.await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");

    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            RunEvent::Recorded(entry) => seen.push((*entry).clone()),
            RunEvent::Missed(n) => panic!("missed {n} events"),
            // The typed events beside the entries: tests/events.rs.
            _ => {}
        }
    }
    assert_eq!(seen, ledger.entries());

    let mut later = Vec::new();
    while let Some(event) = late.next().await {
        if let RunEvent::Recorded(entry) = event {
            later.push((*entry).clone());
        }
    }
    assert!(!later.is_empty());
    assert!(ledger.entries().ends_with(&later));
    assert!(later.len() < seen.len());
    assert!(matches!(later[0].event(), EntryKind::ToolResult { .. }));
}

#[tokio::test]
async fn a_slow_subscriber_is_told_how_many_events_it_missed() {
    let (builder, gate, _, _) = slow_then(finish_from_explore());
    let engine = builder.event_capacity(2).build().expect("engine builds");
    let handle = engine.start("lossy").await.expect("start");
    let mut events = handle.subscribe();
    gate.release();
    let run = handle.await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");

    // It is told how many it missed, then gets what the ring (two published items) still
    // holds: the run's last two entries, each with the typed event its subscriber reads off it.
    assert!(matches!(events.next().await, Some(RunEvent::Missed(n)) if n > ledger.len() as u64));
    let mut rest = Vec::new();
    while let Some(event) = events.next().await {
        rest.push(event);
    }
    let recorded: Vec<u64> = rest
        .iter()
        .filter_map(|e| match e {
            RunEvent::Recorded(entry) => Some(entry.seq()),
            _ => None,
        })
        .collect();
    let last = ledger.len() as u64;
    assert_eq!(recorded, [last - 1, last]);
    assert!(
        matches!(rest.last(), Some(RunEvent::RunEnded(end)) if end.status == RunStatus::Completed)
    );
}

/// The engine's notes in `request`'s evidence.
fn engine_notes(request: &PlanRequest<'_>) -> Vec<String> {
    request
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::SystemNote {
                source: NoteSource::Engine,
                note,
            } => Some(note.clone()),
            _ => None,
        })
        .collect()
}

/// Explore: call the gated `slow` tool; then, when told of an interrupt, give up if `obey`
/// (else propose another call); after a resume, finish with the engine's notes it saw.
fn told(obey: bool) -> rein::planner::MockPlanner {
    rein::planner::MockPlanner::new(move |request| {
        let notes = engine_notes(request);
        let slow_done = request.evidence().iter().any(
            |e| matches!(&e.kind, EvidenceKind::ToolResult { tool, .. } if tool.as_str() == "slow"),
        );
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "start"),
            State::Explore if !slow_done => Decision::call_tool("slow", json!({}), "wait for it"),
            State::Explore if request.interrupted() && obey => {
                Decision::fail(format!("stopped as asked: {}", notes.join(" | ")))
            }
            State::Explore if request.interrupted() => {
                Decision::call_tool("read", json!({}), "one more")
            }
            State::Explore => Decision::transition(State::Decide, "go on"),
            _ => Decision::finish("resumed", json!(notes)),
        })
    })
}

/// Interrupts a run while its `slow` call is in flight; returns the engine and the run.
async fn interrupted_in_flight(obey: bool) -> (Engine, rein::Run) {
    let (slow, gate, _) = gated("slow", Annotations::read_only());
    let (read, _) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(slow)
        .tool(read)
        .planner(told(obey))
        .build()
        .expect("engine builds");
    let handle = engine.start("interrupt").await.expect("start");
    gate.entered().await;
    handle.interrupt();
    gate.release();
    let run = handle.await.expect("run");
    (engine, run)
}

#[tokio::test]
async fn the_planner_is_told_of_a_graceful_interrupt_and_may_finish() {
    let (engine, run) = interrupted_in_flight(true).await;
    // Its last step gave up (as it may); without the note and the flag it would have
    // proposed another call and been left interrupted.
    let failure = run.failure().expect("the planner gave up");
    assert_eq!(failure.kind, FailureKind::PlannerGaveUp, "{failure:?}");
    assert!(
        failure
            .message
            .starts_with("stopped as asked: the run was interrupted"),
        "{failure:?}"
    );
    // The note is recorded (the interrupt entry) before the run holds it.
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(engine.load_run(run.id()).await.expect("load"), run);
    assert_eq!(count(&ledger, "interrupt"), 1);
}

#[tokio::test]
async fn a_resumed_run_is_told_that_it_was_resumed() {
    let (engine, run) = interrupted_in_flight(false).await;
    assert_eq!(run.status(), RunStatus::Interrupted);
    let run = engine.resume(run.id()).await.expect("resume");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let notes: Vec<&str> = run
        .result()
        .and_then(|r| r.as_array())
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("interrupted"), "{notes:?}");
    assert!(notes[1].contains("resumed after an interrupt"), "{notes:?}");
}

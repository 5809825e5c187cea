//! Stop requests (DESIGN.md §7): an abort or interrupt asked for through the store, from
//! outside the task that drives the run, reaches a run driven without a handle
//! (`Engine::run`) at its next step — at once through the engine that drives it, at the
//! next poll through another engine on the same stores — with a child run in flight too,
//! and a run nobody drives at its next resume; the ledger names who asked. The engine's
//! clock is tokio's paused one: the poll needs no sleeps.

mod support;

use rein::ledger::{EntryKind, InterruptKind};
use rein::run::{FailureKind, StopKind, StopRequest, Timestamp};
use rein::{Annotations, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, json};
use support::{calls, explore_script, gated, walk_to};

fn request(kind: StopKind) -> StopRequest {
    StopRequest::new(
        kind,
        "carol",
        "wrong target",
        Timestamp::from_unix_millis(1),
    )
}

/// An engine whose run calls the gated `slow` tool in explore, then finishes.
fn engine() -> (Engine, support::Gate) {
    engine_on(Engine::builder())
}

/// [`engine`], built on `builder` (its stores).
fn engine_on(builder: rein::EngineBuilder) -> (Engine, support::Gate) {
    let (slow, gate, _) = gated("slow", Annotations::read_only());
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("slow", json!({}), "wait"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]);
    let engine = builder
        .tool(slow)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    (engine, gate)
}

fn kinds(ledger: &rein::Ledger) -> Vec<&'static str> {
    ledger.entries().iter().map(|e| e.event().name()).collect()
}

#[tokio::test(start_paused = true)]
async fn an_abort_reaches_a_run_driven_without_a_handle_in_its_tool_call() {
    let (engine, gate) = engine();
    let driving = engine.clone();
    let run = tokio::spawn(async move { driving.run("Fetch it").await });
    gate.entered().await;
    let id = engine.list_runs().await.expect("listed").remove(0);
    engine
        .request_stop(&id, &request(StopKind::Abort))
        .await
        .expect("stored");
    // The tool never returns: only the abort ends the run (the poll's clock auto-advances).
    let run = run.await.expect("joined").expect("driven");
    assert_eq!(run.status(), RunStatus::Failed);
    let failure = run.failure().expect("a failure");
    assert_eq!(failure.kind, FailureKind::Aborted);
    assert_eq!(failure.message, "aborted by carol: wrong target");
    let ledger = engine.ledger(&id).await.expect("verified");
    let tail: Vec<_> = kinds(&ledger).into_iter().rev().take(3).collect();
    assert_eq!(tail, ["run_failed", "interrupt", "stop_requested"]);
    let requested = ledger.entries().iter().find_map(|e| match e.event() {
        EntryKind::StopRequested { request } => Some(request.clone()),
        _ => None,
    });
    assert_eq!(requested, Some(request(StopKind::Abort)));
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_lets_the_call_in_progress_finish_and_leaves_the_run_resumable() {
    let (engine, gate) = engine();
    let driving = engine.clone();
    let run = tokio::spawn(async move { driving.run("Fetch it").await });
    gate.entered().await;
    let id = engine.list_runs().await.expect("listed").remove(0);
    engine
        .request_stop(&id, &request(StopKind::Interrupt))
        .await
        .expect("stored");
    // Let the poll see it, then let the call finish: it is recorded, nothing new starts.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    gate.release();
    let run = run.await.expect("joined").expect("driven");
    assert_eq!(run.status(), RunStatus::Interrupted);
    let ledger = engine.ledger(&id).await.expect("verified");
    assert!(kinds(&ledger).contains(&"tool_result"));
    assert!(ledger.entries().iter().any(|e| matches!(
        e.event(),
        EntryKind::Interrupt {
            kind: InterruptKind::Stop
        }
    )));
    // Honoured once: resuming finishes the run.
    let run = engine.resume(&id).await.expect("resumed");
    assert_eq!(run.status(), RunStatus::Completed);
}

#[tokio::test]
async fn a_finished_run_cannot_be_asked_to_stop() {
    let (engine, gate) = engine();
    gate.release();
    let run = engine.run("Fetch it").await.expect("driven");
    assert_eq!(run.status(), RunStatus::Completed);
    let refused = engine
        .request_stop(run.id(), &request(StopKind::Abort))
        .await;
    assert!(
        matches!(refused, Err(rein::EngineError::RunFinished { .. })),
        "{refused:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_abort_through_another_engine_on_the_same_stores_reaches_the_run_at_its_next_poll() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (slow, gate, _) = gated("slow", Annotations::read_only());
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool("slow", json!({}), "wait"),
    ));
    let driving = Engine::builder()
        .filesystem(dir.path())
        .tool(slow)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let operator = Engine::builder()
        .filesystem(dir.path())
        .planner(ScriptedPlanner::new([]))
        .build()
        .expect("engine builds");
    let run = tokio::spawn(async move { driving.run("Fetch it").await });
    gate.entered().await;
    let id = operator.list_runs().await.expect("listed").remove(0);
    operator
        .request_stop(&id, &request(StopKind::Abort))
        .await
        .expect("stored");
    // The tool never returns: the driving engine's poll (the clock auto-advances) aborts it.
    let run = run.await.expect("joined").expect("driven");
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    let ledger = operator.ledger(&id).await.expect("verified");
    assert!(kinds(&ledger).contains(&"stop_requested"));
}

// On the real clock: a paused one would let the child's tool time out and end the child
// on its own.
#[tokio::test]
async fn an_abort_of_a_run_without_a_handle_reaches_its_child_in_flight() {
    let (slow, gate, _) = gated("slow", Annotations::read_only());
    let child = explore_script(
        vec![Decision::call_tool("slow", json!({}), "wait")],
        "child",
    );
    let engine = Engine::builder()
        .tool(slow)
        .planner(explore_script(
            vec![Decision::delegate_to("child", "sub", calls(2), "split")],
            "parent",
        ))
        .planner_named("child", child)
        .build()
        .expect("engine builds");
    let id = rein::RunId::new("parent").expect("an id");
    let driving = engine.clone();
    let spec = rein::RunSpec::new("Delegate").with_id(id.clone());
    let run = tokio::spawn(async move { driving.run(spec).await });
    gate.entered().await;
    engine
        .request_stop(&id, &request(StopKind::Abort))
        .await
        .expect("stored");
    // Nothing releases the child's tool: the abort, passed down to the child, ends it.
    let run = run.await.expect("joined").expect("driven");
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    let child = support::started_children(&engine.ledger(&id).await.expect("verified"));
    let child = engine.load_run(&child[0]).await.expect("the child");
    assert_eq!(child.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    engine.verify_tree(&id).await.expect("the tree verifies");
}

/// Memory stop requests where an operator's abort lands after the driver read the waiting
/// interrupt and recorded it, just before it clears it (armed once).
#[derive(Clone, Default)]
struct AbortBeforeClear {
    inner: std::sync::Arc<rein::store::MemoryStopRequests>,
    armed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl rein::store::StopRequestStore for AbortBeforeClear {
    async fn request(
        &self,
        id: &rein::RunId,
        request: &StopRequest,
    ) -> Result<(), rein::store::RunStoreError> {
        self.inner.request(id, request).await
    }

    async fn pending(
        &self,
        id: &rein::RunId,
    ) -> Result<Option<StopRequest>, rein::store::RunStoreError> {
        self.inner.pending(id).await
    }

    async fn clear(
        &self,
        id: &rein::RunId,
        honoured: &StopRequest,
    ) -> Result<(), rein::store::RunStoreError> {
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            let abort = StopRequest::new(
                StopKind::Abort,
                "dave",
                "stop it for good",
                Timestamp::from_unix_millis(2),
            );
            self.inner.request(id, &abort).await?;
        }
        self.inner.clear(id, honoured).await
    }
}

#[tokio::test(start_paused = true)]
async fn an_abort_asked_while_an_interrupt_is_honoured_is_not_cleared_with_it() {
    let stops = AbortBeforeClear::default();
    stops.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let (engine, gate) = engine_on(Engine::builder().stop_request_store(stops.clone()));
    let driving = engine.clone();
    let run = tokio::spawn(async move { driving.run("Fetch it").await });
    gate.entered().await;
    let id = engine.list_runs().await.expect("listed").remove(0);
    engine
        .request_stop(&id, &request(StopKind::Interrupt))
        .await
        .expect("stored");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    gate.release();
    let mut run = run.await.expect("joined").expect("driven");
    assert!(
        !stops.armed.load(std::sync::atomic::Ordering::SeqCst),
        "the interrupt was never cleared"
    );
    // The abort asked between the driver's read and its clear was not cleared with the
    // interrupt: this drive honours it at its next poll, or the next resume does.
    if run.status() == RunStatus::Interrupted {
        let waiting = engine.pending_stop(&id).await.expect("read");
        assert_eq!(waiting.map(|r| r.by), Some("dave".to_owned()));
        run = engine.resume(&id).await.expect("resumed");
    }
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::Aborted));
    assert_eq!(
        run.failure().map(|f| f.message.clone()),
        Some("aborted by dave: stop it for good".to_owned())
    );
}

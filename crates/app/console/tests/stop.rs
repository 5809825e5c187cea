//! Stop requests from the console: an operator's abort of a run another engine drives
//! ends the run aborted at its next step; an interrupt of a run nobody drives is honoured
//! by its next resume; either way the ledger names the operator. Requests on a finished
//! run, of an unknown kind, without a token or on a read-only console change nothing.

mod support;

use std::time::Duration;

use axum::http::StatusCode;
use rein::ledger::{Entry, EntryKind};
use rein::run::{FailureKind, StopKind};
use rein::{
    Annotations, Decision, Engine, FnTool, RunStatus, ScriptStep, ScriptedPlanner, State, Value,
    json,
};
use support::{ALICE, BOB, console, entries, field, get, load, post, waiting_for_answer};

/// A read-only tool that never returns: only a stop gets the run past it.
fn hang() -> FnTool {
    FnTool::builder("hang")
        .description("waits forever")
        .annotations(Annotations::read_only())
        .handler(|_input: Value| async move {
            std::future::pending::<()>().await;
            Ok(json!(null))
        })
        .build()
        .expect("a valid tool")
}

/// An engine on `dir` whose run calls `hang` in explore, looking for stop requests often.
fn hanging_engine(dir: &std::path::Path) -> Engine {
    Engine::builder()
        .tool(hang())
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("hang", json!({}), "wait"),
            ),
            ScriptStep::expect(State::Explore, Decision::fail("not reached")),
        ]))
        .stop_request_poll(Duration::from_millis(5))
        .filesystem(dir)
        .build()
        .expect("engine builds")
}

/// The stop requests the ledger records: kind and who asked.
fn requests(entries: &[Entry]) -> Vec<(StopKind, String)> {
    entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::StopRequested { request } => Some((request.kind, request.by.clone())),
            _ => None,
        })
        .collect()
}

/// Posts a stop of `kind` for run `id` as operator `token`, with the CSRF value of its page.
async fn stop(app: &axum::Router, id: &rein::RunId, token: &str, kind: &str) -> support::Reply {
    let page = get(app, &format!("/runs/{id}"), Some(token)).await.body;
    let csrf = field(&page, "csrf");
    post(
        app,
        &format!("/runs/{id}/stop"),
        &[
            ("csrf", &csrf),
            ("kind", kind),
            ("reason", "runaway <b>job</b>"),
        ],
        Some(token),
    )
    .await
}

#[tokio::test]
async fn an_abort_from_the_console_stops_a_run_another_engine_drives() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let handle = hanging_engine(dir.path())
        .start("hang about")
        .await
        .expect("started");
    let id = handle.id().clone();
    let app = console(dir.path(), None, false).router();
    let reply = stop(&app, &id, ALICE, "abort").await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let run = handle.await.expect("the run ends");
    assert_eq!(run.status(), RunStatus::Failed);
    let failure = run.failure().expect("a failure");
    assert_eq!(failure.kind, FailureKind::Aborted);
    assert!(failure.message.contains("alice"), "{}", failure.message);
    let ledger = entries(dir.path(), &id).await;
    assert_eq!(requests(&ledger), [(StopKind::Abort, "alice".to_owned())]);
    // Honoured, so no longer waiting; the page says how the run ended, escaped.
    assert!(!dir.path().join("stops").join(format!("{id}.json")).exists());
    let page = get(&app, &format!("/runs/{id}"), None).await.body;
    assert!(
        page.contains("aborted by alice: runaway &lt;b&gt;job&lt;/b&gt;"),
        "{page}"
    );
}

#[tokio::test]
async fn an_interrupt_of_a_run_nobody_drives_is_honoured_by_its_next_resume() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let id = waiting_for_answer(dir.path(), "ask").await;
    let app = console(dir.path(), None, false).router();
    let reply = stop(&app, &id, BOB, "interrupt").await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let page = get(&app, &format!("/runs/{id}"), None).await.body;
    assert!(page.contains("interrupt requested by bob"), "{page}");
    // Nothing drives the run: the ledger is untouched until it is resumed.
    assert!(requests(&entries(dir.path(), &id).await).is_empty());

    let engine = support::engine(dir.path(), support::T0 + 1000, asking_planner());
    let run = engine.resume_with_input(&id, "yes").await.expect("resumed");
    assert_eq!(run.status(), RunStatus::Interrupted);
    let ledger = entries(dir.path(), &id).await;
    assert_eq!(requests(&ledger), [(StopKind::Interrupt, "bob".to_owned())]);
    // Honoured once: the next resume goes on to the end.
    let run = engine.resume(&id).await.expect("resumed again");
    assert_eq!(run.status(), RunStatus::Completed);
    assert_eq!(requests(&entries(dir.path(), &id).await).len(), 1);
}

#[tokio::test]
async fn stops_that_cannot_be_taken_change_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let id = waiting_for_answer(dir.path(), "ask").await;
    let app = console(dir.path(), None, false).router();
    let page = get(&app, &format!("/runs/{id}"), Some(ALICE)).await.body;
    let csrf = field(&page, "csrf");
    let uri = format!("/runs/{id}/stop");
    let form = |kind: &'static str| {
        [
            ("csrf", csrf.clone()),
            ("kind", kind.to_owned()),
            ("reason", "r".to_owned()),
        ]
    };
    let send = |fields: [(&'static str, String); 3], token: Option<&'static str>| {
        let (app, uri) = (app.clone(), uri.clone());
        async move {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            post(&app, &uri, &fields, token).await
        }
    };
    assert_eq!(
        send(form("pause"), Some(ALICE)).await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        send(form("abort"), None).await.status,
        StatusCode::UNAUTHORIZED
    );
    let read_only = console(dir.path(), None, true).router();
    let refused = post(
        &read_only,
        &uri,
        &[("csrf", &csrf), ("kind", "abort"), ("reason", "r")],
        Some(ALICE),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(
        post(
            &app,
            "/runs/no-such-run/stop",
            &[("csrf", &csrf), ("kind", "abort"), ("reason", "r")],
            Some(ALICE)
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    assert!(!dir.path().join("stops").exists(), "nothing was stored");

    // A finished run cannot be stopped.
    let engine = support::engine(dir.path(), support::T0 + 1000, asking_planner());
    engine.resume_with_input(&id, "yes").await.expect("resumed");
    assert_eq!(load(dir.path(), &id).await.status(), RunStatus::Completed);
    let late = send(form("abort"), Some(ALICE)).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.body);
    assert!(late.body.contains("cannot be stopped"), "{}", late.body);
}

/// The planner of `waiting_for_answer`'s runs.
fn asking_planner() -> ScriptedPlanner {
    support::asking()
}

//! The console's edges: artifacts a run's ledger links are downloads with their checksums
//! shown (an unlinked or tampered one is refused), hostile or missing form fields are 4xx
//! and record nothing, and the `waiting` filter lists only runs waiting for a person.

mod support;

use axum::http::StatusCode;
use rein::{
    Annotations, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, Value, json,
};
use support::{ALICE, T0, TestDriver, console, entries, field, get, post, verdicts};

/// A read-only tool that returns a small output and a text attachment holding markup.
#[derive(Debug)]
struct Report(rein::ToolSpec);

impl rein::tool::Tool for Report {
    fn spec(&self) -> &rein::ToolSpec {
        &self.0
    }
    async fn call(&self, _input: Value) -> Result<rein::ToolOutput, rein::ToolError> {
        let log = rein::tool::Attachment::new(
            "report<script>.html",
            "text/html",
            b"<script>alert(1)</script>".to_vec(),
        )
        .map_err(|e| rein::ToolError::failed(e.to_string()))?;
        rein::ToolOutput::new(json!({"see": "report"}))
            .with_attachment(log)
            .map_err(|e| rein::ToolError::failed(e.to_string()))
    }
}

#[tokio::test]
async fn a_linked_artifact_is_a_download_with_its_checksum_and_others_are_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let spec = rein::ToolSpec::new("report".parse().expect("a name"), "reports")
        .with_annotations(Annotations::read_only());
    let engine = Engine::builder()
        .tool(Report(spec))
        .planner(ScriptedPlanner::new(vec![
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "look")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("report", json!({}), "see"),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
        ]))
        .filesystem(dir.path())
        .build()
        .expect("engine builds");
    let run = engine.run("report").await.expect("a run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let id = run.id().clone();
    let app = console(dir.path(), None, false).router();

    let page = get(&app, &format!("/runs/{id}"), None).await.body;
    assert!(page.contains("<h2>Artifacts</h2>"), "{page}");
    assert!(
        page.contains("report&lt;script&gt;.html"),
        "the name is escaped"
    );
    let marker = format!("/runs/{id}/artifacts/");
    let start = page.find(&marker).expect("a download link") + marker.len();
    let artifact = &page[start..start + page[start..].find('"').expect("a quote")];
    let checksum = rein::tool::Digest::of_bytes(b"<script>alert(1)</script>").to_string();
    assert!(
        page.contains(&checksum[..16]),
        "the checksum is shown: {page}"
    );

    let uri = format!("/runs/{id}/artifacts/{artifact}");
    let request = axum::http::Request::get(&uri)
        .body(axum::body::Body::empty())
        .expect("a request");
    let response = tower::ServiceExt::oneshot(app.clone(), request)
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers();
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/octet-stream"),
        "never rendered by the browser"
    );
    assert_eq!(
        headers
            .get("content-disposition")
            .and_then(|v| v.to_str().ok()),
        Some("attachment; filename=\"report_script_.html\"")
    );
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("a body");
    assert_eq!(&bytes[..], b"<script>alert(1)</script>");

    let other = format!("/runs/{id}/artifacts/{}", "0".repeat(64));
    assert_eq!(get(&app, &other, None).await.status, StatusCode::NOT_FOUND);

    // Tampered bytes no longer match the checksum: refused, not served.
    let stored = walk_files(&dir.path().join("artifacts"))
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|b| b == b"<script>alert(1)</script>"))
        .expect("the artifact's file");
    std::fs::write(&stored, b"tampered").expect("written");
    let refused = get(&app, &uri, None).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
}

fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn hostile_or_missing_form_fields_are_4xx_and_record_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = support::waiting_for_verdict(dir.path(), "ship", &input).await;
    let driver = TestDriver {
        dir: dir.path().to_path_buf(),
        now: T0 + 1000,
        input: input.clone(),
        asks: false,
    };
    let console = console(dir.path(), Some(driver), false);
    let app = console.router();
    let page = get(&app, &format!("/runs/{id}"), Some(ALICE)).await.body;
    let (csrf, hash) = (field(&page, "csrf"), field(&page, "input_hash"));
    let uri = format!("/runs/{id}/approval");
    let long = "r".repeat(2001);
    let cases: Vec<Vec<(&str, &str)>> = vec![
        vec![
            ("csrf", &csrf),
            ("input_hash", &hash),
            ("verdict", "yes please"),
            ("reason", "r"),
        ],
        vec![
            ("csrf", &csrf),
            ("input_hash", &hash),
            ("verdict", "approve"),
            ("reason", "  "),
        ],
        vec![
            ("csrf", &csrf),
            ("input_hash", &hash),
            ("verdict", "approve"),
            ("reason", &long),
        ],
        vec![
            ("csrf", &csrf),
            ("input_hash", ""),
            ("verdict", "approve"),
            ("reason", "r"),
        ],
        vec![("csrf", &csrf), ("verdict", "approve")],
    ];
    for fields in cases {
        let reply = post(&app, &uri, &fields, Some(ALICE)).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{fields:?}: {}",
            reply.body
        );
    }
    // A hash that is not the pending call's: the operator looked at another call.
    let other = post(
        &app,
        &uri,
        &[
            ("csrf", &csrf),
            ("input_hash", "abc"),
            ("verdict", "approve"),
            ("reason", "r"),
        ],
        Some(ALICE),
    )
    .await;
    assert_eq!(other.status, StatusCode::CONFLICT, "{}", other.body);
    assert!(
        other.body.contains("not the one you looked at"),
        "{}",
        other.body
    );
    // Answering a run that waits for a verdict, not an answer.
    let answer = post(
        &app,
        &format!("/runs/{id}/answer"),
        &[("csrf", &csrf), ("answer", "yes")],
        Some(ALICE),
    )
    .await;
    assert_eq!(answer.status, StatusCode::CONFLICT, "{}", answer.body);
    // An unknown run is 404 for a change too.
    let unknown = post(
        &app,
        "/runs/0193c6a2-0000-7000-8000-000000000000/approval",
        &[
            ("csrf", &csrf),
            ("input_hash", &hash),
            ("verdict", "approve"),
            ("reason", "r"),
        ],
        Some(ALICE),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);
    console.settled().await;
    assert!(verdicts(&entries(dir.path(), &id).await).is_empty());
}

#[tokio::test]
async fn the_waiting_filter_lists_only_runs_waiting_for_a_person() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let waits = support::waiting_for_verdict(dir.path(), "ship", &input).await;
    let asks = support::waiting_for_answer(dir.path(), "ask").await;
    let done = support::engine(
        dir.path(),
        T0,
        ScriptedPlanner::new(vec![ScriptStep::expect(
            State::Intake,
            Decision::fail("nothing to do"),
        )]),
    )
    .run("fails at once")
    .await
    .expect("a run");
    assert_eq!(done.status(), RunStatus::Failed);
    let app = console(dir.path(), None, false).router();
    let list = get(&app, "/?status=waiting", None).await.body;
    assert!(list.contains(waits.as_str()));
    assert!(list.contains(asks.as_str()));
    assert!(!list.contains(done.id().as_str()), "{list}");
    assert!(list.contains("2 runs"), "{list}");
}

#[tokio::test]
async fn a_ledger_with_a_torn_last_line_is_read_around_and_its_run_can_still_be_driven() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = support::waiting_for_verdict(dir.path(), "ship", &input).await;
    // A writer that died mid-line leaves a torn last line.
    let path = dir.path().join("ledgers").join(format!("{id}.jsonl"));
    let mut bytes = std::fs::read(&path).expect("a ledger");
    bytes.extend_from_slice(b"{\"seq\":99,\"at\":");
    std::fs::write(&path, &bytes).expect("written");
    let driver = TestDriver {
        dir: dir.path().to_path_buf(),
        now: T0 + 1000,
        input: input.clone(),
        asks: false,
    };
    let console = console(dir.path(), Some(driver), false);
    let app = console.router();
    let list = get(&app, "/", None).await.body;
    assert!(!list.contains("damaged"), "{list}");
    let page = get(&app, &format!("/runs/{id}"), Some(ALICE)).await.body;
    assert!(page.contains("chain verified, 10 entries"), "{page}");
    // The console holds no lock on it: the engine that drives the run takes it over.
    let reply = post(
        &app,
        &format!("/runs/{id}/approval"),
        &[
            ("csrf", &field(&page, "csrf")),
            ("input_hash", &field(&page, "input_hash")),
            ("verdict", "approve"),
            ("reason", "r"),
        ],
        Some(ALICE),
    )
    .await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    console.settled().await;
    assert_eq!(
        support::load(dir.path(), &id).await.status(),
        RunStatus::Completed
    );
    let note = get(&app, &format!("/runs/{id}"), None).await.body;
    assert!(note.contains("the run is now completed"), "{note}");
}

#[tokio::test]
async fn a_run_page_says_what_the_ledger_says_when_the_snapshot_lags_behind() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let id = support::waiting_for_answer(dir.path(), "ask").await;
    // The snapshot is a cache saved after the ledger: keep the paused one, finish the run,
    // then put the old snapshot back (as a reader sees it between the two writes).
    let snapshot = dir.path().join("runs").join(format!("{id}.json"));
    let paused = std::fs::read(&snapshot).expect("a snapshot");
    let engine = support::engine(
        dir.path(),
        T0 + 1000,
        ScriptedPlanner::new(vec![
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "walk")),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "walk")),
            ScriptStep::expect(
                State::Decide,
                Decision::ask_human("go <b>on</b>?", ["yes", "no"]),
            ),
            ScriptStep::expect(State::Decide, Decision::finish("answered", json!("ok"))),
        ]),
    );
    let run = engine.resume_with_input(&id, "yes").await.expect("resumed");
    assert_eq!(run.status(), RunStatus::Completed);
    std::fs::write(&snapshot, paused).expect("written");
    let app = console(dir.path(), None, false).router();
    let page = get(&app, &format!("/runs/{id}"), Some(ALICE)).await.body;
    assert!(page.contains("<td id=\"status\">completed</td>"), "{page}");
    assert!(
        !page.contains("Waiting for a person"),
        "no form for a question already answered"
    );
    assert!(page.contains("<th>ended</th>"));
}

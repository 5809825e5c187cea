//! The console over HTTP, every route: reading (runs, a run, the inbox, events, artifacts),
//! the changes and what refuses them (no token, no CSRF value, read-only), decisions that
//! come too late or twice, and hostile input: markup is escaped, bad ids and queries are 4xx.

mod support;

use axum::http::StatusCode;
use rein::{EntryKind, RunStatus, json};
use support::{
    ALICE, BOB, T0, TIMEOUT_MS, TestDriver, console, entries, field, get, load, post, verdicts,
    waiting_for_answer, waiting_for_verdict,
};

fn driver(dir: &std::path::Path, now: u64, input: &rein::Value, asks: bool) -> TestDriver {
    TestDriver {
        dir: dir.to_path_buf(),
        now,
        input: input.clone(),
        asks,
    }
}

#[tokio::test]
async fn the_runs_list_puts_waiting_runs_first_filters_and_pages() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let waits = waiting_for_verdict(dir.path(), "deploy the service", &input).await;
    let done = support::engine(
        dir.path(),
        T0,
        rein::ScriptedPlanner::new(vec![
            rein::ScriptStep::expect(
                rein::State::Intake,
                rein::Decision::transition(rein::State::Explore, "go"),
            ),
            rein::ScriptStep::expect(
                rein::State::Explore,
                rein::Decision::transition(rein::State::Decide, "go"),
            ),
            rein::ScriptStep::expect(
                rein::State::Decide,
                rein::Decision::finish("done", json!(1)),
            ),
        ]),
    )
    .run("count the files")
    .await
    .expect("a run");
    assert_eq!(done.status(), RunStatus::Completed);
    let app = console(dir.path(), None, false).router();

    let list = get(&app, "/", None).await;
    assert_eq!(list.status, StatusCode::OK);
    let (first, second) = (
        list.body
            .find(&waits.as_str()[..13])
            .expect("the waiting run is listed"),
        list.body
            .find(&done.id().as_str()[..13])
            .expect("the completed run is listed"),
    );
    assert!(first < second, "the run waiting for a person comes first");
    assert!(list.body.contains("waiting for approval"));
    assert!(
        list.body.contains("tool_calls 0/5"),
        "budgets used/limit: {}",
        list.body
    );

    let only = get(&app, "/?status=completed", None).await;
    assert!(only.body.contains(&done.id().as_str()[..13]));
    assert!(!only.body.contains(&waits.as_str()[..13]));
    let text = get(&app, "/?q=DEPLOY", None).await;
    assert!(text.body.contains(&waits.as_str()[..13]));
    assert!(!text.body.contains(&done.id().as_str()[..13]));
    let beyond = get(&app, "/?page=99", None).await;
    assert_eq!(beyond.status, StatusCode::OK);
    assert!(!beyond.body.contains(&waits.as_str()[..13]));
}

#[tokio::test]
async fn a_damaged_ledger_is_shown_as_damaged_and_the_others_still_listed() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let good = waiting_for_verdict(dir.path(), "good run", &input).await;
    let bad = waiting_for_verdict(dir.path(), "bad run", &input).await;
    // Tamper with entry 3 of the bad run's ledger: its reason changes, its hash does not.
    let path = dir.path().join("ledgers").join(format!("{bad}.jsonl"));
    let text = std::fs::read_to_string(&path).expect("a ledger");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[2] = lines[2].replacen("walk", "WALK", 1);
    std::fs::write(&path, lines.join("\n") + "\n").expect("written");
    let app = console(dir.path(), None, false).router();

    let list = get(&app, "/", None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains(&good.as_str()[..13]));
    assert!(list.body.contains(&bad.as_str()[..13]));
    assert!(list.body.contains("damaged"), "{}", list.body);

    let page = get(&app, &format!("/runs/{bad}"), None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("ledger broken"), "{}", page.body);
    assert!(
        page.body.contains("entry 3"),
        "the first broken entry is named: {}",
        page.body
    );
    let fine = get(&app, &format!("/runs/{good}"), None).await;
    assert!(fine.body.contains("chain verified, "), "{}", fine.body);
}

#[tokio::test]
async fn a_run_page_shows_its_verified_chain_path_budgets_and_paged_timeline() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = waiting_for_verdict(dir.path(), "ship", &input).await;
    let app = console(dir.path(), None, false).router();
    let page = get(&app, &format!("/runs/{id}"), None).await;
    assert_eq!(page.status, StatusCode::OK);
    let count = entries(dir.path(), &id).await.len();
    assert!(
        page.body
            .contains(&format!("chain verified, {count} entries, head ")),
        "{}",
        page.body
    );
    assert!(page.body.contains("<svg"), "the path is drawn");
    assert!(
        page.body.contains("approval_pending"),
        "the timeline names events"
    );
    assert!(page.body.contains("tool_calls"), "budgets are shown");
    assert!(
        page.body
            .contains(&format!("data-events=\"/runs/{id}/events\""))
    );
    // Pages past the end show the last one.
    assert_eq!(
        get(&app, &format!("/runs/{id}?page=9999"), None)
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn unknown_runs_are_404_and_hostile_ids_and_queries_are_4xx() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let app = console(dir.path(), None, false).router();
    let unknown = "0193c6a2-0000-7000-8000-000000000000";
    for uri in [
        format!("/runs/{unknown}"),
        format!("/runs/{unknown}/events"),
        format!("/runs/{unknown}/artifacts/{}", "a".repeat(64)),
        "/nowhere".to_owned(),
    ] {
        let reply = get(&app, &uri, None).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{uri}: {}", reply.body);
    }
    let long = "x".repeat(5000);
    for uri in [
        "/runs/..%2F..%2Fetc%2Fpasswd".to_owned(),
        "/runs/%3Cscript%3E".to_owned(),
        format!("/runs/{long}"),
        "/runs/%00".to_owned(),
        format!("/runs/{unknown}/artifacts/..%2F..%2Fsecret"),
        "/?page=-1".to_owned(),
        "/?page=abc".to_owned(),
        "/?status=%3Cscript%3E".to_owned(),
        format!("/?q={long}"),
        format!("/runs/{unknown}?page=x"),
    ] {
        let reply = get(&app, &uri, None).await;
        assert!(
            reply.status.is_client_error(),
            "{uri}: {} {}",
            reply.status,
            reply.body
        );
        assert!(!reply.body.contains("<script>"), "{uri}: markup is escaped");
    }
    let reply = post(
        &app,
        "/runs/%3Cscript%3E/approval",
        &[("csrf", "x")],
        Some(ALICE),
    )
    .await;
    assert!(reply.status.is_client_error());
}

#[tokio::test]
async fn markup_in_goals_inputs_and_questions_is_escaped() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "<script>alert('input')</script>"});
    let id = waiting_for_verdict(dir.path(), "<script>alert('goal')</script>", &input).await;
    let asked = waiting_for_answer(dir.path(), "<img src=x onerror=alert(1)>").await;
    let app = console(
        dir.path(),
        Some(driver(dir.path(), T0, &input, false)),
        false,
    )
    .router();
    for uri in [
        "/".to_owned(),
        "/inbox".to_owned(),
        format!("/runs/{id}"),
        format!("/runs/{asked}"),
    ] {
        let reply = get(&app, &uri, Some(ALICE)).await;
        assert_eq!(reply.status, StatusCode::OK, "{uri}");
        for raw in ["<script>alert", "<img src=x", "<b>on</b>"] {
            assert!(!reply.body.contains(raw), "{uri} holds {raw} unescaped");
        }
    }
    let page = get(&app, &format!("/runs/{id}"), Some(ALICE)).await.body;
    assert!(
        page.contains("&lt;script&gt;alert(&#39;goal&#39;)"),
        "the goal is shown escaped"
    );
    let inbox = get(&app, "/inbox", Some(ALICE)).await.body;
    assert!(
        inbox.contains("&lt;script&gt;alert(&#39;input&#39;)"),
        "the input is shown escaped: {inbox}"
    );
    assert!(
        inbox.contains("go &lt;b&gt;on&lt;/b&gt;?"),
        "the question is shown escaped"
    );
}

/// Approves run `id` as operator `token` with the CSRF value from its page.
async fn approve(
    app: &axum::Router,
    id: &rein::RunId,
    token: &str,
    verdict: &str,
) -> support::Reply {
    let page = get(app, &format!("/runs/{id}"), Some(token)).await.body;
    let csrf = field(&page, "csrf");
    let hash = field(&page, "input_hash");
    post(
        app,
        &format!("/runs/{id}/approval"),
        &[
            ("csrf", &csrf),
            ("input_hash", &hash),
            ("verdict", verdict),
            ("reason", "ticket 42"),
        ],
        Some(token),
    )
    .await
}

#[tokio::test]
async fn an_approval_is_ledgered_with_the_operators_name_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = waiting_for_verdict(dir.path(), "ship", &input).await;
    let console = console(
        dir.path(),
        Some(driver(dir.path(), T0 + 1000, &input, false)),
        false,
    );
    let app = console.router();
    let reply = approve(&app, &id, ALICE, "approve").await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    assert_eq!(
        reply.location.as_deref(),
        Some(format!("/runs/{id}").as_str())
    );
    console.settled().await;
    let ledger = entries(dir.path(), &id).await;
    assert_eq!(
        verdicts(&ledger),
        [("granted".to_owned(), "alice".to_owned())]
    );
    assert_eq!(load(dir.path(), &id).await.status(), RunStatus::Completed);
    let page = get(&app, &format!("/runs/{id}"), None).await.body;
    assert!(page.contains("approved by alice"), "{page}");
}

#[tokio::test]
async fn a_denial_is_ledgered_with_the_operators_name() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = waiting_for_verdict(dir.path(), "ship", &input).await;
    let console = console(
        dir.path(),
        Some(driver(dir.path(), T0 + 1000, &input, false)),
        false,
    );
    let app = console.router();
    let reply = approve(&app, &id, BOB, "deny").await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    console.settled().await;
    assert_eq!(
        verdicts(&entries(dir.path(), &id).await),
        [("denied".to_owned(), "bob".to_owned())]
    );
    assert_eq!(load(dir.path(), &id).await.status(), RunStatus::Failed);
}

#[tokio::test]
async fn changes_without_a_token_without_csrf_or_on_a_read_only_console_are_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = waiting_for_verdict(dir.path(), "ship", &input).await;
    let app = console(
        dir.path(),
        Some(driver(dir.path(), T0, &input, false)),
        false,
    )
    .router();
    let page = get(&app, &format!("/runs/{id}"), Some(ALICE)).await.body;
    let (csrf, hash) = (field(&page, "csrf"), field(&page, "input_hash"));
    let uri = format!("/runs/{id}/approval");
    let form = |csrf: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("input_hash", hash.clone()),
            ("verdict", "approve".to_owned()),
            ("reason", "r".to_owned()),
        ]
    };
    let send = |fields: Vec<(&'static str, String)>, token: Option<&'static str>| {
        let app = app.clone();
        let uri = uri.clone();
        async move {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            post(&app, &uri, &fields, token).await
        }
    };
    assert_eq!(
        send(form(&csrf), None).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(form(&csrf), Some("not-a-token")).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(form(""), Some(ALICE)).await.status,
        StatusCode::FORBIDDEN
    );
    // Alice's CSRF value is not Bob's.
    assert_eq!(
        send(form(&csrf), Some(BOB)).await.status,
        StatusCode::FORBIDDEN
    );
    let answer = post(
        &app,
        &format!("/runs/{id}/answer"),
        &[("answer", "yes")],
        Some(ALICE),
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);

    let read_only = console(
        dir.path(),
        Some(driver(dir.path(), T0, &input, false)),
        true,
    )
    .router();
    let reply = post(
        &read_only,
        &uri,
        &[
            ("csrf", &csrf),
            ("input_hash", &hash),
            ("verdict", "approve"),
            ("reason", "r"),
        ],
        Some(ALICE),
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert!(reply.body.contains("read-only"), "{}", reply.body);
    let inbox = get(&read_only, "/inbox", Some(ALICE)).await.body;
    assert!(
        !inbox.contains("name=\"csrf\""),
        "a read-only console offers no forms"
    );

    assert!(
        verdicts(&entries(dir.path(), &id).await).is_empty(),
        "nothing was decided"
    );
    assert_eq!(load(dir.path(), &id).await.status(), RunStatus::Paused);
}

#[tokio::test]
async fn an_approval_after_its_timeout_says_so_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = waiting_for_verdict(dir.path(), "ship", &input).await;
    let console = console(
        dir.path(),
        Some(driver(dir.path(), T0 + TIMEOUT_MS + 1, &input, false)),
        false,
    );
    let app = console.router();
    let reply = approve(&app, &id, ALICE, "approve").await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.body);
    assert!(reply.body.contains("too late"), "{}", reply.body);
    console.settled().await;
    let ledger = entries(dir.path(), &id).await;
    assert_eq!(
        verdicts(&ledger),
        [("denied".to_owned(), "engine".to_owned())],
        "only the timeout's denial"
    );
    assert!(
        !ledger
            .iter()
            .any(|e| matches!(e.event(), EntryKind::ToolCall { .. })),
        "the call never ran"
    );
}

#[tokio::test]
async fn two_operators_approving_the_same_call_at_once_record_one_decision() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = waiting_for_verdict(dir.path(), "ship", &input).await;
    let console = console(
        dir.path(),
        Some(driver(dir.path(), T0 + 1000, &input, false)),
        false,
    );
    let app = console.router();
    let alice_page = get(&app, &format!("/runs/{id}"), Some(ALICE)).await.body;
    let bob_page = get(&app, &format!("/runs/{id}"), Some(BOB)).await.body;
    let uri = format!("/runs/{id}/approval");
    let hash = field(&alice_page, "input_hash");
    let (alice_csrf, bob_csrf) = (field(&alice_page, "csrf"), field(&bob_page, "csrf"));
    let alice_form = [
        ("csrf", alice_csrf.as_str()),
        ("input_hash", &hash),
        ("verdict", "approve"),
        ("reason", "a"),
    ];
    let bob_form = [
        ("csrf", bob_csrf.as_str()),
        ("input_hash", &hash),
        ("verdict", "deny"),
        ("reason", "b"),
    ];
    let (a, b) = tokio::join!(
        post(&app, &uri, &alice_form, Some(ALICE)),
        post(&app, &uri, &bob_form, Some(BOB)),
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::SEE_OTHER, StatusCode::CONFLICT],
        "{} / {}",
        a.body,
        b.body
    );
    console.settled().await;
    assert_eq!(
        verdicts(&entries(dir.path(), &id).await).len(),
        1,
        "exactly one decision"
    );
    // And a second decision after the first is done changes nothing either.
    let late = post(
        &app,
        &uri,
        &[
            ("csrf", &bob_csrf),
            ("input_hash", &hash),
            ("verdict", "deny"),
            ("reason", "b"),
        ],
        Some(BOB),
    )
    .await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.body);
    assert_eq!(verdicts(&entries(dir.path(), &id).await).len(), 1);
}

#[tokio::test]
async fn a_question_is_answered_from_the_inbox_and_a_wrong_answer_records_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let id = waiting_for_answer(dir.path(), "ask").await;
    let console = console(
        dir.path(),
        Some(driver(dir.path(), T0 + 1000, &json!(null), true)),
        false,
    );
    let app = console.router();
    let inbox = get(&app, "/inbox", Some(ALICE)).await.body;
    assert!(inbox.contains("1 run waiting for a person"), "{inbox}");
    let csrf = field(&inbox, "csrf");
    let uri = format!("/runs/{id}/answer");
    let wrong = post(
        &app,
        &uri,
        &[("csrf", &csrf), ("answer", "maybe")],
        Some(ALICE),
    )
    .await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST, "{}", wrong.body);
    assert_eq!(load(dir.path(), &id).await.status(), RunStatus::Paused);
    let right = post(
        &app,
        &uri,
        &[("csrf", &csrf), ("answer", "yes")],
        Some(ALICE),
    )
    .await;
    assert_eq!(right.status, StatusCode::SEE_OTHER, "{}", right.body);
    console.settled().await;
    assert_eq!(load(dir.path(), &id).await.status(), RunStatus::Completed);
    let received = entries(dir.path(), &id)
        .await
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::HumanInputReceived { .. }))
        .count();
    assert_eq!(received, 1);
}

#[tokio::test]
async fn signing_in_sets_an_http_only_cookie_and_a_wrong_token_is_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let app = console(dir.path(), None, false).router();
    assert_eq!(get(&app, "/login", None).await.status, StatusCode::OK);
    let bad = post(&app, "/login", &[("token", "nope")], None).await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
    let good = post(&app, "/login", &[("token", ALICE)], None).await;
    assert_eq!(good.status, StatusCode::SEE_OTHER);
    let page = get(&app, "/login", Some(ALICE)).await.body;
    assert!(page.contains("signed in as <strong>alice</strong>"));
    assert_eq!(
        post(&app, "/logout", &[], Some(ALICE)).await.status,
        StatusCode::SEE_OTHER
    );
    let script = get(&app, "/static/console.js", None).await;
    assert_eq!(script.status, StatusCode::OK);
    assert!(script.body.contains("EventSource"));
}

#[tokio::test]
async fn the_event_stream_starts_with_the_ledgers_length() {
    use futures_util::StreamExt as _;
    use tower::ServiceExt as _;
    let dir = tempfile::tempdir().expect("a temp dir");
    let id = waiting_for_answer(dir.path(), "ask").await;
    let app = console(dir.path(), None, false).router();
    let request = axum::http::Request::get(format!("/runs/{id}/events"))
        .body(axum::body::Body::empty())
        .expect("a request");
    let response = app.oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let mut body = response.into_body().into_data_stream();
    let first = body.next().await.expect("an event").expect("bytes");
    let count = entries(dir.path(), &id).await.len();
    assert_eq!(
        String::from_utf8_lossy(&first),
        format!("event: hello\ndata: {count}\n\n")
    );
    // Dropping the stream is the client going away: nothing is left behind.
    drop(body);
}

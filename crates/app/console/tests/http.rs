//! The console's reading routes over HTTP: the runs list (waiting first, filtered, paged),
//! a damaged ledger among good ones, a run's page, the inbox, signing in, the event stream;
//! and hostile input: markup is escaped, unknown runs are 404, bad ids and queries are 4xx.
//! Decisions are in `decisions.rs`; artifacts and form fields in `edges.rs`.

mod support;

use axum::http::StatusCode;
use rein::{RunStatus, json};
use support::{
    ALICE, T0, TestDriver, console, entries, get, get_signed_in, post, waiting_for_answer,
    waiting_for_verdict,
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
            .find(waits.as_str())
            .expect("the waiting run is listed"),
        list.body
            .find(done.id().as_str())
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
    assert!(only.body.contains(done.id().as_str()));
    assert!(!only.body.contains(waits.as_str()));
    let text = get(&app, "/?q=DEPLOY", None).await;
    assert!(text.body.contains(waits.as_str()));
    assert!(!text.body.contains(done.id().as_str()));
    let beyond = get(&app, "/?page=99", None).await;
    assert_eq!(beyond.status, StatusCode::OK);
    assert!(!beyond.body.contains(waits.as_str()));
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
    assert!(list.body.contains(good.as_str()));
    assert!(list.body.contains(bad.as_str()));
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

#[tokio::test]
async fn signing_in_sets_an_http_only_cookie_and_a_wrong_token_is_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let app = console(dir.path(), None, false).router();
    assert_eq!(get(&app, "/login", None).await.status, StatusCode::OK);
    let bad = post(&app, "/login", &[("token", "nope")], None).await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
    let good = post(&app, "/login", &[("token", ALICE)], None).await;
    assert_eq!(good.status, StatusCode::SEE_OTHER);
    // The cookie holds a session value, never the token itself.
    let cookie = good.cookie.expect("a sign-in cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!cookie.contains(ALICE), "{cookie}");
    let session = cookie
        .split(';')
        .next()
        .and_then(|pair| pair.strip_prefix("rein_console_session="))
        .expect("the session cookie");
    let page = get_signed_in(&app, "/login", session).await.body;
    assert!(
        page.contains("signed in as <strong>alice</strong>"),
        "{page}"
    );
    let page = get_signed_in(&app, "/login", ALICE).await.body;
    assert!(
        page.contains("not signed in"),
        "a raw token is no session: {page}"
    );
    let page = get(&app, "/login", Some(ALICE)).await.body;
    assert!(page.contains("signed in as <strong>alice</strong>"));
    assert_eq!(
        post(&app, "/logout", &[], Some(ALICE)).await.status,
        StatusCode::SEE_OTHER
    );
    let headers = {
        let request = axum::http::Request::get("/")
            .body(axum::body::Body::empty())
            .expect("a request");
        tower::ServiceExt::oneshot(app.clone(), request)
            .await
            .expect("infallible")
            .headers()
            .clone()
    };
    let csp = headers
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        csp.contains("frame-ancestors 'none'"),
        "pages with approve buttons cannot be framed: {csp}"
    );
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert_eq!(
        headers.get("x-frame-options").and_then(|v| v.to_str().ok()),
        Some("DENY")
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

/// A script that walks to explore, takes `middle` there, then decides and finishes.
fn explore(middle: Vec<rein::Decision>) -> rein::ScriptedPlanner {
    use rein::{Decision, ScriptStep, State};
    let mut steps = vec![ScriptStep::expect(
        State::Intake,
        Decision::transition(State::Explore, "go"),
    )];
    steps.extend(
        middle
            .into_iter()
            .map(|d| ScriptStep::expect(State::Explore, d)),
    );
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "enough"),
        ),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(1))),
    ]);
    rein::ScriptedPlanner::new(steps)
}

#[tokio::test]
async fn a_child_run_is_listed_under_its_parent_and_linked_both_ways() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let budget = [(rein::run::BudgetName::TOOL_CALLS, 1)];
    let engine = rein::Engine::builder()
        .planner(explore(vec![rein::Decision::delegate_to(
            "helper",
            "look around",
            budget,
            "split",
        )]))
        .planner_named("helper", explore(Vec::new()))
        .budget("tool_calls", 5)
        .filesystem(dir.path())
        .build()
        .expect("engine builds");
    let parent = engine.run("the parent").await.expect("a run");
    assert_eq!(
        parent.status(),
        RunStatus::Completed,
        "{:?}",
        parent.failure()
    );
    let child = entries(dir.path(), parent.id())
        .await
        .iter()
        .find_map(|e| match e.event() {
            rein::ledger::EntryKind::ChildStarted { child, .. } => Some(child.clone()),
            _ => None,
        })
        .expect("a child started");
    let app = console(dir.path(), None, false).router();
    let list = get(&app, "/", None).await.body;
    let (at_parent, at_child) = (
        list.find(parent.id().as_str())
            .expect("the parent is listed"),
        list.find(&format!("↳ {}", rein_console::short_id(&child)))
            .expect("the child is listed as a child"),
    );
    assert!(at_parent < at_child, "the child comes under its parent");
    assert_eq!(
        list.matches(child.as_str()).count(),
        1,
        "listed once, under its parent only"
    );
    let page = get(&app, &format!("/runs/{}", parent.id()), None)
        .await
        .body;
    assert!(page.contains("<h2>Child runs</h2>"), "{page}");
    assert!(page.contains(child.as_str()));
    let child_page = get(&app, &format!("/runs/{child}"), None).await.body;
    assert!(child_page.contains(&format!("child of <a href=\"/runs/{}\">", parent.id())));
}

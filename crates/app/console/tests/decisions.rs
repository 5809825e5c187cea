//! Decisions through the console: an approval or denial is ledgered with the operator's
//! name and the run goes on; changes without a token, without the CSRF value or on a
//! read-only console are refused; a verdict after the timeout changes nothing; two
//! operators at once record exactly one decision; a question is answered from the inbox.

mod support;

use axum::http::StatusCode;
use rein::ledger::EntryKind;
use rein::{RunStatus, json};
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
    // One answer is recorded, with the name of the operator whose token sent it.
    let received: Vec<(String, Option<String>)> = entries(dir.path(), &id)
        .await
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::HumanInputReceived { answer, by, .. } => Some((answer.clone(), by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(received, [("yes".to_owned(), Some("alice".to_owned()))]);
}

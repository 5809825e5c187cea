//! Bulk verdicts from the inbox: one form post decides several pending approvals, each
//! ledgered on its own with the operator's name; a stale item is reported as a 409 on the
//! page and changes nothing; the post is refused whole without a token, without the CSRF
//! value, on a read-only console, or with a malformed item.

mod support;

use axum::http::StatusCode;
use rein::{RunStatus, json};
use support::{
    ALICE, T0, TestDriver, console, entries, field, get, load, post, verdicts, waiting_for_verdict,
};

fn driver(dir: &std::path::Path, input: &rein::Value) -> TestDriver {
    TestDriver {
        dir: dir.to_path_buf(),
        now: T0 + 1000,
        input: input.clone(),
        asks: false,
    }
}

/// The `item` values of the inbox's checkboxes.
fn items(inbox: &str) -> Vec<String> {
    inbox
        .split("name=\"item\" form=\"bulk\" value=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').expect("a closing quote")].to_owned())
        .collect()
}

#[tokio::test]
async fn one_post_approves_several_calls_and_reports_a_stale_one() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let mut ids = Vec::new();
    for goal in ["one", "two", "three"] {
        ids.push(waiting_for_verdict(dir.path(), goal, &input).await);
    }
    let console = console(dir.path(), Some(driver(dir.path(), &input)), false);
    let app = console.router();
    let inbox = get(&app, "/inbox", Some(ALICE)).await.body;
    let csrf = field(&inbox, "csrf");
    let selected = items(&inbox);
    assert_eq!(selected.len(), 3, "{inbox}");

    // Someone denies the first call before the bulk post arrives: that item is stale.
    let first = selected
        .iter()
        .find(|i| i.starts_with(ids[0].as_str()))
        .expect("the first run's item");
    let hash = first.split_once(':').expect("id:hash").1;
    let single = post(
        &app,
        &format!("/runs/{}/approval", ids[0]),
        &[
            ("csrf", &csrf),
            ("input_hash", hash),
            ("verdict", "deny"),
            ("reason", "no"),
        ],
        Some(ALICE),
    )
    .await;
    assert_eq!(single.status, StatusCode::SEE_OTHER, "{}", single.body);
    console.settled().await;

    let mut fields = vec![
        ("csrf", csrf.as_str()),
        ("verdict", "approve"),
        ("reason", "batch 7"),
    ];
    fields.extend(selected.iter().map(|i| ("item", i.as_str())));
    let reply = post(&app, "/inbox/bulk", &fields, Some(ALICE)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert!(reply.body.contains("2 of 3 decided"), "{}", reply.body);
    assert_eq!(
        reply.body.matches("data-status=\"409\"").count(),
        1,
        "{}",
        reply.body
    );
    assert!(
        reply.body.contains("waits for no approval now"),
        "{}",
        reply.body
    );
    console.settled().await;

    assert_eq!(
        verdicts(&entries(dir.path(), &ids[0]).await),
        [("denied".to_owned(), "alice".to_owned())]
    );
    for id in &ids[1..] {
        assert_eq!(
            verdicts(&entries(dir.path(), id).await),
            [("granted".to_owned(), "alice".to_owned())]
        );
        assert_eq!(load(dir.path(), id).await.status(), RunStatus::Completed);
    }
}

#[tokio::test]
async fn a_bulk_post_that_may_not_act_is_refused_whole() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let id = waiting_for_verdict(dir.path(), "one", &input).await;
    let app = console(dir.path(), Some(driver(dir.path(), &input)), false).router();
    let inbox = get(&app, "/inbox", Some(ALICE)).await.body;
    let csrf = field(&inbox, "csrf");
    let item = items(&inbox).pop().expect("an item");
    let with = |csrf: &str, item: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("verdict", "deny".to_owned()),
            ("reason", "r".to_owned()),
            ("item", item.to_owned()),
        ]
    };
    let send = |fields: Vec<(&'static str, String)>, app: axum::Router, token| async move {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post(&app, "/inbox/bulk", &fields, token).await.status
    };
    assert_eq!(
        send(with(&csrf, &item), app.clone(), None).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(with("", &item), app.clone(), Some(ALICE)).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        send(with(&csrf, "no-colon"), app.clone(), Some(ALICE)).await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        send(with(&csrf, "bad id!:00"), app.clone(), Some(ALICE)).await,
        StatusCode::BAD_REQUEST
    );
    let read_only = console(dir.path(), Some(driver(dir.path(), &input)), true).router();
    assert_eq!(
        send(with(&csrf, &item), read_only, Some(ALICE)).await,
        StatusCode::FORBIDDEN
    );
    assert!(verdicts(&entries(dir.path(), &id).await).is_empty());
    assert_eq!(load(dir.path(), &id).await.status(), RunStatus::Paused);
}

/// The hidden `item` values of the deny-all confirmation's form.
fn confirmed_items(page: &str) -> Vec<String> {
    page.split("name=\"item\" value=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').expect("a closing quote")].to_owned())
        .collect()
}

#[tokio::test]
async fn deny_all_by_the_filter_says_how_many_then_denies_those_and_reports_a_stale_one() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let alpha = waiting_for_verdict(dir.path(), "deploy alpha", &input).await;
    let beta = waiting_for_verdict(dir.path(), "deploy beta", &input).await;
    let other = waiting_for_verdict(dir.path(), "migrate gamma", &input).await;
    let console = console(dir.path(), Some(driver(dir.path(), &input)), false);
    let app = console.router();

    let inbox = get(&app, "/inbox?q=Deploy", Some(ALICE)).await.body;
    assert!(inbox.contains("2 runs waiting for a person"), "{inbox}");
    assert!(inbox.contains("deny all 2 shown by this filter"), "{inbox}");

    // The confirmation changes nothing and says how many it will deny.
    let confirm = get(&app, "/inbox/deny-all?q=Deploy", Some(ALICE)).await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(
        confirm.body.contains("data-count=\"2\"")
            && confirm.body.contains("this denies the 2 calls"),
        "{}",
        confirm.body
    );
    let selected = confirmed_items(&confirm.body);
    assert_eq!(selected.len(), 2, "{}", confirm.body);
    assert!(selected.iter().all(|i| !i.starts_with(other.as_str())));
    assert_eq!(load(dir.path(), &alpha).await.status(), RunStatus::Paused);

    // Someone approves beta between the confirmation and the post: its item is stale.
    let beta_page = get(&app, &format!("/runs/{beta}"), Some(ALICE)).await.body;
    let single = post(
        &app,
        &format!("/runs/{beta}/approval"),
        &[
            ("csrf", &field(&beta_page, "csrf")),
            ("input_hash", &field(&beta_page, "input_hash")),
            ("verdict", "approve"),
            ("reason", "fine"),
        ],
        Some(ALICE),
    )
    .await;
    assert_eq!(single.status, StatusCode::SEE_OTHER, "{}", single.body);
    console.settled().await;

    let csrf = field(&confirm.body, "csrf");
    let mut fields: Vec<(&str, &str)> =
        vec![("csrf", &csrf), ("verdict", "deny"), ("reason", "freeze")];
    fields.extend(selected.iter().map(|i| ("item", i.as_str())));
    let done = post(&app, "/inbox/bulk", &fields, Some(ALICE)).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert!(done.body.contains("1 of 2 decided"), "{}", done.body);
    assert!(done.body.contains("data-status=\"409\""), "{}", done.body);
    console.settled().await;

    assert_eq!(
        verdicts(&entries(dir.path(), &alpha).await),
        [("denied".to_owned(), "alice".to_owned())]
    );
    assert_eq!(
        verdicts(&entries(dir.path(), &beta).await),
        [("granted".to_owned(), "alice".to_owned())]
    );
    assert!(verdicts(&entries(dir.path(), &other).await).is_empty());
    assert_eq!(load(dir.path(), &other).await.status(), RunStatus::Paused);
}

#[tokio::test]
async fn deny_all_asks_nobody_without_a_token_nor_on_a_read_only_console() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    waiting_for_verdict(dir.path(), "deploy alpha", &input).await;
    let app = console(dir.path(), Some(driver(dir.path(), &input)), false).router();
    let anonymous = get(&app, "/inbox/deny-all", None).await;
    assert_eq!(
        anonymous.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        anonymous.body
    );
    let nothing = get(&app, "/inbox/deny-all?q=nomatch", Some(ALICE)).await;
    assert_eq!(nothing.status, StatusCode::OK);
    assert!(
        nothing.body.contains("data-count=\"0\""),
        "{}",
        nothing.body
    );
    let read_only = console(dir.path(), Some(driver(dir.path(), &input)), true).router();
    let refused = get(&read_only, "/inbox/deny-all", Some(ALICE)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
}

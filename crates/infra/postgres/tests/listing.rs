//! Listing runs a page at a time (`PgRunStore::page`): filtered by status, by waiting for a
//! person and by text, ordered, counted and paged by the database; and the listing columns
//! of runs saved before schema 4 filled in by its migration from their snapshots.

mod support;

use rein_postgres::{PgRunStore, RunFilter, RunOrder};
use rein_run::{Failure, FailureKind, Run, RunId, RunStatus, RunStore as _, Timestamp};
use support::Fresh;

fn run(id: &str, goal: &str, at: u64) -> Run {
    Run::new(
        id.parse().unwrap(),
        goal,
        serde_json::Map::new(),
        serde_json::json!({}),
        Timestamp::from_unix_millis(at),
    )
}

/// Saves `n` failed runs `run-000`…, and two waiting for an answer, `ask-a` (older) and `ask-b`.
async fn fill(runs: &PgRunStore, n: usize) {
    for i in 0..n {
        let mut r = run(&format!("run-{i:03}"), &format!("Filler {i}"), 10);
        r.fail(
            Failure::new(FailureKind::PlannerGaveUp, "no"),
            Timestamp::from_unix_millis(20),
        )
        .unwrap();
        runs.save(&r).await.unwrap();
    }
    for (id, at) in [("ask-b", 40), ("ask-a", 30)] {
        let mut r = run(id, "Ask the <b>Operator</b>", at);
        r.pause(
            "go on?",
            vec!["yes".into()],
            Timestamp::from_unix_millis(at),
        )
        .unwrap();
        runs.save(&r).await.unwrap();
    }
}

fn ids(page: &rein_postgres::RunPage) -> Vec<String> {
    page.runs.iter().map(|(id, _)| id.to_string()).collect()
}

#[tokio::test]
async fn a_page_is_filtered_ordered_and_counted_by_the_database() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    fill(stores.runs(), 25).await;
    let runs = stores.runs();

    let first = runs
        .page(&RunFilter::all(), RunOrder::WaitingFirstNewest, 0, 10)
        .await
        .unwrap();
    assert_eq!(first.total, 27);
    assert_eq!(ids(&first)[..4], ["ask-b", "ask-a", "run-024", "run-023"]);
    let last = runs
        .page(&RunFilter::all(), RunOrder::WaitingFirstNewest, 20, 10)
        .await
        .unwrap();
    assert_eq!((last.total, last.runs.len()), (27, 7));
    let beyond = runs
        .page(&RunFilter::all(), RunOrder::WaitingFirstNewest, 100, 10)
        .await
        .unwrap();
    assert_eq!((beyond.total, beyond.runs.len()), (27, 0));

    let waiting = runs
        .page(
            &RunFilter::all().waiting(),
            RunOrder::LongestUnchanged,
            0,
            10,
        )
        .await
        .unwrap();
    assert_eq!(
        (waiting.total, ids(&waiting)),
        (2, vec!["ask-a".to_owned(), "ask-b".to_owned()])
    );
    assert!(
        waiting
            .runs
            .iter()
            .all(|(_, r)| r.as_ref().is_ok_and(|r| r.status() == RunStatus::Paused))
    );

    let failed = runs
        .page(
            &RunFilter::all().status(RunStatus::Failed).text("filler 1"),
            RunOrder::WaitingFirstNewest,
            0,
            50,
        )
        .await
        .unwrap();
    assert_eq!(failed.total, 11, "filler 1 and 10–19, in any case");
    // The text is matched as given: `%` and `_` are no wildcards.
    let none = runs
        .page(
            &RunFilter::all().text("fill%"),
            RunOrder::WaitingFirstNewest,
            0,
            50,
        )
        .await
        .unwrap();
    assert_eq!(none.total, 0);
    let by_id = runs
        .page(
            &RunFilter::all().text("ask-"),
            RunOrder::WaitingFirstNewest,
            0,
            50,
        )
        .await
        .unwrap();
    assert_eq!(by_id.total, 2);
    db.drop_db().await;
}

#[tokio::test]
async fn the_listing_columns_of_runs_saved_before_schema_4_are_filled_in_by_its_migration() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    fill(stores.runs(), 3).await;
    // Back to schema 3, as a database an older rein wrote; one snapshot is not JSON.
    let sql = db.sql().await;
    sql.batch_execute(
        "DROP INDEX rein_runs_status; DROP INDEX rein_runs_waiting;
         ALTER TABLE rein_runs DROP COLUMN status, DROP COLUMN waiting, DROP COLUMN goal, DROP COLUMN updated_at;
         INSERT INTO rein_runs (run_id, snapshot) VALUES ('broken-1', 'not json');
         UPDATE rein_schema SET version = 3;",
    )
    .await
    .unwrap();
    drop(stores);
    let stores = db.stores().await;
    let runs = stores.runs();
    let waiting = runs
        .page(
            &RunFilter::all().waiting(),
            RunOrder::LongestUnchanged,
            0,
            10,
        )
        .await
        .unwrap();
    assert_eq!(ids(&waiting), ["ask-a", "ask-b"]);
    let failed = runs
        .page(
            &RunFilter::all().status(RunStatus::Failed),
            RunOrder::WaitingFirstNewest,
            0,
            10,
        )
        .await
        .unwrap();
    assert_eq!(failed.total, 3);
    let operator = runs
        .page(
            &RunFilter::all().text("operator"),
            RunOrder::WaitingFirstNewest,
            0,
            10,
        )
        .await
        .unwrap();
    assert_eq!(operator.total, 2);
    // The unreadable row is listed, with its error.
    let all = runs
        .page(&RunFilter::all(), RunOrder::WaitingFirstNewest, 0, 10)
        .await
        .unwrap();
    assert_eq!(all.total, 6);
    let broken: RunId = "broken-1".parse().unwrap();
    assert!(all.runs.iter().any(|(id, r)| *id == broken && r.is_err()));
    db.drop_db().await;
}

#[tokio::test]
async fn the_runs_lists_order_is_an_index_walked_from_its_end_not_a_sort_of_every_run() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    fill(stores.runs(), 25).await;
    let sql = db.sql().await;
    // A table this small would be sorted anyway: the planner is told to avoid sorting and
    // scanning the table, so the plan shows whether an index gives the runs list's order.
    sql.batch_execute("SET enable_sort = off; SET enable_seqscan = off;")
        .await
        .unwrap();
    let plan: Vec<String> = sql
        .query(
            "EXPLAIN SELECT run_id FROM rein_runs
             ORDER BY (waiting IS NOT NULL) DESC, run_id DESC LIMIT 50 OFFSET 50",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("Index Only Scan Backward using rein_runs_listing")
            || plan.contains("Index Scan Backward using rein_runs_listing"),
        "{plan}"
    );
    assert!(!plan.contains("Sort"), "{plan}");
    db.drop_db().await;
}

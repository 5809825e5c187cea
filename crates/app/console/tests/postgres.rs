//! The console on a `PostgreSQL` store: the runs list and the inbox paged and filtered by
//! the database, a run's page with its verified ledger, an approval and an answer given
//! there and driven on, a stop asked through `Engine::request_stop` and honoured when the
//! run is next driven. Runs against the test cluster (`make pg-start`, or
//! `REIN_TEST_PG_URL`; docs/POSTGRES.md); without one it says so and checks nothing.

mod support;

use std::path::Path;
use std::sync::Arc;

use axum::http::StatusCode;
use rein::ledger::EntryKind;
use rein::postgres::{PgConfig, PgStores};
use rein::run::{FailureKind, StopRequest};
use rein::store::{MemoryStopRequests, RunStore as _, RunStoreError, StopRequestStore};
use rein::{Decision, Engine, RunId, RunStatus, ScriptStep, ScriptedPlanner, State, Value, json};
use rein_console::{BoxFuture, Console, OpenedRun, RunDriver, Stores, Tokens};
use support::{ALICE, BOB, T0, asking, builder, field, get, planner, post, verdicts};

/// The test cluster's URL, or `None` (said on stderr) when there is none.
fn url() -> Option<String> {
    if let Ok(url) = std::env::var("REIN_TEST_PG_URL")
        && !url.trim().is_empty()
    {
        return Some(url.trim().to_owned());
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/pg/url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            eprintln!(
                "skipped: the console's PostgreSQL test needs a database; run `make pg-start` \
                 or set REIN_TEST_PG_URL to a postgres:// url of a role that may create databases"
            );
            None
        }
    }
}

/// A fresh database on the cluster at `url`, and its name.
async fn fresh(url: &str) -> (PgConfig, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_nanos();
    let name = format!("rein_console_{}_{nanos}", std::process::id());
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the test cluster answers");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("the test role may create databases");
    let config = PgConfig::from_url(url)
        .expect("the test url parses")
        .with_dbname(&name);
    (config, name)
}

async fn drop_db(url: &str, name: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the test cluster answers");
    tokio::spawn(connection);
    let _ = client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await;
}

/// One stop request store shared by every engine of the test (as `rein serve` shares one
/// between its console and the engines it drives runs with).
#[derive(Clone, Default)]
struct Stops(Arc<MemoryStopRequests>);

impl StopRequestStore for Stops {
    async fn request(&self, id: &RunId, request: &StopRequest) -> Result<(), RunStoreError> {
        self.0.request(id, request).await
    }
    async fn pending(&self, id: &RunId) -> Result<Option<StopRequest>, RunStoreError> {
        self.0.pending(id).await
    }
    async fn clear(&self, id: &RunId, honoured: &StopRequest) -> Result<(), RunStoreError> {
        self.0.clear(id, honoured).await
    }
}

/// An engine on the store, with the test's tools and approval policy.
fn engine(stores: &PgStores, stops: &Stops, planner: ScriptedPlanner) -> Engine {
    builder(T0, planner)
        .run_store(stores.runs().clone())
        .ledger_store(stores.ledgers().clone())
        .artifact_store(stores.artifacts().clone())
        .stop_request_store(stops.clone())
        .build()
        .expect("engine builds")
}

/// Drives runs on with an engine on the store: the deploy script, or the asking one.
struct PgDriver {
    stores: PgStores,
    stops: Stops,
    input: Value,
}

impl RunDriver for PgDriver {
    fn open<'a>(&'a self, id: &'a RunId) -> BoxFuture<'a, Result<OpenedRun, String>> {
        Box::pin(async move {
            let run = self
                .stores
                .runs()
                .load(id)
                .await
                .map_err(|e| e.to_string())?;
            let asks = run.pending_question().is_some();
            let script = if asks { asking() } else { planner(&self.input) };
            Ok(OpenedRun {
                engine: engine(&self.stores, &self.stops, script),
                release: Box::pin(async {}),
            })
        })
    }

    fn describe(&self, _id: &RunId) -> String {
        "the test drives it".to_owned()
    }
}

/// The rows of a runs page.
fn rows(page: &str) -> usize {
    page.matches("<tr><td><a href=\"/runs/").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_lists_shows_answers_approves_and_stops_runs_kept_in_postgres() {
    let Some(url) = url() else { return };
    let (config, name) = fresh(&url).await;
    let stores = PgStores::connect(config)
        .await
        .expect("the fresh database opens");
    let stops = Stops::default();
    let input = json!({"env": "prod"});

    // 60 runs that end at once, three that wait for a verdict, one for an answer.
    let quick = engine(
        &stores,
        &stops,
        ScriptedPlanner::new([ScriptStep::expect(State::Intake, Decision::fail("done"))]),
    );
    let mut fillers = Vec::new();
    for n in 0..60 {
        fillers.push(
            quick
                .run(format!("filler {n}"))
                .await
                .expect("a run")
                .id()
                .clone(),
        );
    }
    let mut waiting = Vec::new();
    for goal in ["deploy <b>alpha</b>", "deploy beta", "deploy delta"] {
        let run = engine(&stores, &stops, planner(&input))
            .run(goal)
            .await
            .expect("a run");
        assert_eq!(run.status(), RunStatus::Paused);
        waiting.push(run.id().clone());
    }
    let asked = engine(&stores, &stops, asking())
        .run("question gamma")
        .await
        .expect("a run");
    let [alpha, beta, delta] = waiting.try_into().expect("three runs");
    let gamma = asked.id().clone();

    let tokens = Tokens::none()
        .with("alice", ALICE)
        .and_then(|t| t.with("bob", BOB))
        .expect("valid operators");
    let console = Console::new(Stores::postgres(&stores), tokens)
        .expect("console")
        .stop_engine(engine(&stores, &stops, ScriptedPlanner::new([])))
        .driver(PgDriver {
            stores: stores.clone(),
            stops: stops.clone(),
            input: input.clone(),
        });
    let app = console.router();

    // Paged and filtered by the database; those waiting for a person first.
    let first = get(&app, "/", None).await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(
        first.body.contains("64 runs · page 1 of 2"),
        "{}",
        first.body
    );
    assert_eq!(rows(&first.body), 50);
    let head = &first.body[..first.body.find("filler").expect("a filler run")];
    for id in [&alpha, &beta, &delta, &gamma] {
        assert!(head.contains(id.as_str()), "the waiting runs come first");
    }
    assert!(!first.body.contains("<b>alpha</b>"), "goals are escaped");
    assert_eq!(rows(&get(&app, "/?page=2", None).await.body), 14);
    let waiting = get(&app, "/?status=waiting", None).await.body;
    assert!(waiting.contains("4 runs · page 1 of 1"), "{waiting}");
    let failed = get(&app, "/?status=failed&q=FILLER%205", None).await.body;
    assert!(failed.contains("11 runs · page 1 of 1"), "{failed}");
    let by_id = get(&app, &format!("/?q={}", &beta.as_str()[..30]), None)
        .await
        .body;
    assert!(by_id.contains(beta.as_str()), "{by_id}");

    // A ledger row edited behind the store's back: its run is listed as damaged (the page's
    // ledgers are read together, each verified), the others as they were.
    let mut sql_config: tokio_postgres::Config = url.parse().expect("the test url parses");
    sql_config.dbname(&name);
    let (sql, connection) = sql_config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("the database answers");
    tokio::spawn(connection);
    sql.execute(
        "UPDATE rein_ledger SET line = convert_to(replace(convert_from(line, 'UTF8'), \
         'filler 0', 'filler X'), 'UTF8') WHERE run_id = $1 AND seq = 1",
        &[&fillers[0].as_str()],
    )
    .await
    .expect("the row edited");
    let second = get(&app, "/?page=2", None).await.body;
    assert_eq!(rows(&second), 14);
    assert_eq!(
        second
            .matches("<span class=\"broken\">damaged</span>")
            .count(),
        1,
        "{second}"
    );

    // A run's page: its ledger verified by the server.
    let page = get(&app, &format!("/runs/{alpha}"), Some(ALICE)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("chain verified"), "{}", page.body);

    // The inbox, filtered.
    let inbox = get(&app, "/inbox", Some(ALICE)).await.body;
    assert!(inbox.contains("4 runs waiting for a person"), "{inbox}");
    let deploys = get(&app, "/inbox?q=deploy", Some(ALICE)).await.body;
    assert!(deploys.contains("3 runs waiting for a person"), "{deploys}");
    let confirm = get(&app, "/inbox/deny-all?q=delta", Some(ALICE)).await.body;
    assert!(confirm.contains("data-count=\"1\""), "{confirm}");

    // An approval, driven on to its end.
    let granted = post(
        &app,
        &format!("/runs/{alpha}/approval"),
        &[
            ("csrf", &field(&page.body, "csrf")),
            ("input_hash", &field(&page.body, "input_hash")),
            ("verdict", "approve"),
            ("reason", "ship it"),
        ],
        Some(ALICE),
    )
    .await;
    assert_eq!(granted.status, StatusCode::SEE_OTHER, "{}", granted.body);
    console.settled().await;
    let ledger = quick.ledger(&alpha).await.expect("a verified ledger");
    assert_eq!(
        verdicts(ledger.entries()),
        [("granted".to_owned(), "alice".to_owned())]
    );
    assert_eq!(
        quick.load_run(&alpha).await.expect("a run").status(),
        RunStatus::Completed
    );

    // An answer.
    let gamma_page = get(&app, &format!("/runs/{gamma}"), Some(BOB)).await.body;
    let answered = post(
        &app,
        &format!("/runs/{gamma}/answer"),
        &[("csrf", &field(&gamma_page, "csrf")), ("answer", "yes")],
        Some(BOB),
    )
    .await;
    assert_eq!(answered.status, StatusCode::SEE_OTHER, "{}", answered.body);
    console.settled().await;
    assert_eq!(
        quick.load_run(&gamma).await.expect("a run").status(),
        RunStatus::Completed
    );

    // A stop through the console's engine: shown as waiting, honoured when beta is next
    // driven (after a verdict), ledgered with who asked. A finished run is refused.
    let beta_page = get(&app, &format!("/runs/{beta}"), Some(BOB)).await.body;
    let stop = post(
        &app,
        &format!("/runs/{beta}/stop"),
        &[
            ("csrf", &field(&beta_page, "csrf")),
            ("kind", "abort"),
            ("reason", "wrong env"),
        ],
        Some(BOB),
    )
    .await;
    assert_eq!(stop.status, StatusCode::SEE_OTHER, "{}", stop.body);
    let beta_page = get(&app, &format!("/runs/{beta}"), Some(BOB)).await.body;
    assert!(beta_page.contains("id=\"stop-request\""), "{beta_page}");
    let finished = post(
        &app,
        &format!("/runs/{alpha}/stop"),
        &[
            ("csrf", &field(&beta_page, "csrf")),
            ("kind", "abort"),
            ("reason", "late"),
        ],
        Some(BOB),
    )
    .await;
    assert_eq!(finished.status, StatusCode::CONFLICT, "{}", finished.body);
    let approved = post(
        &app,
        &format!("/runs/{beta}/approval"),
        &[
            ("csrf", &field(&beta_page, "csrf")),
            ("input_hash", &field(&beta_page, "input_hash")),
            ("verdict", "approve"),
            ("reason", "go"),
        ],
        Some(BOB),
    )
    .await;
    assert_eq!(approved.status, StatusCode::SEE_OTHER, "{}", approved.body);
    console.settled().await;
    let beta_run = quick.load_run(&beta).await.expect("a run");
    assert_eq!(
        beta_run.failure().map(|f| f.kind),
        Some(FailureKind::Aborted)
    );
    let asked_by: Vec<String> = quick
        .ledger(&beta)
        .await
        .expect("a verified ledger")
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::StopRequested { request } => Some(request.by.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(asked_by, ["bob"]);

    // The list follows the store: only delta waits now.
    let waiting = get(&app, "/?status=waiting", None).await.body;
    assert!(
        waiting.contains("1 run · page 1 of 1") && waiting.contains(delta.as_str()),
        "{waiting}"
    );

    drop(app);
    drop(console);
    drop(quick);
    drop(stores);
    drop_db(&url, &name).await;
}

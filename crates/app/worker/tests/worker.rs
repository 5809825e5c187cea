//! Workers on one `PostgreSQL` store: submitted runs are each driven exactly once by one of
//! two workers; a worker held mid-call past its lease is taken over by another without the
//! non-idempotent call running twice, and its late write is fenced out; a stopped worker
//! leaves its run queued for the next. Runs against the test cluster (`make pg-start`, or
//! `REIN_TEST_PG_URL`; docs/POSTGRES.md).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rein::ledger::EntryKind;
use rein::postgres::{PgConfig, PgStores};
use rein::run::FailureKind;
use rein::{
    Annotations, Decision, Engine, FnTool, RunId, RunStatus, ScriptStep, ScriptedPlanner, State,
    Value, json,
};
use rein_worker::{Opened, Outcome, Worker, WorkerOptions, WorkerReport, submit};
use tokio::sync::Notify;
use tokio_postgres::NoTls;
use tokio_util::sync::CancellationToken;

/// The test cluster's URL: `REIN_TEST_PG_URL`, else the one `make pg-start` wrote. Without
/// either the test fails saying how to start one; it never skips silently.
fn url() -> String {
    if let Ok(url) = std::env::var("REIN_TEST_PG_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_owned();
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/pg/url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => panic!(
            "the PostgreSQL tests need a database: run `make pg-start`, or set \
             REIN_TEST_PG_URL to a postgres:// url; `make test` does the first for you"
        ),
    }
}

async fn sql(dbname: Option<&str>) -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = url().parse().unwrap();
    if let Some(name) = dbname {
        config.dbname(name);
    }
    let (client, connection) = config.connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// A fresh database; each `stores()` is another process's view of it.
struct Fresh {
    name: String,
    config: PgConfig,
}

impl Fresh {
    async fn new() -> Self {
        let name = format!("rein_worker_{}", uuid::Uuid::new_v4().simple());
        sql(None)
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let config = PgConfig::from_url(&url()).unwrap().with_dbname(&name);
        Self { name, config }
    }

    async fn stores(&self) -> PgStores {
        PgStores::connect(self.config.clone()).await.unwrap()
    }

    /// Drops the database (its connections too).
    async fn drop_db(self) {
        support::drop_database(&sql(None).await, &self.name).await;
    }
}

/// A non-idempotent tool that counts its calls, optionally held at a gate: it signals
/// `entered`, then waits for `release` (permits are stored, so neither side misses one).
#[derive(Clone, Default)]
struct Probe {
    calls: Arc<AtomicUsize>,
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

impl Probe {
    fn tool(&self, held: bool) -> FnTool {
        let probe = self.clone();
        FnTool::builder("write")
            .description("a write that must run once")
            .annotations(Annotations::side_effecting())
            .handler(move |_: Value| {
                let probe = probe.clone();
                async move {
                    probe.calls.fetch_add(1, Ordering::SeqCst);
                    if held {
                        probe.entered.notify_one();
                        probe.release.notified().await;
                    }
                    Ok(json!({"written": true}))
                }
            })
            .build()
            .unwrap()
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

fn engine(stores: &PgStores, tool: FnTool) -> Engine {
    let t = |from, to| ScriptStep::expect(from, Decision::transition(to, "walk"));
    Engine::builder()
        .planner(ScriptedPlanner::new([
            t(State::Intake, State::Explore),
            t(State::Explore, State::Decide),
            t(State::Decide, State::Act),
            ScriptStep::expect(State::Act, Decision::call_tool("write", json!({}), "write")),
            t(State::Act, State::Validate),
            ScriptStep::expect(State::Validate, Decision::finish("written", json!("ok"))),
        ]))
        .run_store(stores.runs().clone())
        .ledger_store(stores.ledgers().clone())
        .artifact_store(stores.artifacts().clone())
        .tool(tool)
        .budget("tool_calls", 5)
        .build()
        .unwrap()
}

fn options(name: &str) -> WorkerOptions {
    WorkerOptions {
        concurrency: 3,
        lease_ttl: Duration::from_secs(600),
        // Only how soon an idle worker looks again when it missed a NOTIFY.
        poll: Duration::from_millis(20),
        ..WorkerOptions::new(name)
    }
}

/// Starts a worker on its own stores, with `engine` for every run.
fn start(
    stores: PgStores,
    engine: Engine,
    name: &str,
) -> (CancellationToken, tokio::task::JoinHandle<WorkerReport>) {
    let stop = CancellationToken::new();
    let worker = Worker::new(
        stores,
        move |_: RunId| {
            let engine = engine.clone();
            async move { Ok(Opened::new(engine)) }
        },
        options(name),
    )
    .unwrap();
    let token = stop.clone();
    (
        stop,
        tokio::spawn(async move { worker.run(token).await.unwrap() }),
    )
}

async fn until_queue_empty(stores: &PgStores) {
    while !stores.queued().await.unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn resumes(entries: &[rein::ledger::Entry]) -> usize {
    entries
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::RunResumed { .. }))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_drive_every_submitted_run_exactly_once() {
    const RUNS: usize = 24;
    let db = Fresh::new().await;
    let (submitter, a, b) = (db.stores().await, db.stores().await, db.stores().await);
    let probe = Probe::default();
    let front = engine(&submitter, probe.tool(false));
    let mut ids = Vec::new();
    for i in 0..RUNS {
        ids.push(
            submit(&front, &submitter, format!("write {i}"))
                .await
                .unwrap(),
        );
    }
    assert_eq!(submitter.queued().await.unwrap(), ids);

    let (stop_a, worker_a) = start(a.clone(), engine(&a, probe.tool(false)), "worker-a");
    let (stop_b, worker_b) = start(b.clone(), engine(&b, probe.tool(false)), "worker-b");
    until_queue_empty(&submitter).await;
    stop_a.cancel();
    stop_b.cancel();
    let (a_report, b_report) = (worker_a.await.unwrap(), worker_b.await.unwrap());

    let mut driven: Vec<RunId> = a_report
        .runs
        .iter()
        .chain(&b_report.runs)
        .map(|d| {
            assert_eq!(d.outcome, Outcome::Settled(RunStatus::Completed), "{d:?}");
            d.run_id.clone()
        })
        .collect();
    driven.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    let mut expected = ids.clone();
    expected.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    assert_eq!(
        driven, expected,
        "each run driven by exactly one worker, once"
    );
    assert_eq!(probe.calls(), RUNS, "one write per run");
    for id in &ids {
        let ledger = front.ledger(id).await.unwrap();
        ledger.verify().unwrap();
        assert_eq!(resumes(ledger.entries()), 1, "run {id} was picked up once");
        assert_eq!(
            front.load_run(id).await.unwrap().status(),
            RunStatus::Completed
        );
    }
    // The figures, shown with --nocapture.
    eprintln!(
        "{RUNS} runs: worker-a drove {}, worker-b {}",
        a_report.runs.len(),
        b_report.runs.len()
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_held_past_its_lease_is_taken_over_without_a_second_write() {
    let db = Fresh::new().await;
    let (submitter, a, b) = (db.stores().await, db.stores().await, db.stores().await);
    let (held, other) = (Probe::default(), Probe::default());
    let front = engine(&submitter, other.tool(false));
    let id = submit(&front, &submitter, "write once").await.unwrap();

    let (stop_a, worker_a) = start(a.clone(), engine(&a, held.tool(true)), "worker-a");
    held.entered.notified().await; // A is inside the write.
    // A's lease expires by the database's clock, as a stalled worker's would.
    let expired = sql(Some(&db.name))
        .await
        .execute(
            "UPDATE rein_leases SET expires_at = now() - interval '1 second' WHERE run_id = $1",
            &[&id.as_str()],
        )
        .await
        .unwrap();
    assert_eq!(expired, 1);

    let (stop_b, worker_b) = start(b.clone(), engine(&b, other.tool(false)), "worker-b");
    until_queue_empty(&submitter).await;
    stop_b.cancel();
    let b_report = worker_b.await.unwrap();
    // B resumed the run: the write is in doubt and not idempotent, so it fails the run
    // instead of writing again.
    assert_eq!(b_report.runs.len(), 1);
    assert_eq!(
        b_report.runs[0].outcome,
        Outcome::Settled(RunStatus::Failed)
    );
    assert_eq!(b_report.runs[0].token, 2);
    let run = front.load_run(&id).await.unwrap();
    let failure = run.failure().unwrap();
    assert_eq!(failure.kind, FailureKind::InDoubtToolCall, "{failure:?}");
    assert!(failure.message.contains("not run again"), "{failure:?}");

    // A is released: its write returns, and recording it is refused.
    held.release.notify_one();
    stop_a.cancel();
    let a_report = worker_a.await.unwrap();
    assert_eq!(a_report.runs.len(), 1);
    assert_eq!(a_report.runs[0].outcome, Outcome::FencedOut);
    assert_eq!((held.calls(), other.calls()), (1, 0), "the write ran once");

    let ledger = front.ledger(&id).await.unwrap();
    ledger.verify().unwrap();
    assert!(
        !ledger
            .entries()
            .iter()
            .any(|e| matches!(e.event(), EntryKind::ToolResult { .. })),
        "A's late result was not recorded"
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_that_shuts_down_leaves_its_run_queued_for_the_next() {
    let db = Fresh::new().await;
    let (submitter, a, b) = (db.stores().await, db.stores().await, db.stores().await);
    let (held, other) = (Probe::default(), Probe::default());
    let front = engine(&submitter, other.tool(false));
    let id = submit(&front, &submitter, "write once").await.unwrap();

    let (stop_a, worker_a) = start(a.clone(), engine(&a, held.tool(true)), "worker-a");
    held.entered.notified().await;
    // Shutdown while the write is in progress: it finishes and is recorded, nothing new starts.
    stop_a.cancel();
    held.release.notify_one();
    let a_report = worker_a.await.unwrap();
    assert_eq!(a_report.runs[0].outcome, Outcome::Stopped);
    assert_eq!(submitter.queued().await.unwrap(), vec![id.clone()]);
    assert_eq!(
        front.load_run(&id).await.unwrap().status(),
        RunStatus::Interrupted
    );

    // The next worker takes it over at once (the lease was released) and finishes it.
    let (stop_b, worker_b) = start(b.clone(), engine(&b, other.tool(false)), "worker-b");
    until_queue_empty(&submitter).await;
    stop_b.cancel();
    let b_report = worker_b.await.unwrap();
    assert_eq!(
        b_report.runs[0].outcome,
        Outcome::Settled(RunStatus::Completed)
    );
    assert_eq!((held.calls(), other.calls()), (1, 0), "the write ran once");
    front.ledger(&id).await.unwrap().verify().unwrap();
    db.drop_db().await;
}

//! The `PostgreSQL` workloads of docs/BENCHMARKS.md, against the throwaway cluster (`make
//! bench-pg`, or `REIN_TEST_PG_URL`):
//!
//! - **P1, a durable step**: W1 on the `PostgreSQL` stores, one run at a time, next to the same
//!   rows written raw over one connection (the stores get a pool of one connection too):
//!   each ledger row and each snapshot the engine saved in a transaction of its own, the
//!   cheapest way to do that — one autocommit `INSERT` per ledger row, one autocommit
//!   upsert per snapshot save (the statement is its transaction: one round trip, no `BEGIN`
//!   or `COMMIT` of its own), as the stores write them.
//! - **P2, workers**: W1 runs submitted to the queue and driven by 1, 2 and 4 workers (each
//!   with its own pool, as on separate machines) in this process: runs/s and the scaling.
//!
//! Run with `-- p1` or `-- p2` for one of them.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

#[path = "../../../rein/benches/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{DECISIONS, GOAL, repeat_pair};
use rein::Engine;
use rein::postgres::{PgConfig, PgStores};
use rein::store::{RunStore, RunStoreError};
use rein::{Run, RunId};
use rein_worker::{Opened, Outcome, Worker, WorkerOptions, submit};
use tokio::sync::Notify;
use tokio_postgres::NoTls;
use tokio_util::sync::CancellationToken;

/// Runs per repetition of P1.
const P1_RUNS: usize = 20;
/// Runs per repetition of P2, and how many each worker drives at once.
const P2_RUNS: usize = 256;
const P2_CONCURRENCY: usize = 8;
/// Repetitions of P2 (each takes seconds).
const P2_REPS: usize = 5;

fn url() -> String {
    if let Ok(url) = std::env::var("REIN_TEST_PG_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_owned();
    }
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/pg/url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => panic!(
            "the PostgreSQL benchmarks need a database: run `make bench-pg` (or `make pg-start`, \
             or set REIN_TEST_PG_URL to a postgres:// url)"
        ),
    }
}

async fn connect(url: &str, dbname: Option<&str>) -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = url.parse().expect("a postgres url");
    if let Some(name) = dbname {
        config.dbname(name);
    }
    let (client, connection) = config.connect(NoTls).await.expect("connected");
    tokio::spawn(connection);
    client
}

/// A fresh database, dropped when done.
struct Fresh {
    url: String,
    name: String,
}

impl Fresh {
    async fn new(url: &str) -> Self {
        let name = format!("rein_bench_{}", std::process::id());
        let admin = connect(url, None).await;
        // Two statements: a multi-statement string would run in one transaction block.
        for sql in [
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ] {
            admin.batch_execute(&sql).await.expect("a fresh database");
        }
        Self {
            url: url.to_owned(),
            name,
        }
    }

    fn config(&self) -> PgConfig {
        PgConfig::from_url(&self.url)
            .expect("a postgres url")
            .with_dbname(&self.name)
    }

    async fn drop_db(self) {
        connect(&self.url, None)
            .await
            .batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name))
            .await
            .expect("dropped");
    }
}

/// A run store that counts the snapshots it saved (so the raw baseline writes as many).
struct Counting<S> {
    inner: S,
    saves: Arc<AtomicUsize>,
}

impl<S: RunStore> RunStore for Counting<S> {
    async fn save(&self, run: &Run) -> Result<(), RunStoreError> {
        self.saves.fetch_add(1, Ordering::Relaxed);
        self.inner.save(run).await
    }
    async fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        self.inner.load(id).await
    }
    async fn list(&self) -> Result<Vec<RunId>, RunStoreError> {
        self.inner.list().await
    }
}

fn p1(url: &str) {
    let rt = common::current_thread();
    let db = rt.block_on(Fresh::new(url));
    // One connection for the stores, one for the baseline.
    let stores = rt
        .block_on(PgStores::connect(db.config().with_pool_size(1)))
        .expect("the stores");
    let saves = Arc::new(AtomicUsize::new(0));
    let engine = common::engine(
        Engine::builder()
            .run_store(Counting {
                inner: stores.runs().clone(),
                saves: Arc::clone(&saves),
            })
            .ledger_store(stores.ledgers().clone())
            .artifact_store(stores.artifacts().clone()),
    );
    // The rows of one recorded run: its ledger lines and hashes, its final snapshot.
    let (lines, snapshot, saves_per_run) = rt.block_on(async {
        let run = common::run_w1(&engine).await;
        let ledger = engine.ledger(&run.id).await.expect("a ledger");
        let lines: Vec<(i64, String, Vec<u8>)> = ledger
            .entries()
            .iter()
            .map(|e| {
                (
                    i64::try_from(e.seq()).expect("a small seq"),
                    e.hash().to_string(),
                    e.json_line().to_vec(),
                )
            })
            .collect();
        let snapshot = serde_json::to_string(&run).expect("a snapshot");
        // The listing columns a save writes with the snapshot.
        let columns = (
            run.status().as_str(),
            i64::try_from(run.updated_at().as_unix_millis()).expect("a recent time"),
        );
        (lines, (snapshot, columns), saves.swap(0, Ordering::Relaxed))
    });
    let (snapshot, (status, updated_at)) = snapshot;
    let raw = rt.block_on(connect(url, Some(&db.name)));
    // Whether a commit waits for the disk (`make bench-pg PG_FSYNC=on`) or only for a round
    // trip (the test cluster's default): said with the figures.
    let fsync: String = rt
        .block_on(raw.query_one("SHOW fsync", &[]))
        .expect("fsync shown")
        .get(0);
    let (insert, upsert) = rt.block_on(async {
        (
            raw.prepare(
                "INSERT INTO rein_ledger (run_id, seq, hash, line, fencing_token) VALUES ($1, $2, $3, $4, NULL)",
            )
            .await
            .expect("prepared"),
            raw.prepare(
                "INSERT INTO rein_runs (run_id, snapshot, status, waiting, goal, updated_at)
                 VALUES ($1, $2, $3, NULL, $4, $5)
                 ON CONFLICT (run_id) DO UPDATE SET snapshot = EXCLUDED.snapshot,
                     status = EXCLUDED.status, waiting = EXCLUDED.waiting, goal = EXCLUDED.goal,
                     updated_at = EXCLUDED.updated_at, saved_at = now()",
            )
            .await
            .expect("prepared"),
        )
    });
    // As many snapshot saves as the engine made, spread over the run.
    let save_at: Vec<usize> = (0..saves_per_run)
        .map(|k| k * lines.len() / saves_per_run)
        .collect();
    let mut batch = 0usize;
    // The engine's own work, in memory: what rein adds besides its SQL.
    let in_memory = common::engine(Engine::builder());
    let (_, memory_step) = repeat_pair(
        || (Duration::ZERO, 1),
        || {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..P1_RUNS {
                    common::run_w1(&in_memory).await;
                }
                (start.elapsed(), (P1_RUNS * DECISIONS) as u64)
            })
        },
    );
    let (rein_step, raw_step) = repeat_pair(
        || {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..P1_RUNS {
                    common::run_w1(&engine).await;
                }
                (start.elapsed(), (P1_RUNS * DECISIONS) as u64)
            })
        },
        || {
            batch += 1;
            rt.block_on(async {
                let start = Instant::now();
                for r in 0..P1_RUNS {
                    let id = format!("raw-{batch}-{r}");
                    for (i, (seq, hash, line)) in lines.iter().enumerate() {
                        raw.execute(&insert, &[&id, seq, hash, line])
                            .await
                            .expect("inserted");
                        if save_at.contains(&i) {
                            raw.execute(&upsert, &[&id, &snapshot, &status, &GOAL, &updated_at])
                                .await
                                .expect("upserted");
                        }
                    }
                }
                (start.elapsed(), (P1_RUNS * DECISIONS) as u64)
            })
        },
    );
    println!(
        "\nP1  a durable step on PostgreSQL: W1 on the stores against the same rows written raw (fsync {fsync})"
    );
    println!(
        "    per run       {} ledger rows and {saves_per_run} snapshot saves, one autocommit statement each, on both sides",
        lines.len()
    );
    println!(
        "    rein          {} µs per step",
        rein_step.scaled(1e-3).show(1)
    );
    println!(
        "    raw SQL       {} µs per step",
        raw_step.scaled(1e-3).show(1)
    );
    println!(
        "    ratio         {:.2}x (target ≤ 1.3x)",
        rein_step.median / raw_step.median
    );
    println!(
        "    in memory     {} µs per step (W1 with the memory stores: the engine's own work)",
        memory_step.scaled(1e-3).show(1)
    );
    println!(
        "    SQL part      {:.2}x the raw rows (rein on PostgreSQL less rein in memory, over raw SQL)",
        (rein_step.median - memory_step.median) / raw_step.median
    );
    drop(engine);
    drop(stores);
    rt.block_on(db.drop_db());
}

/// The W1 engine on `stores`.
fn w1_on(stores: &PgStores) -> Engine {
    common::engine(
        Engine::builder()
            .run_store(stores.runs().clone())
            .ledger_store(stores.ledgers().clone())
            .artifact_store(stores.artifacts().clone()),
    )
}

/// One repetition of P2: `P2_RUNS` runs queued, then `workers` workers drive them; the time
/// from the workers' start until the last run settled.
async fn drive_all(db: &Fresh, workers: usize) -> (Duration, u64) {
    let front = PgStores::connect(db.config()).await.expect("the stores");
    let engine = w1_on(&front);
    for _ in 0..P2_RUNS {
        submit(&engine, &front, GOAL).await.expect("queued");
    }
    let settled = Arc::new(AtomicUsize::new(0));
    let all = Arc::new(Notify::new());
    let stop = CancellationToken::new();
    let mut tasks = Vec::new();
    let mut pools = Vec::new();
    for _ in 0..workers {
        pools.push(PgStores::connect(db.config()).await.expect("the stores"));
    }
    let start = Instant::now();
    for (w, stores) in pools.into_iter().enumerate() {
        let engine = w1_on(&stores);
        let (settled, all) = (Arc::clone(&settled), Arc::clone(&all));
        let worker = Worker::new(
            stores,
            move |_: RunId| {
                let engine = engine.clone();
                async move { Ok(Opened::new(engine)) }
            },
            WorkerOptions {
                concurrency: P2_CONCURRENCY,
                lease_ttl: Duration::from_secs(600),
                poll: Duration::from_millis(50),
                ..WorkerOptions::new(format!("bench-{w}"))
            },
        )
        .expect("a worker")
        .on_driven(move |driven| {
            assert!(
                matches!(driven.outcome, Outcome::Settled(rein::RunStatus::Completed)),
                "every P2 run completes: {driven:?}"
            );
            if settled.fetch_add(1, Ordering::SeqCst) + 1 == P2_RUNS {
                all.notify_one();
            }
        });
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move { worker.run(stop).await }));
    }
    all.notified().await;
    let elapsed = start.elapsed();
    stop.cancel();
    for task in tasks {
        task.await.expect("joined").expect("the worker stopped");
    }
    (elapsed, P2_RUNS as u64)
}

fn p2(url: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let db = rt.block_on(Fresh::new(url));
    let counts = [1, 2, 4];
    let mut samples = vec![Vec::new(); counts.len()];
    // Alternated, so that load from elsewhere on the machine falls on all of them.
    for _ in 0..P2_REPS {
        for (i, &workers) in counts.iter().enumerate() {
            samples[i].push(common::per_unit(rt.block_on(drive_all(&db, workers))));
        }
    }
    let figures: Vec<common::Figure> = samples.into_iter().map(common::Figure::of).collect();
    println!(
        "\nP2  W1 runs queued on one database, driven by workers ({P2_RUNS} runs, {P2_CONCURRENCY} at once per worker, {P2_REPS} repetitions)"
    );
    for (workers, figure) in counts.iter().zip(&figures) {
        println!(
            "    {workers} worker{}     {} runs/s",
            if *workers == 1 { " " } else { "s" },
            figure.rate(1e9).show(0)
        );
    }
    println!(
        "    scaling       1→2 {:.2}x, 1→4 {:.2}x",
        figures[0].median / figures[1].median,
        figures[0].median / figures[2].median
    );
    rt.block_on(db.drop_db());
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    let url = url();
    println!("{}", common::machine());
    if wanted("p1") {
        p1(&url);
    }
    if wanted("p2") {
        p2(&url);
    }
}

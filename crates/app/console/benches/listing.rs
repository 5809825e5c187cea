//! The console's load figure (docs/BENCHMARKS.md, "The console"): 10,000 runs in the
//! store, the console served over loopback HTTP (its router on a `TcpListener` bound to
//! 127.0.0.1:0, as `rein serve` serves it), and 50 concurrent readers each requesting in
//! turn the runs list's first page, a later page, the waiting filter, a run page, the inbox
//! and a static page, while a writer keeps starting and finishing runs in the same store
//! (100 a second).
//! p50 and p99 latency per page kind, each as a ratio to the static page's, measured by the
//! same readers in the same run. On a data directory (the console's run index) and, when
//! `REIN_TEST_PG_URL` names a cluster, on `PostgreSQL` (the database pages the runs).
//! Bounded: every reader makes a fixed number of rounds, and the writer stops when they end.
//!
//! Run with: `cargo bench -p rein-console --bench listing` (10,000 runs, 50 readers × 4
//! rounds), or `-- --short` (1,000 runs, 50 readers × 1 round, to check it works).

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rein::postgres::{PgConfig, PgStores};
use rein::store::FsyncPolicy;
use rein::{Decision, Engine, EngineBuilder, RunId, ScriptStep, ScriptedPlanner, State};
use rein_console::{Console, Stores, Tokens};

/// Concurrent readers.
const READERS: usize = 50;
/// How many runs the writer starts (each ends at once) a second while the readers read: far
/// more than agents whose steps wait on models write, and a pace rather than as fast as it
/// can, so that the figure is the console's under writes, not two cores given to a writer.
const WRITES_PER_SECOND: u32 = 100;
/// One run in this many waits for an answer.
const WAITING_EVERY: usize = 1000;
/// The static page every reader also requests each round: the same server's cheapest page.
const STATIC: &str = "/static/console.js";

/// What a reader requests each round, in turn; the static page comes last.
const KINDS: [&str; 6] = [
    "runs list, first page",
    "runs list, a later page",
    "runs waiting for a person",
    "a run's page",
    "inbox",
    "static page",
];

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let short = args.iter().any(|a| a == "--short");
    let (runs, rounds) = if short { (1_000, 1) } else { (10_000, 4) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        println!(
            "console under load over {runs} runs: {READERS} readers × {rounds} rounds over loopback HTTP while a writer starts and finishes runs; ms per request"
        );
        let dir = tempfile::tempdir().expect("a temp dir");
        let fs_engine = |asks| {
            script(asks)
                .filesystem_with(dir.path(), FsyncPolicy::Relaxed)
                .build()
                .expect("engine builds")
        };
        let filled = Instant::now();
        let ids = fill(runs, fs_engine).await;
        println!("data directory filled in {:.1} s", filled.elapsed().as_secs_f64());
        let console = Console::new(Stores::filesystem(dir.path()).expect("stores"), Tokens::none())
            .expect("a console");
        measure("data directory", &console, &ids, rounds, fs_engine(false)).await;

        if let Ok(url) = std::env::var("REIN_TEST_PG_URL") {
            let (config, name) = fresh(&url).await;
            let stores = PgStores::connect(config).await.expect("the database opens");
            let pg_engine = |asks| {
                script(asks)
                    .run_store(stores.runs().clone())
                    .ledger_store(stores.ledgers().clone())
                    .artifact_store(stores.artifacts().clone())
                    .build()
                    .expect("engine builds")
            };
            let filled = Instant::now();
            let ids = fill(runs, pg_engine).await;
            println!("PostgreSQL filled in {:.1} s", filled.elapsed().as_secs_f64());
            let console = Console::new(Stores::postgres(&stores), Tokens::none()).expect("a console");
            measure("PostgreSQL", &console, &ids, rounds, pg_engine(false)).await;
            drop(console);
            drop(stores);
            drop_db(&url, &name).await;
        } else {
            println!("PostgreSQL: skipped (set REIN_TEST_PG_URL; `make pg-start` starts one)");
        }
    });
}

/// A builder whose runs end at once (a failing first step), or ask a question.
fn script(asks: bool) -> EngineBuilder {
    let step = if asks {
        Decision::ask_human("go on?", ["yes", "no"])
    } else {
        Decision::fail("done at once")
    };
    Engine::builder().planner(ScriptedPlanner::new([ScriptStep::expect(
        State::Intake,
        step,
    )]))
}

/// Starts `runs` runs, at most 64 at once, on the engines `engine` builds; their ids.
async fn fill(runs: usize, engine: impl Fn(bool) -> Engine) -> Vec<RunId> {
    let quick = engine(false);
    let asking = engine(true);
    let mut tasks = tokio::task::JoinSet::new();
    let mut ids = Vec::with_capacity(runs);
    let mut joined = |done: Result<Result<RunId, rein::EngineError>, tokio::task::JoinError>| {
        ids.push(done.expect("joined").expect("a run"));
    };
    for n in 0..runs {
        let engine = if n % WAITING_EVERY == 0 {
            asking.clone()
        } else {
            quick.clone()
        };
        tasks.spawn(async move { engine.run(format!("run {n}")).await.map(|r| r.id().clone()) });
        while tasks.len() >= 64 {
            joined(tasks.join_next().await.expect("a task"));
        }
    }
    while let Some(done) = tasks.join_next().await {
        joined(done);
    }
    ids
}

/// Serves `console` on loopback, runs the readers against it while `writer` starts and
/// finishes runs, and prints p50 and p99 per page kind against the static page's.
async fn measure(place: &str, console: &Console, ids: &[RunId], rounds: usize, writer: Engine) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let (stop_serving, stopped) = tokio::sync::oneshot::channel::<()>();
    let app = console.router();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client");
    // The first listing builds the run index of a data directory: not what is measured.
    get(&client, addr, "/").await;

    let done = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let writing = {
        let (done, written) = (Arc::clone(&done), Arc::clone(&written));
        tokio::spawn(async move {
            let mut pace = tokio::time::interval(Duration::from_secs(1) / WRITES_PER_SECOND);
            pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !done.load(Ordering::Relaxed) {
                pace.tick().await;
                let n = written.fetch_add(1, Ordering::Relaxed);
                writer
                    .run(format!("written under load {n}"))
                    .await
                    .expect("a run under load");
            }
        })
    };
    let later = (ids.len() / 2).div_ceil(50).max(1);
    let started = Instant::now();
    let mut readers = tokio::task::JoinSet::new();
    for reader in 0..READERS {
        let client = client.clone();
        let ids = ids.to_vec();
        readers.spawn(async move {
            let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); KINDS.len()];
            for round in 0..rounds {
                let run = &ids[(reader * 7919 + round * 104_729) % ids.len()];
                let uris = [
                    "/".to_owned(),
                    format!("/?page={later}"),
                    "/?status=waiting".to_owned(),
                    format!("/runs/{run}"),
                    "/inbox".to_owned(),
                    STATIC.to_owned(),
                ];
                for (kind, uri) in uris.iter().enumerate() {
                    samples[kind].push(get(&client, addr, uri).await);
                }
            }
            samples
        });
    }
    let mut all: Vec<Vec<f64>> = vec![Vec::new(); KINDS.len()];
    while let Some(samples) = readers.join_next().await {
        for (into, from) in all.iter_mut().zip(samples.expect("a reader")) {
            into.extend(from);
        }
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    writing.await.expect("the writer");
    let _ = stop_serving.send(());
    server.await.expect("joined").expect("served");

    println!(
        "{place}: {} requests in {:.1} s, {} runs written meanwhile",
        READERS * rounds * KINDS.len(),
        elapsed.as_secs_f64(),
        written.load(Ordering::Relaxed)
    );
    let base = all[KINDS.len() - 1].clone();
    let (b50, b99) = (percentile(&base, 50), percentile(&base, 99));
    for (kind, samples) in KINDS.iter().zip(&all) {
        let (p50, p99) = (percentile(samples, 50), percentile(samples, 99));
        println!(
            "  {kind:<26} p50 {p50:>8.2} ms ({:>5.0}×)   p99 {p99:>8.2} ms ({:>5.0}×)",
            p50 / b50,
            p99 / b99
        );
    }
}

/// Milliseconds to get `uri` whole; it must answer 200.
async fn get(client: &reqwest::Client, addr: SocketAddr, uri: &str) -> f64 {
    let started = Instant::now();
    let response = client
        .get(format!("http://{addr}{uri}"))
        .send()
        .await
        .expect("the console answers");
    let status = response.status();
    let body = response.bytes().await.expect("a body");
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(status, reqwest::StatusCode::OK, "{uri}");
    std::hint::black_box(body);
    ms
}

/// The `p`th percentile of `samples` (nearest rank).
fn percentile(samples: &[f64], p: usize) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// A fresh database on the cluster at `url`, and its name.
async fn fresh(url: &str) -> (PgConfig, String) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos();
    let name = format!("rein_console_bench_{nanos}");
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the cluster answers");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("the role may create databases");
    let config = PgConfig::from_url(url)
        .expect("the url parses")
        .with_dbname(&name);
    (config, name)
}

async fn drop_db(url: &str, name: &str) {
    if let Ok((client, connection)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await {
        tokio::spawn(connection);
        let _ = client
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await;
    }
}

//! The console's load figure (docs/BENCHMARKS.md, "The console"): the runs list's first
//! and last page, the waiting filter and the inbox over 10,000 runs, each next to a static
//! page served by the same router in the same run, as a ratio. On a data directory (the
//! console's run index) and, when `REIN_TEST_PG_URL` names a cluster, on `PostgreSQL` (the
//! database pages the runs). Requests go through the router in process: what is measured
//! is the console's own work, not a socket's.
//!
//! Run with: `cargo bench -p rein-console --bench listing` (10,000 runs), or
//! `-- --short` (1,000 runs, to check it works).

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use rein::postgres::{PgConfig, PgStores};
use rein::store::FsyncPolicy;
use rein::{Decision, Engine, EngineBuilder, ScriptStep, ScriptedPlanner, State};
use rein_console::{Console, Stores, Tokens};
use tower::ServiceExt as _;

/// Repetitions of each figure; the median is shown with the min–max.
const REPS: usize = 11;
/// Requests per repetition.
const BATCH: usize = 5;
/// One run in this many waits for an answer.
const WAITING_EVERY: usize = 1000;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let runs = if args.iter().any(|a| a == "--short") {
        1_000
    } else {
        10_000
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        println!("console listing over {runs} runs: ms per request, median (min – max) of {REPS} × {BATCH}");
        let dir = tempfile::tempdir().expect("a temp dir");
        let filled = Instant::now();
        fill(runs, |asks| {
            script(asks)
                .filesystem_with(dir.path(), FsyncPolicy::Relaxed)
                .build()
                .expect("engine builds")
        })
        .await;
        println!("data directory filled in {:.1} s", filled.elapsed().as_secs_f64());
        let console = Console::new(Stores::filesystem(dir.path()).expect("stores"), Tokens::none())
            .expect("a console");
        measure("data directory", &console.router(), runs).await;

        if let Ok(url) = std::env::var("REIN_TEST_PG_URL") {
            let (config, name) = fresh(&url).await;
            let stores = PgStores::connect(config).await.expect("the database opens");
            let filled = Instant::now();
            fill(runs, |asks| {
                script(asks)
                    .run_store(stores.runs().clone())
                    .ledger_store(stores.ledgers().clone())
                    .artifact_store(stores.artifacts().clone())
                    .build()
                    .expect("engine builds")
            })
            .await;
            println!("PostgreSQL filled in {:.1} s", filled.elapsed().as_secs_f64());
            let console = Console::new(Stores::postgres(&stores), Tokens::none()).expect("a console");
            measure("PostgreSQL", &console.router(), runs).await;
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

/// Starts `runs` runs, at most 64 at once, on the engines `engine` builds.
async fn fill(runs: usize, engine: impl Fn(bool) -> Engine) {
    let quick = engine(false);
    let asking = engine(true);
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..runs {
        let engine = if n % WAITING_EVERY == 0 {
            asking.clone()
        } else {
            quick.clone()
        };
        tasks.spawn(async move { engine.run(format!("run {n}")).await.map(|_| ()) });
        while tasks.len() >= 64 {
            tasks
                .join_next()
                .await
                .expect("a task")
                .expect("joined")
                .expect("a run");
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("joined").expect("a run");
    }
}

/// Times the pages, each against the static page, alternating repetition by repetition.
async fn measure(place: &str, app: &Router, runs: usize) {
    let last = runs.div_ceil(50);
    // The first listing builds the run index of a data directory: not what is measured.
    get(app, "/").await;
    let pages = [
        ("runs list, first page", "/".to_owned()),
        ("runs list, last page", format!("/?page={last}")),
        ("runs waiting for a person", "/?status=waiting".to_owned()),
        ("inbox", "/inbox".to_owned()),
    ];
    println!("{place}:");
    for (what, uri) in &pages {
        let mut page = Vec::with_capacity(REPS);
        let mut base = Vec::with_capacity(REPS);
        for _ in 0..REPS {
            base.push(batch(app, "/static/console.js").await);
            page.push(batch(app, uri).await);
        }
        let (p, b) = (stats(&mut page), stats(&mut base));
        println!(
            "  {what:<28} {:>8.2} ms ({:.2} – {:.2})   static page {:.3} ms   ratio {:.0}×",
            p.0,
            p.1,
            p.2,
            b.0,
            p.0 / b.0
        );
    }
}

/// Milliseconds per request over a batch of `uri`.
async fn batch(app: &Router, uri: &str) -> f64 {
    let started = Instant::now();
    for _ in 0..BATCH {
        get(app, uri).await;
    }
    started.elapsed().as_secs_f64() * 1000.0 / BATCH as f64
}

async fn get(app: &Router, uri: &str) {
    let request = Request::get(uri).body(Body::empty()).expect("a request");
    let response = app.clone().oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK, "{uri}");
    let body = axum::body::to_bytes(response.into_body(), 64 * 1024 * 1024)
        .await
        .expect("a body");
    std::hint::black_box(body);
}

/// Median, min and max.
fn stats(samples: &mut [f64]) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
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

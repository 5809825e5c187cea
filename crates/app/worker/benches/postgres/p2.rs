//! P2, workers: W1 runs queued on one database and driven by 1, 2 and 4 workers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rein::RunId;
use rein::postgres::PgStores;
use rein_worker::{Opened, Outcome, Worker, WorkerOptions, submit};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::common::{self, GOAL};
use crate::{Fresh, w1_on};

/// Runs per repetition of P2, and how many each worker drives at once.
const P2_RUNS: usize = 256;
const P2_CONCURRENCY: usize = 8;
/// Repetitions of P2 (each takes seconds).
const P2_REPS: usize = 5;

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

pub(crate) fn p2(url: &str) {
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

//! The `PostgreSQL` workloads of docs/BENCHMARKS.md, against the throwaway cluster (`make
//! bench-pg`, or `REIN_TEST_PG_URL`):
//!
//! - **P1, a durable step**: W1 on the `PostgreSQL` stores, one run at a time, next to the same
//!   rows written raw over one connection (the stores get a pool of one connection too),
//!   committed at the same points the stores commit them, the cheapest way: with the
//!   default `CommitPolicy::EveryStep`, the rows of each step in one autocommit `INSERT`
//!   (a plain `INSERT … VALUES` for one row) at each sync and before each snapshot save;
//!   with `CommitPolicy::EveryEntry`, one autocommit `INSERT` per row. A snapshot save is
//!   one autocommit upsert on both sides. Where the engine syncs and saves is recorded from
//!   a run first.
//! - **P2, workers**: W1 runs submitted to the queue and driven by 1, 2 and 4 workers (each
//!   with its own pool, as on separate machines) in this process: runs/s and the scaling.
//!
//! Run with `-- p1` or `-- p2` for one of them; `-- wait` times W1 in memory with every sync
//! made to wait as a commit does (no database), `-- profile N [memory]` runs N W1 runs for
//! a profiler.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

#[path = "../../../rein/benches/common/mod.rs"]
mod common;
#[path = "../tests/support/mod.rs"]
mod support;

#[path = "postgres/on_cpu.rs"]
mod on_cpu;
#[path = "postgres/p1.rs"]
mod p1;
#[path = "postgres/p2.rs"]
mod p2;
#[path = "postgres/wait.rs"]
mod wait;

use rein::Engine;
use rein::postgres::{PgConfig, PgStores};
use tokio_postgres::NoTls;

/// Runs per repetition of the `wait` mode.
const P1_RUNS: usize = 20;
/// Rounds of P1: each side makes one W1 run a round, the sides in turn, so that what slows
/// the machine for a while (a checkpoint, a neighbour) slows every side alike.
const P1_ROUNDS: usize = 220;

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

    /// Drops the database (its connections too).
    async fn drop_db(self) {
        support::drop_database(&connect(&self.url, None).await, &self.name).await;
    }
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

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    // `wait`: no database needed.
    if args.iter().any(|a| a == "wait") {
        println!("{}", common::machine());
        wait::waits();
        return;
    }
    let url = url();
    // `profile N [memory]`: only N W1 runs on the PostgreSQL stores (or in memory), for a
    // profiler: the engine's and the stores' own work per run, apart from the database's.
    if let Some(at) = args.iter().position(|a| a == "profile") {
        let runs = args.get(at + 1).and_then(|n| n.parse().ok()).unwrap_or(300);
        wait::profile(&url, runs, args.iter().any(|a| a == "memory"));
        return;
    }
    println!("{}", common::machine());
    if wanted("p1") {
        p1::p1(&url);
    }
    if wanted("p2") {
        p2::p2(&url);
    }
}

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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{DECISIONS, GOAL};
use rein::Engine;
use rein::ledger::{Entry, LoadedLedger};
use rein::postgres::{CommitPolicy, PgConfig, PgStores};
use rein::store::{LedgerStore, LedgerStoreError, MemoryLedgerStore, RunStore, RunStoreError};
use rein::{Ledger, Run, RunId};
use rein_worker::{Opened, Outcome, Worker, WorkerOptions, submit};
use tokio::sync::Notify;
use tokio_postgres::NoTls;
use tokio_util::sync::CancellationToken;

/// Runs per repetition of the `wait` mode.
const P1_RUNS: usize = 20;
/// Rounds of P1: each side makes one W1 run a round, the sides in turn, so that what slows
/// the machine for a while (a checkpoint, a neighbour) slows every side alike.
const P1_ROUNDS: usize = 220;
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

    /// Drops the database (its connections too).
    async fn drop_db(self) {
        support::drop_database(&connect(&self.url, None).await, &self.name).await;
    }
}

/// What the engine asked of the stores while one W1 run was recorded, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// A ledger row appended (the run's next entry).
    Row,
    /// The run synced: a step's end, or before a side effect.
    Sync,
    /// A snapshot saved.
    Save,
}

type Log = Arc<Mutex<Vec<Write>>>;

/// A run store that logs its saves (so the raw baseline saves as often, at the same points).
struct LoggedRuns<S> {
    inner: S,
    log: Log,
}

impl<S: RunStore> RunStore for LoggedRuns<S> {
    async fn save(&self, run: &Run) -> Result<(), RunStoreError> {
        self.log.lock().expect("the log").push(Write::Save);
        self.inner.save(run).await
    }
    async fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        self.inner.load(id).await
    }
    async fn list(&self) -> Result<Vec<RunId>, RunStoreError> {
        self.inner.list().await
    }
}

/// A ledger store that logs its appends and syncs (so the raw baseline commits the same
/// rows at the same points).
struct LoggedLedgers<S> {
    inner: S,
    log: Log,
}

impl<S: LedgerStore> LedgerStore for LoggedLedgers<S> {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        self.log.lock().expect("the log").push(Write::Row);
        self.inner.append(entry).await
    }
    fn try_append_now(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        let done = self.inner.try_append_now(entry);
        if done.is_some() {
            self.log.lock().expect("the log").push(Write::Row);
        }
        done
    }
    async fn sync(&self, run_id: &RunId) -> Result<(), LedgerStoreError> {
        self.log.lock().expect("the log").push(Write::Sync);
        self.inner.sync(run_id).await
    }
    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        self.inner.load(run_id).await
    }
    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        self.inner.list().await
    }
}

/// One statement of the raw baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Raw {
    /// The ledger rows `rows`, in one autocommit `INSERT`.
    Insert(std::ops::Range<usize>),
    /// The snapshot, in one autocommit upsert.
    Upsert,
}

/// The raw statements that commit what the log wrote where the stores commit it: each
/// row on its own (`every_entry`), or the rows appended since the last commit together at
/// each sync and before each save (a step's commit).
fn raw_plan(log: &[Write], every_entry: bool) -> Vec<Raw> {
    let (mut plan, mut from, mut rows) = (Vec::new(), 0, 0);
    for write in log {
        match write {
            Write::Row => {
                rows += 1;
                if every_entry {
                    plan.push(Raw::Insert(from..rows));
                    from = rows;
                }
            }
            Write::Sync | Write::Save => {
                if from < rows {
                    plan.push(Raw::Insert(from..rows));
                    from = rows;
                }
                if *write == Write::Save {
                    plan.push(Raw::Upsert);
                }
            }
        }
    }
    if from < rows {
        plan.push(Raw::Insert(from..rows));
    }
    plan
}

fn p1(url: &str) {
    let rt = common::current_thread();
    let db = rt.block_on(Fresh::new(url));
    // One connection for each side's stores, one for the baseline.
    let stores_with = |commit| {
        rt.block_on(PgStores::connect(
            db.config().with_pool_size(1).with_commit(commit),
        ))
        .expect("the stores")
    };
    let (step_stores, entry_stores) = (
        stores_with(CommitPolicy::EveryStep),
        stores_with(CommitPolicy::EveryEntry),
    );
    let (step_engine, entry_engine) = (w1_on(&step_stores), w1_on(&entry_stores));
    // The rows of one recorded run — its ledger lines and hashes, its final snapshot — and
    // where the engine synced and saved.
    let log: Log = Arc::default();
    let recorder = common::engine(
        Engine::builder()
            .run_store(LoggedRuns {
                inner: step_stores.runs().clone(),
                log: Arc::clone(&log),
            })
            .ledger_store(LoggedLedgers {
                inner: step_stores.ledgers().clone(),
                log: Arc::clone(&log),
            })
            .artifact_store(step_stores.artifacts().clone()),
    );
    let (lines, snapshot, recorded) = rt.block_on(async {
        let run = common::run_w1(&recorder).await;
        let ledger = recorder.ledger(&run.id).await.expect("a ledger");
        let recorded = (ledger.clone(), run.clone());
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
        (lines, (snapshot, columns), recorded)
    });
    let log = log.lock().expect("the log").clone();
    assert_eq!(
        log.iter().filter(|w| **w == Write::Row).count(),
        lines.len(),
        "every row of the run was logged"
    );
    let (step_plan, entry_plan) = (raw_plan(&log, false), raw_plan(&log, true));
    let saves = log.iter().filter(|w| **w == Write::Save).count();
    let (snapshot, (status, updated_at)) = snapshot;
    let raw = rt.block_on(connect(url, Some(&db.name)));
    // Whether a commit waits for the disk (`make bench-pg PG_FSYNC=on`) or only for a round
    // trip (the test cluster's default): said with the figures.
    let fsync: String = rt
        .block_on(raw.query_one("SHOW fsync", &[]))
        .expect("fsync shown")
        .get(0);
    let (insert_one, insert_many, upsert) = rt.block_on(async {
        (
            raw.prepare(
                "INSERT INTO rein_ledger (run_id, seq, hash, line, fencing_token)
                 VALUES ($1, $2, $3, $4, NULL)",
            )
            .await
            .expect("prepared"),
            raw.prepare(
                "INSERT INTO rein_ledger (run_id, seq, hash, line, fencing_token)
                 SELECT $1, r.seq, r.hash, r.line, NULL
                 FROM unnest($2::bigint[], $3::text[], $4::bytea[]) AS r(seq, hash, line)",
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
    // The raw side of one run: each statement of `plan`, the cheapest that commits its
    // rows (one row: a plain `INSERT … VALUES`; more: one `INSERT` of them all).
    let raw_run = |plan: &[Raw], id: String| {
        let (raw, lines, snapshot) = (&raw, &lines, &snapshot);
        let (insert_one, insert_many, upsert) = (&insert_one, &insert_many, &upsert);
        let plan = plan.to_vec();
        async move {
            for statement in &plan {
                match statement {
                    Raw::Insert(rows) if rows.len() == 1 => {
                        let (seq, hash, line) = &lines[rows.start];
                        raw.execute(insert_one, &[&id, seq, hash, line])
                            .await
                            .expect("inserted");
                    }
                    Raw::Insert(rows) => {
                        let rows = &lines[rows.clone()];
                        let seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
                        let hashes: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
                        let bytes: Vec<&[u8]> = rows.iter().map(|r| r.2.as_slice()).collect();
                        raw.execute(insert_many, &[&id, &seqs, &hashes, &bytes])
                            .await
                            .expect("inserted");
                    }
                    Raw::Upsert => {
                        raw.execute(upsert, &[&id, snapshot, &status, &GOAL, &updated_at])
                            .await
                            .expect("upserted");
                    }
                }
            }
        }
    };
    let rein_runs = |engine: &Engine| {
        rt.block_on(async {
            let start = Instant::now();
            common::run_w1(engine).await;
            (start.elapsed(), DECISIONS as u64)
        })
    };
    let batch = std::cell::Cell::new(0usize);
    let raw_runs = |plan: &[Raw], side: &str| {
        batch.set(batch.get() + 1);
        rt.block_on(async {
            let start = Instant::now();
            raw_run(plan, format!("raw-{side}-{}", batch.get())).await;
            (start.elapsed(), DECISIONS as u64)
        })
    };
    // The engine's own work, in memory: what rein adds besides its SQL.
    let in_memory = common::engine(Engine::builder());
    // The stores without the engine: the recorded run's entries made again for fresh run
    // ids (made before timing), appended, synced and saved where the engine did.
    let mut remade = (0..P1_ROUNDS)
        .map(|_| remake(&recorded.0, &recorded.1))
        .collect::<Vec<_>>()
        .into_iter();
    let mut stores_only = || {
        let (ledger, run) = remade.next().expect("a run made for each round");
        rt.block_on(async {
            let start = Instant::now();
            replay(&step_stores, &log, &ledger, &run).await;
            (start.elapsed(), DECISIONS as u64)
        })
    };
    // Time on a CPU while each side ran: this process's, the database's.
    let spent: [std::cell::Cell<OnCpu>; 3] = Default::default();
    let files = OnCpu::files();
    let on_cpu = |slot: usize, side: &mut dyn FnMut() -> (Duration, u64)| {
        let before = OnCpu::now(&files);
        let figure = side();
        spent[slot].set(spent[slot].get() + OnCpu::now(&files).since(before));
        figure
    };
    // Three passes, each of sides compared with one another: a side's runs slow the
    // database for the side after them (the every-entry sides' seventy commits a run most),
    // so only sides of one comparison take turns.
    let [rein_step, raw_step] = in_turn(
        P1_ROUNDS,
        &mut [
            &mut || on_cpu(0, &mut || rein_runs(&step_engine)),
            &mut || on_cpu(1, &mut || raw_runs(&step_plan, "step")),
        ],
    )[..] else {
        unreachable!("two sides")
    };
    let [rein_entry, raw_entry] = in_turn(
        P1_ROUNDS,
        &mut [&mut || rein_runs(&entry_engine), &mut || {
            raw_runs(&entry_plan, "entry")
        }],
    )[..] else {
        unreachable!("two sides")
    };
    let [memory, stores, raw_again] = in_turn(
        P1_ROUNDS,
        &mut [
            &mut || rein_runs(&in_memory),
            &mut || on_cpu(2, &mut stores_only),
            &mut || raw_runs(&step_plan, "again"),
        ],
    )[..] else {
        unreachable!("three sides")
    };
    let per_step = |figure: common::Figure| figure.scaled(1e-3).show(1);
    println!(
        "\nP1  a durable step on PostgreSQL: W1 on the stores against the same rows written raw (fsync {fsync})"
    );
    println!(
        "    medians (min – max) of {P1_ROUNDS} rounds, a round one W1 run of each side compared, in turn"
    );
    println!(
        "    per run       {} ledger rows and {saves} snapshot saves; the engine synced {} times",
        lines.len(),
        log.iter().filter(|w| **w == Write::Sync).count(),
    );
    println!(
        "    every step    (the default) {} commits a run on both sides: the rows of a step in one statement",
        step_plan.len()
    );
    println!("      rein        {} µs per step", per_step(rein_step));
    println!("      raw SQL     {} µs per step", per_step(raw_step));
    println!(
        "      ratio       {:.2}x (target ≤ 1.3x)",
        rein_step.median / raw_step.median
    );
    println!(
        "    every entry   {} commits a run on both sides: one autocommit statement a row and a save",
        entry_plan.len()
    );
    println!("      rein        {} µs per step", per_step(rein_entry));
    println!("      raw SQL     {} µs per step", per_step(raw_entry));
    println!(
        "      ratio       {:.2}x",
        rein_entry.median / raw_entry.median
    );
    println!(
        "    in memory     {} µs per step (W1 with the memory stores: the engine's own work)",
        per_step(memory)
    );
    println!(
        "    stores only   {} µs per step ({:.2}x raw, {} µs, in turn with it): the run's writes through the stores, every step, without the engine",
        per_step(stores),
        stores.median / raw_again.median,
        per_step(raw_again),
    );
    let steps = (P1_ROUNDS * DECISIONS) as f64;
    for (name, slot) in [
        ("rein, every step", 0),
        ("raw, every step", 1),
        ("stores only", 2),
    ] {
        let OnCpu {
            client,
            server,
            switches,
        } = spent[slot].get();
        println!(
            "    on a CPU      {name}: this process {:.1} µs ({:.1} context switches), the database {:.1} µs per step",
            client as f64 / steps / 1e3,
            switches as f64 / steps,
            server as f64 / steps / 1e3
        );
    }
    drop((step_engine, entry_engine, recorder));
    drop((step_stores, entry_stores));
    rt.block_on(db.drop_db());
}

/// Calls each of `sides` once a round, in turn, for `rounds` rounds: each side's time per
/// unit.
fn in_turn(
    rounds: usize,
    sides: &mut [&mut dyn FnMut() -> (Duration, u64)],
) -> Vec<common::Figure> {
    let mut samples = vec![Vec::with_capacity(rounds); sides.len()];
    for _ in 0..rounds {
        for (side, samples) in sides.iter_mut().zip(&mut samples) {
            samples.push(common::per_unit(side()));
        }
    }
    samples.into_iter().map(common::Figure::of).collect()
}

/// Nanoseconds on a CPU, from the kernel's scheduler statistics: this process's threads
/// (`client`) and every `postgres` process's (`server`).
#[derive(Debug, Clone, Copy, Default)]
struct OnCpu {
    client: u64,
    server: u64,
    /// This process's context switches.
    switches: u64,
}

impl std::ops::Add for OnCpu {
    type Output = Self;
    fn add(self, other: Self) -> Self {
        Self {
            client: self.client + other.client,
            server: self.server + other.server,
            switches: self.switches + other.switches,
        }
    }
}

impl OnCpu {
    /// The scheduler statistics files to read: this process's threads, and every
    /// `postgres` process's (listed once: the benchmark's connections stay open).
    fn files() -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
        let tasks = |dir: &std::path::Path| -> Vec<std::path::PathBuf> {
            std::fs::read_dir(dir.join("task"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|t| t.path().join("schedstat"))
                .collect()
        };
        let server = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|p| {
                std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim() == "postgres")
            })
            .flat_map(|p| tasks(&p.path()))
            .collect();
        (tasks(std::path::Path::new("/proc/self")), server)
    }

    fn now(files: &(Vec<std::path::PathBuf>, Vec<std::path::PathBuf>)) -> Self {
        let ran = |paths: &[std::path::PathBuf]| -> u64 {
            paths
                .iter()
                .filter_map(|path| {
                    std::fs::read_to_string(path)
                        .ok()?
                        .split_whitespace()
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .sum()
        };
        let switches = std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
            .flat_map(|status| {
                status
                    .lines()
                    .filter(|l| l.contains("ctxt_switches"))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .collect::<Vec<_>>()
            })
            .sum();
        Self {
            client: ran(&files.0),
            server: ran(&files.1),
            switches,
        }
    }

    fn since(self, before: Self) -> Self {
        Self {
            client: self.client.saturating_sub(before.client),
            server: self.server.saturating_sub(before.server),
            switches: self.switches.saturating_sub(before.switches),
        }
    }
}

/// `ledger`'s entries made again for a fresh run id, and `run`'s snapshot for that id.
fn remake(ledger: &Ledger, run: &Run) -> (Ledger, Run) {
    let id = RunId::new(uuid::Uuid::new_v4().to_string()).expect("a run id");
    let mut again = Ledger::new(id.clone());
    for entry in ledger.entries() {
        again.append(entry.at(), entry.state(), entry.event().clone());
    }
    let snapshot = serde_json::to_string(run)
        .expect("a snapshot")
        .replace(run.id.as_str(), id.as_str());
    (
        again,
        serde_json::from_str(&snapshot).expect("the snapshot again"),
    )
}

/// What the engine wrote for one run, through `stores` alone: `ledger`'s entries appended,
/// the run synced and its snapshot saved at the points `log` recorded.
async fn replay(stores: &PgStores, log: &[Write], ledger: &Ledger, run: &Run) {
    let mut entries = ledger.entries().iter();
    for write in log {
        match write {
            Write::Row => {
                let entry = entries.next().expect("as many entries as rows");
                match stores.ledgers().try_append_now(entry) {
                    Some(done) => done,
                    None => stores.ledgers().append(entry).await,
                }
                .expect("appended");
            }
            Write::Sync => stores
                .ledgers()
                .sync(ledger.run_id())
                .await
                .expect("synced"),
            Write::Save => stores.runs().save(run).await.expect("saved"),
        }
    }
}

/// `runs` W1 runs one after another, on the `PostgreSQL` stores or in memory.
fn profile(url: &str, runs: usize, in_memory: bool) {
    let rt = common::current_thread();
    let db = rt.block_on(Fresh::new(url));
    let stores = rt
        .block_on(PgStores::connect(db.config().with_pool_size(1)))
        .expect("the stores");
    let engine = if in_memory {
        common::engine(Engine::builder())
    } else {
        w1_on(&stores)
    };
    rt.block_on(async {
        for _ in 0..runs {
            common::run_w1(&engine).await;
        }
    });
    drop((engine, stores));
    rt.block_on(db.drop_db());
}

/// The memory ledger store, each sync of which waits 300 µs on a blocking thread, as a
/// commit makes the engine wait for the database: the engine's own step after a wait.
struct Waiting(MemoryLedgerStore);

/// How long a [`Waiting`] sync waits.
const WAIT: Duration = Duration::from_micros(300);

async fn wait() {
    let _ = tokio::task::spawn_blocking(|| std::thread::sleep(WAIT)).await;
}

impl LedgerStore for Waiting {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        self.0.append(entry).await
    }
    fn try_append_now(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        self.0.try_append_now(entry)
    }
    async fn sync(&self, run_id: &RunId) -> Result<(), LedgerStoreError> {
        wait().await;
        self.0.sync(run_id).await
    }
    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        self.0.load(run_id).await
    }
    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        self.0.list().await
    }
}

/// `wait`: W1 in memory, and again with every sync waiting (no database), and the wait
/// alone: what the engine's step costs when it starts after a wait rather than in a tight
/// loop.
fn waits() {
    let rt = common::current_thread();
    let runs = |engine: &Engine| {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..P1_RUNS {
                common::run_w1(engine).await;
            }
            (start.elapsed(), (P1_RUNS * DECISIONS) as u64)
        })
    };
    let (tight, waiting) = (
        common::engine(Engine::builder()),
        common::engine(Engine::builder().ledger_store(Waiting(MemoryLedgerStore::default()))),
    );
    let figures =
        common::repeat_each(
            &mut [&mut || runs(&tight), &mut || runs(&waiting), &mut || {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..P1_RUNS {
                        wait().await;
                    }
                    (start.elapsed(), P1_RUNS as u64)
                })
            }],
        );
    let show = |figure: common::Figure| figure.scaled(1e-3).show(1);
    println!(
        "\nW1 in memory, each sync waiting {} µs (no database)",
        WAIT.as_micros()
    );
    println!("    tight loop    {} µs per step", show(figures[0]));
    println!("    with waits    {} µs per step", show(figures[1]));
    println!("    one wait      {} µs", show(figures[2]));
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
    // `wait`: no database needed.
    if args.iter().any(|a| a == "wait") {
        println!("{}", common::machine());
        waits();
        return;
    }
    let url = url();
    // `profile N [memory]`: only N W1 runs on the PostgreSQL stores (or in memory), for a
    // profiler: the engine's and the stores' own work per run, apart from the database's.
    if let Some(at) = args.iter().position(|a| a == "profile") {
        let runs = args.get(at + 1).and_then(|n| n.parse().ok()).unwrap_or(300);
        profile(&url, runs, args.iter().any(|a| a == "memory"));
        return;
    }
    println!("{}", common::machine());
    if wanted("p1") {
        p1(&url);
    }
    if wanted("p2") {
        p2(&url);
    }
}

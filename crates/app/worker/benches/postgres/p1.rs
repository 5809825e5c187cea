//! P1, a durable step: W1 on the `PostgreSQL` stores against the same rows written raw,
//! committed at the same points, the sides timed in turn.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rein::Engine;
use rein::ledger::{Entry, LoadedLedger};
use rein::postgres::{CommitPolicy, PgStores};
use rein::store::{LedgerStore, LedgerStoreError, RunStore, RunStoreError};
use rein::{Ledger, Run, RunId};

use crate::common::{self, DECISIONS, GOAL};
use crate::on_cpu::OnCpu;
use crate::{Fresh, P1_ROUNDS, connect, w1_on};

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

pub(crate) fn p1(url: &str) {
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

//! rein's timed workloads (docs/BENCHMARKS.md): W1 the reference run, W2 concurrent runs,
//! W3 durable runs, W5 hashing throughput, W1E a run followed live — each next to a
//! baseline measured in the same run, with the ratio. Allocations (W1) and memory (W4) are counted by the `memory` bench,
//! whose counting allocator would slow these down.
//!
//! Run with: `cargo bench -p rein --bench workloads` (all, about a minute), or name some:
//! `cargo bench -p rein --bench workloads -- w1 w3`. `-- --peer` prints only W1's
//! microseconds per decision, as `rein_w1_us_per_decision=<x>`, for `make bench-peers`;
//! `-- --profile N` only drives N W1 runs, for a profiler (`perf record`, valgrind, strace);
//! `-- --profile N fs` with W3's filesystem stores (under `$TMPDIR`); `-- --profile N events`
//! started and followed by a subscriber that never reads (W1E), `started` started with
//! nobody subscribed, `hooks` with W1H's three allow-all hooks (the options combine). `--features otel --
//! w1otel` times W1 with its telemetry exported against W1 without (see `common/telemetry.rs`).
//!
//! A hand-rolled loop rather than criterion's: every figure is the median of `REPS`
//! repetitions of a batch, printed with the min–max over them, and each baseline runs in
//! the same process, on the same data, alternating with what it is compared to.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

mod common;
#[path = "workloads/events.rs"]
mod events;
// Beside `common`, but W1's only: the memory bench leaves it out.
#[path = "common/telemetry.rs"]
mod telemetry;

use std::cell::Cell;
use std::fs::OpenOptions;
use std::hint::black_box;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use common::{
    CALLS, DECISIONS, Figure, GOAL, REPS, call_input, current_thread, engine, hashed_bytes, noop,
    raw_sha256, recorded_ledger, repeat_each, repeat_pair, run_w1,
};
use rein::ledger::EntryKind;
use rein::prelude::*;
use rein::store::{ArtifactStore as _, FsyncPolicy, MemoryArtifactStore, StoreOptions};
use rein::{EngineBuilder, Ledger};
use sha2::{Digest as _, Sha256};
use telemetry::w1otel;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if let Some(at) = args.iter().position(|a| a == "--profile") {
        let runs: usize = args
            .get(at + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(1_000);
        let dir = tempfile::tempdir().expect("a temp dir");
        let builder = if args.iter().any(|a| a == "fs") {
            Engine::builder().filesystem_with(dir.path(), FsyncPolicy::EveryStep)
        } else {
            Engine::builder()
        };
        let has = |name: &str| args.iter().any(|a| a == name);
        let builder = if has("hooks") {
            allow_all_hooks(builder, 3)
        } else {
            builder
        };
        let engine = engine(builder);
        current_thread().block_on(async {
            for _ in 0..runs {
                if has("events") {
                    events::followed_unread(&engine).await;
                } else if has("started") {
                    events::started_unwatched(&engine).await;
                } else {
                    run_w1(&engine).await;
                }
            }
        });
        return;
    }
    if args.iter().any(|a| a == "--peer") {
        let (rein, _) = w1_figures();
        println!(
            "rein_w1_us_per_decision={:.3}",
            rein.median / DECISIONS as f64 / 1e3
        );
        return;
    }
    let named: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if named.iter().any(|a| *a == "fs") {
        eprintln!("`fs` goes with --profile");
    }
    let wanted = |name: &str| named.is_empty() || named.iter().any(|a| *a == name);
    println!("workloads on {}", common::machine());
    if wanted("w1") {
        w1();
    }
    if wanted("w2") {
        w2();
    }
    if wanted("w3") {
        w3();
    }
    if wanted("w5") {
        w5();
    }
    if wanted("w1b") {
        w1b();
    }
    if wanted("w1h") {
        w1h();
    }
    if wanted("w1e") {
        events::w1e();
    }
    // Only when named: it needs the `otel` feature, and `make bench` keeps its figures.
    if named.iter().any(|a| *a == "w1otel") {
        w1otel();
    }
}

// ---- W1: the reference run ---------------------------------------------------------------------

/// W1's time per run, and the floor's: the same 14 no-op calls made directly plus SHA-256
/// over the same ledger bytes.
fn w1_figures() -> (Figure, Figure) {
    let rt = current_thread();
    let hashed = hashed_bytes(&recorded_ledger(&rt));
    let tool = noop();
    let batch = 400;
    repeat_pair(
        || {
            // A fresh engine per repetition keeps the memory stores at the same size each time.
            let engine = engine(Engine::builder());
            rt.block_on(async {
                for _ in 0..20 {
                    run_w1(&engine).await;
                }
                let start = Instant::now();
                for _ in 0..batch {
                    black_box(run_w1(&engine).await);
                }
                (start.elapsed(), batch)
            })
        },
        || {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..batch {
                    for i in 0..CALLS {
                        let output = rein::tool::Tool::call(&tool, call_input(i)).await;
                        black_box(output.ok());
                    }
                    raw_sha256(&hashed);
                }
                (start.elapsed(), batch)
            })
        },
    )
}

fn w1() {
    let rt = current_thread();
    let ledger = recorded_ledger(&rt);
    let hashed: usize = hashed_bytes(&ledger)
        .iter()
        .map(|(p, b)| p.len() + b.len())
        .sum();
    let (rein, floor) = w1_figures();
    let per_decision = |f: Figure| f.scaled(1e-3 / DECISIONS as f64);
    let overhead = (rein.median - floor.median) / DECISIONS as f64 / 1e3;
    println!(
        "\nW1  reference run: {DECISIONS} decisions ({CALLS} no-op calls), {} ledger entries, \
         memory stores, hashing on",
        ledger.len()
    );
    println!(
        "    rein          {} µs/decision",
        per_decision(rein).show(3)
    );
    println!("                  {} runs/s", rein.rate(1e9).show(0));
    println!(
        "    floor         {} µs/decision  ({CALLS} direct no-op calls + SHA-256 of the \
         {hashed} hashed ledger bytes)",
        per_decision(floor).show(3)
    );
    println!("    overhead      {overhead:.3} µs/decision above the floor");
    println!("    rein / floor  {:.2}x", rein.median / floor.median);
}

// ---- W2: concurrency ---------------------------------------------------------------------------

/// A batch of `64 × per_task` W1 runs, 64 in flight at any time, on one engine and the
/// runtime `rt`: the time it took, and how many runs completed.
fn concurrent(rt: &tokio::runtime::Runtime, per_task: usize) -> (std::time::Duration, usize) {
    const IN_FLIGHT: usize = 64;
    let engine = engine(Engine::builder());
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..IN_FLIGHT)
            .map(|_| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    let mut done = 0;
                    for _ in 0..per_task {
                        let run = engine.run(GOAL).await;
                        done += usize::from(run.is_ok_and(|r| r.status() == RunStatus::Completed));
                    }
                    done
                })
            })
            .collect();
        let mut done = 0;
        for task in tasks {
            done += task.await.expect("the task finishes");
        }
        (start.elapsed(), done)
    })
}

fn w2() {
    let per_task = 40;
    let runs = 64 * per_task;
    let runtime = |workers| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    };
    let (rt1, rt2) = (runtime(1), runtime(2));
    let completed = Cell::new(0);
    let batch = |rt: &tokio::runtime::Runtime| {
        let (elapsed, done) = concurrent(rt, per_task);
        completed.set(completed.get() + done);
        (elapsed, runs as u64)
    };
    // Alternated, so that load from elsewhere on the machine falls on both.
    let (one, two) = repeat_pair(|| batch(&rt1), || batch(&rt2));
    let started = 2 * REPS * runs;
    let failed = started - completed.get();
    println!("\nW2  W1 with 64 concurrent runs on one engine (multi-thread runtime)");
    println!("    1 worker      {} runs/s", one.rate(1e9).show(0));
    println!("    2 workers     {} runs/s", two.rate(1e9).show(0));
    println!("    scaling 1→2   {:.2}x", one.median / two.median);
    println!(
        "    runs          {started} started, {} completed, {failed} failed",
        completed.get()
    );
    assert_eq!(failed, 0, "every W2 run completes");
}

// ---- W3: durable runs --------------------------------------------------------------------------

/// The W1 ledger's JSON lines grouped as the engine syncs them: one group per step (the
/// `run_started` entry goes with the first).
fn step_groups(ledger: &Ledger) -> Vec<Vec<u8>> {
    let mut groups: Vec<Vec<u8>> = Vec::new();
    for entry in ledger.entries() {
        let starts_step = matches!(entry.event(), EntryKind::Decision { step, .. } if *step > 0);
        if starts_step || groups.is_empty() {
            groups.push(Vec::new());
        }
        entry.write_json_line(groups.last_mut().expect("a group"));
    }
    groups
}

/// The baseline's run: a new file; per step, its lines appended one by one and one fdatasync.
fn raw_append(path: &Path, groups: &[Vec<u8>]) {
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .expect("a new file");
    for group in groups {
        for line in group.split_inclusive(|&b| b == b'\n') {
            file.write_all(line).expect("written");
        }
        file.sync_data().expect("synced");
    }
}

/// The second baseline's run: by hand, every durable write rein's filesystem stores make —
/// the ledger file created and its folder synced; the run snapshot replaced atomically
/// (temp file, fsync, rename, folder fsync) at the start and at the end; and per step, its
/// lines appended and one fdatasync.
fn raw_durable(root: &Path, run: usize, groups: &[Vec<u8>], snapshots: &[Vec<u8>; 2]) {
    let (ledgers, runs) = (root.join("ledgers"), root.join("runs"));
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(ledgers.join(format!("{run}.jsonl")))
        .expect("a new file");
    sync_dir(&ledgers);
    let snapshot = runs.join(format!("{run}.json"));
    replace(&snapshot, &snapshots[0]);
    sync_dir(&runs);
    for group in groups {
        for line in group.split_inclusive(|&b| b == b'\n') {
            file.write_all(line).expect("written");
        }
        file.sync_data().expect("synced");
    }
    replace(&snapshot, &snapshots[1]);
    sync_dir(&runs);
}

/// [`raw_durable`] as an async program makes it: the same system calls from a task on a
/// current-thread runtime, each operation that syncs on tokio's blocking pool (one round
/// trip each, as rein's stores make them: the ledger's opening with its first line, each
/// snapshot, each step's fdatasync) and the other lines written on the task's thread.
async fn raw_durable_hops(
    root: &Path,
    run: usize,
    groups: &[Vec<u8>],
    snapshots: &Arc<[Vec<u8>; 2]>,
) {
    let (ledgers, runs) = (root.join("ledgers"), root.join("runs"));
    let snapshot = runs.join(format!("{run}.json"));
    let hop = |work: Box<dyn FnOnce() + Send>| async move {
        tokio::task::spawn_blocking(work)
            .await
            .expect("a blocking task");
    };
    let file = Arc::new(
        OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(ledgers.join(format!("{run}.jsonl")))
            .expect("a new file"),
    );
    let (first, rest) = groups.split_first().expect("a step");
    let (opened, line) = (Arc::clone(&file), first.clone());
    hop(Box::new(move || {
        sync_dir(&ledgers);
        (&*opened).write_all(&line).expect("written");
    }))
    .await;
    let (target, all, folder) = (snapshot.clone(), Arc::clone(snapshots), runs.clone());
    hop(Box::new(move || {
        replace(&target, &all[0]);
        sync_dir(&folder);
    }))
    .await;
    // The first step's lines went with the opening; each step then ends in one fdatasync.
    let no_lines: &[u8] = &[];
    for group in std::iter::once(no_lines).chain(rest.iter().map(Vec::as_slice)) {
        for line in group.split_inclusive(|&b| b == b'\n') {
            (&*file).write_all(line).expect("written");
        }
        let synced = Arc::clone(&file);
        hop(Box::new(move || synced.sync_data().expect("synced"))).await;
    }
    let all = Arc::clone(snapshots);
    hop(Box::new(move || {
        replace(&snapshot, &all[1]);
        sync_dir(&runs);
    }))
    .await;
}

/// Writes `bytes` to a temporary file beside `target`, syncs it and renames it over `target`.
fn replace(target: &Path, bytes: &[u8]) {
    let temp = target.with_extension("tmp");
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&temp)
        .expect("a temp file");
    file.write_all(bytes).expect("written");
    file.sync_data().expect("synced");
    std::fs::rename(&temp, target).expect("renamed");
}

fn sync_dir(dir: &Path) {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("folder synced");
}

/// The snapshots of a W1 run as the run store writes them: when it starts, when it ends.
fn snapshots(rt: &tokio::runtime::Runtime) -> [Vec<u8>; 2] {
    let engine = engine(Engine::builder());
    let last = rt.block_on(run_w1(&engine));
    let first = Run::new(
        last.id.clone(),
        GOAL,
        Default::default(),
        last.policy().clone(),
        last.created_at(),
    );
    let pretty = |run: &Run| serde_json::to_vec_pretty(run).expect("a snapshot");
    [pretty(&first), pretty(&last)]
}

fn w3() {
    let rt = current_thread();
    let groups = step_groups(&recorded_ledger(&rt));
    let snapshots = snapshots(&rt);
    // Under $TMPDIR: set it to put the stores on the disk you want to measure.
    let dir = tempfile::tempdir().expect("a temp dir");
    let batch = 20;
    let n = Cell::new(0);
    let fresh = |what: &str| {
        n.set(n.get() + 1);
        dir.path().join(format!("{what}-{}", n.get()))
    };
    let mut rein = || {
        let root = fresh("rein");
        let engine = engine(Engine::builder().filesystem_with(&root, FsyncPolicy::EveryStep));
        rt.block_on(async {
            run_w1(&engine).await;
            let start = Instant::now();
            for _ in 0..batch {
                run_w1(&engine).await;
            }
            (start.elapsed(), batch)
        })
    };
    let mut raw = || {
        let root = fresh("raw");
        std::fs::create_dir_all(&root).expect("a folder");
        let start = Instant::now();
        for run in 0..batch {
            raw_append(&root.join(format!("{run}.jsonl")), &groups);
        }
        (start.elapsed(), batch)
    };
    let mut durable = || {
        let root = fresh("durable");
        for dir in ["ledgers", "runs"] {
            std::fs::create_dir_all(root.join(dir)).expect("a folder");
        }
        let start = Instant::now();
        for run in 0..batch {
            raw_durable(&root, run as usize, &groups, &snapshots);
        }
        (start.elapsed(), batch)
    };
    let shared = Arc::new(snapshots.clone());
    let mut hops = || {
        let root = fresh("hops");
        for dir in ["ledgers", "runs"] {
            std::fs::create_dir_all(root.join(dir)).expect("a folder");
        }
        rt.block_on(async {
            let start = Instant::now();
            for run in 0..batch {
                raw_durable_hops(&root, run as usize, &groups, &shared).await;
            }
            (start.elapsed(), batch)
        })
    };
    // What one store operation's trip to tokio's blocking pool and back costs on its own.
    let mut hop = || {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..200 {
                tokio::task::spawn_blocking(|| ())
                    .await
                    .expect("a blocking task");
            }
            (start.elapsed(), 200)
        })
    };
    let figures = repeat_each(&mut [&mut rein, &mut raw, &mut durable, &mut hops, &mut hop]);
    let (rein, raw, durable, hops, hop) =
        (figures[0], figures[1], figures[2], figures[3], figures[4]);
    // Per run: the ledger's opening, two snapshots, one fdatasync per step.
    let trips = groups.len() + 3;
    println!(
        "\nW3  W1 with filesystem stores, FsyncPolicy::EveryStep ({} steps a run), under {}",
        groups.len(),
        dir.path().display()
    );
    println!("    rein          {} ms/run", rein.scaled(1e-6).show(3));
    println!(
        "    raw           {} ms/run  (new file; per step, append its lines + fdatasync; {} bytes)",
        raw.scaled(1e-6).show(3),
        groups.iter().map(Vec::len).sum::<usize>()
    );
    println!("    rein / raw    {:.2}x", rein.median / raw.median);
    println!(
        "    raw, all      {} ms/run  (by hand, every durable write rein makes: {} syncs a run)",
        durable.scaled(1e-6).show(3),
        groups.len() + 5
    );
    println!("    rein / all    {:.2}x", rein.median / durable.median);
    println!(
        "    raw, all, async {} ms/run  (the same, from a tokio task: {trips} trips to the \
         blocking pool, as rein's stores make)",
        hops.scaled(1e-6).show(3)
    );
    println!("    rein / async  {:.2}x", rein.median / hops.median);
    println!(
        "    least disturbed repetitions (min / min): rein / raw {:.2}x, rein / all {:.2}x, \
         rein / async {:.2}x",
        rein.min / raw.min,
        rein.min / durable.min,
        rein.min / hops.min
    );
    println!(
        "    one blocking-pool round trip {} µs; rein makes {trips} a run (each step's sync, \
         each snapshot, the ledger's opening), {:.2} ms",
        hop.scaled(1e-3).show(1),
        hop.median * trips as f64 / 1e6
    );
}

// ---- W5: hashing throughput --------------------------------------------------------------------

fn w5() {
    let rt = current_thread();
    let ledger = recorded_ledger(&rt);
    let hashed = hashed_bytes(&ledger);
    let bytes: usize = hashed.iter().map(|(p, b)| p.len() + b.len()).sum();
    let times = 2_000;
    let mib_s = |f: Figure, n: usize| f.rate(n as f64 * 1e9 / (1024.0 * 1024.0));

    let (verify, raw) = repeat_pair(
        || {
            let start = Instant::now();
            for _ in 0..times {
                black_box(&ledger).verify().expect("the ledger verifies");
            }
            (start.elapsed(), times)
        },
        || {
            let start = Instant::now();
            for _ in 0..times {
                raw_sha256(black_box(&hashed));
            }
            (start.elapsed(), times)
        },
    );
    println!("\nW5  ledger verify and artifact put/get, against raw SHA-256 of the same bytes");
    println!(
        "    verify        {} MiB/s  (the W1 ledger: {} entries, {bytes} hashed bytes)",
        mib_s(verify, bytes).show(0),
        ledger.len()
    );
    println!("    raw SHA-256   {} MiB/s", mib_s(raw, bytes).show(0));
    println!("    verify / raw  {:.2}x", raw.median / verify.median);

    for size in [64 * 1024, 1024 * 1024] {
        let content: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let n = (32 * 1024 * 1024 / size).max(8);
        let store = MemoryArtifactStore::new();
        // Both sides get the same owned copies, made before the clock, and consume them: the
        // store hashes each and drops it (it holds that content already), the baseline too.
        let copies = || -> Vec<Vec<u8>> { (0..n).map(|_| content.clone()).collect() };
        let (put, sha) = repeat_pair(
            || {
                let copies = copies();
                rt.block_on(async {
                    let start = Instant::now();
                    for bytes in copies {
                        black_box(store.put(bytes, StoreOptions::new()).await.expect("stored"));
                    }
                    (start.elapsed(), n as u64)
                })
            },
            || {
                let copies = copies();
                let start = Instant::now();
                for bytes in copies {
                    black_box(Sha256::digest(black_box(&bytes)));
                }
                (start.elapsed(), n as u64)
            },
        );
        let reference = rt
            .block_on(store.put(content.clone(), StoreOptions::new()))
            .expect("stored");
        let (get, sha_hot) = repeat_pair(
            || {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..n {
                        black_box(store.get(reference.id()).await.expect("read back"));
                    }
                    (start.elapsed(), n as u64)
                })
            },
            || {
                let start = Instant::now();
                for _ in 0..n {
                    black_box(Sha256::digest(black_box(&content)));
                }
                (start.elapsed(), n as u64)
            },
        );
        println!("    {:>4} KiB artifacts, memory store", size / 1024);
        println!(
            "      put         {} MiB/s  (raw SHA-256 of the same copies {} MiB/s)  put / raw {:.2}x",
            mib_s(put, size).show(0),
            mib_s(sha, size).show(0),
            sha.median / put.median
        );
        println!(
            "      get         {} MiB/s  (raw SHA-256 of the content {} MiB/s)  get / raw {:.2}x",
            mib_s(get, size).show(0),
            mib_s(sha_hot, size).show(0),
            sha_hot.median / get.median
        );
    }
}

// ---- W1B: W1 with its 8 explore calls as one batch ----------------------------------------------

/// W1's script, its 8 explore calls one `call_tools` batch when `batched` (12 decisions
/// instead of 19).
fn w1_script(batched: bool) -> ScriptedPlanner {
    let call = |state, i| {
        ScriptStep::expect(
            state,
            Decision::call_tool("noop", call_input(i), "look it up"),
        )
    };
    let mut steps = vec![ScriptStep::expect(
        State::Intake,
        Decision::transition(State::Explore, "start exploring"),
    )];
    if batched {
        let calls =
            (0..8).map(|i| rein::planner::ProposedCall::new("noop", call_input(i), "look it up"));
        steps.push(ScriptStep::expect(
            State::Explore,
            Decision::call_tools(calls, "look everything up at once"),
        ));
    } else {
        steps.extend((0..8).map(|i| call(State::Explore, i)));
    }
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "seen enough"),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::transition(State::Act, "act on it"),
    ));
    steps.extend((8..CALLS).map(|i| call(State::Act, i)));
    steps.push(ScriptStep::expect(
        State::Act,
        Decision::transition(State::Validate, "check it"),
    ));
    steps.push(ScriptStep::expect(
        State::Validate,
        Decision::finish("done", json!({"status": "ok"})),
    ));
    ScriptedPlanner::new(steps)
}

/// The W1 tool `noop`, read-only, sleeping `ms` milliseconds on tokio's clock (0: none).
fn sleepy(ms: u64) -> FnTool {
    FnTool::builder("noop")
        .description("Waits, then answers")
        .annotations(Annotations::read_only())
        .handler(move |_input: Value| async move {
            if ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            }
            Ok(Value::Null)
        })
        .build()
        .expect("a valid tool")
}

/// W1 and its batched variant on one engine each, run `runs` times per repetition.
fn w1b_pair(ms: u64, runs: u64) -> (Figure, Figure) {
    let rt = current_thread();
    let engine = |batched| {
        Engine::builder()
            .tool(sleepy(ms))
            .planner(w1_script(batched))
            .budget("tool_calls", 50)
            .budget("steps", 50)
            .max_steps(50)
            .build()
            .expect("a valid engine")
    };
    let timed = |batched: bool| {
        let engine = engine(batched);
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..runs {
                black_box(run_w1(&engine).await);
            }
            (start.elapsed(), runs)
        })
    };
    let figures = repeat_each(&mut [&mut || timed(false), &mut || timed(true)]);
    (figures[0], figures[1])
}

fn w1b() {
    println!(
        "\nW1B W1 with its 8 explore calls as one call_tools batch (12 decisions instead of 19), \
         memory stores, batch_concurrency 8"
    );
    for (ms, runs, what) in [(0, 400, "no-op tool"), (2, 5, "tool sleeping 2 ms")] {
        let (sequential, batched) = w1b_pair(ms, runs);
        println!("  {what}");
        println!(
            "    sequential    {} µs/run",
            sequential.scaled(1e-3).show(1)
        );
        println!("    batched       {} µs/run", batched.scaled(1e-3).show(1));
        println!(
            "    sequential / batched  {:.2}x",
            sequential.median / batched.median
        );
    }
}

// ---- W1H: hooks ---------------------------------------------------------------------------------

/// `builder` with `hooks` in-process hooks that allow everything, asked at every point.
fn allow_all_hooks(builder: EngineBuilder, hooks: usize) -> EngineBuilder {
    (0..hooks).fold(builder, |builder, i| {
        builder.hook(rein::hook::HookSpec::from_check(
            format!("allow-{i}"),
            rein::hook::HookPoint::ALL,
            |_| rein::hook::HookVerdict::Allow,
        ))
    })
}

/// W1 with three in-process hooks that allow everything, asked at every point, next to W1
/// without hooks: what asking hooks costs a run that they never narrow.
fn w1h() {
    let rt = current_thread();
    let batch = 400;
    let timed = |hooks: usize| {
        let engine = engine(allow_all_hooks(Engine::builder(), hooks));
        rt.block_on(async {
            for _ in 0..20 {
                run_w1(&engine).await;
            }
            let start = Instant::now();
            for _ in 0..batch {
                black_box(run_w1(&engine).await);
            }
            (start.elapsed(), batch)
        })
    };
    let (hooked, bare) = repeat_pair(|| timed(3), || timed(0));
    println!("\nW1H W1 with 3 allow-all in-process hooks at every point, memory stores");
    println!("    hooked        {} µs/run", hooked.scaled(1e-3).show(1));
    println!("    no hooks      {} µs/run", bare.scaled(1e-3).show(1));
    println!("    hooked / none {:.2}x", hooked.median / bare.median);
}

//! rein's cost curves (docs/BENCHMARKS.md): how cost grows with the work. W6 a long run
//! (engine cost per decision along 10,000 decisions, and resuming it from its ledger), W8
//! a big ledger (`rein ledger verify` of 1,000,000 entries against raw SHA-256 of the same
//! bytes, and its peak memory), W9 many runs (`rein runs list` and opening one run in data
//! directories of 1,000, 10,000 and 100,000 runs, with and without the run index).
//!
//! Run with: `cargo bench -p rein-cli --bench curves` (the full sizes: several minutes and
//! a few GB of temporary files under `$TMPDIR`), or `-- --short` (small sizes, seconds, to
//! check it works); name some: `-- w6 w9`. Peak memory of a `rein` process is read with GNU
//! time (`/usr/bin/time`); without it, memory is shown as `n/a`.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rein::ledger::Chain;
use rein::prelude::*;
use rein::run::Timestamp;
use rein::store::FsyncPolicy;
use rein::{EngineBuilder, PlanRequest, PlannerError};
use sha2::{Digest as _, Sha256};

/// Repetitions of each timed figure; the median is shown with the min–max.
const REPS: usize = 3;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let short = args.iter().any(|a| a == "--short");
    let named: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let wanted = |name: &str| named.is_empty() || named.iter().any(|a| *a == name);
    println!(
        "curves{}: medians (min – max) over {REPS} repetitions",
        if short { " (short form)" } else { "" }
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if wanted("w6") {
        w6(&runtime, if short { 1_000 } else { 10_000 });
    }
    if wanted("w8") {
        w8(&runtime, if short { 20_000 } else { 1_000_000 });
    }
    if wanted("w9") {
        let sizes: &[usize] = if short {
            &[100, 500]
        } else {
            &[1_000, 10_000, 100_000]
        };
        w9(&runtime, sizes);
    }
}

// ---- figures -----------------------------------------------------------------------------------

/// A median and its range.
#[derive(Debug, Clone, Copy)]
struct Figure {
    median: f64,
    min: f64,
    max: f64,
}

impl Figure {
    fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        Self {
            median: samples[samples.len() / 2],
            min: samples[0],
            max: samples[samples.len() - 1],
        }
    }

    fn show(self, unit: &str) -> String {
        format!(
            "{:.2} {unit} ({:.2} – {:.2})",
            self.median, self.min, self.max
        )
    }
}

/// A `rein` process's wall time and peak memory.
struct Measured {
    seconds: f64,
    peak_kb: Option<u64>,
}

/// Runs `rein args…` `REPS` times (stdout discarded), expecting success.
fn rein_process(args: &[&str]) -> (Figure, Option<u64>) {
    let mut times = Vec::new();
    let mut peak = None;
    for _ in 0..REPS {
        let m = rein_once(args);
        times.push(m.seconds);
        peak = peak.max(m.peak_kb);
    }
    (Figure::of(times), peak)
}

fn rein_once(args: &[&str]) -> Measured {
    let bin = env!("CARGO_BIN_EXE_rein");
    let gnu_time = Path::new("/usr/bin/time");
    let report = tempfile::NamedTempFile::new().expect("a temp file");
    let mut command = if gnu_time.is_file() {
        let mut c = Command::new(gnu_time);
        c.arg("-f").arg("%M").arg("-o").arg(report.path()).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    command.args(args).stdout(Stdio::null());
    let start = Instant::now();
    let status = command.status().expect("rein runs");
    let seconds = start.elapsed().as_secs_f64();
    assert!(status.success(), "rein {args:?} failed: {status}");
    let peak_kb = std::fs::read_to_string(report.path())
        .ok()
        .and_then(|t| t.lines().last()?.trim().parse().ok());
    Measured { seconds, peak_kb }
}

fn mb(kb: Option<u64>) -> String {
    kb.map_or_else(
        || "n/a".to_owned(),
        |kb| format!("{:.1} MB", kb as f64 / 1024.0),
    )
}

fn noop() -> FnTool {
    FnTool::builder("noop")
        .description("Does nothing, successfully")
        .annotations(Annotations::read_only())
        .input_schema(json!({"type": "object", "properties": {"i": {"type": "integer"}}}))
        .handler(|_input: Value| async { Ok(Value::Null) })
        .build()
        .expect("a valid tool")
}

// ---- W6: a long run -----------------------------------------------------------------------------

/// When each `plan` started and returned, in order.
type Marks = Arc<Mutex<Vec<(Instant, Instant)>>>;

/// A planner for a run of `calls` no-op calls in explore, then decide, then `finish` (or
/// a question, when `pause`; answered, it finishes). It notes when each `plan` starts and
/// returns, so the engine's time per decision is the gap between one return and the next
/// start — the planner itself excluded.
struct Timed {
    calls: u32,
    pause: bool,
    marks: Marks,
}

impl Planner for Timed {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let entered = Instant::now();
        let step = request.step() + 1;
        let decision = if step == 1 {
            Decision::transition(State::Explore, "start")
        } else if step <= self.calls + 1 {
            Decision::call_tool("noop", json!({"i": step}), "look")
        } else if step == self.calls + 2 {
            Decision::transition(State::Decide, "seen enough")
        } else if self.pause && step == self.calls + 3 {
            Decision::ask_human("finish?", ["yes"])
        } else {
            Decision::finish("done", json!({"steps": step}))
        };
        self.marks
            .lock()
            .expect("marks")
            .push((entered, Instant::now()));
        Ok(decision)
    }
}

fn long_engine(builder: EngineBuilder, calls: u32, pause: bool) -> (Engine, Marks) {
    let marks = Arc::new(Mutex::new(Vec::with_capacity(calls as usize + 8)));
    let engine = builder
        .tool(noop())
        .planner(Timed {
            calls,
            pause,
            marks: Arc::clone(&marks),
        })
        .budget("tool_calls", u64::from(calls) + 10)
        .budget("steps", u64::from(calls) + 10)
        .max_steps(calls + 10)
        .build()
        .expect("a valid engine");
    (engine, marks)
}

fn w6(rt: &tokio::runtime::Runtime, calls: u32) {
    let checkpoints: Vec<usize> = [10, 100, 1_000, 10_000]
        .into_iter()
        .filter(|&k| k <= calls as usize)
        .collect();
    // Per checkpoint, the median gap over the ten decisions ending there, per repetition.
    let mut at: Vec<Vec<f64>> = vec![Vec::new(); checkpoints.len()];
    let mut whole = Vec::new();
    for _ in 0..REPS {
        let (engine, marks) = long_engine(Engine::builder(), calls, false);
        let start = Instant::now();
        let run = rt.block_on(engine.run("a long run")).expect("the run");
        whole.push(start.elapsed().as_secs_f64());
        assert_eq!(run.status(), RunStatus::Completed, "{run:?}");
        let marks = marks.lock().expect("marks");
        // Gap k: from decision k's return to decision k+1's start (1-based k).
        let gaps: Vec<f64> = marks
            .windows(2)
            .map(|w| (w[1].0 - w[0].1).as_secs_f64() * 1e6)
            .collect();
        for (slot, &k) in at.iter_mut().zip(&checkpoints) {
            let window = &gaps[k.saturating_sub(10)..k.min(gaps.len())];
            slot.push(Figure::of(window.to_vec()).median);
        }
    }
    println!("W6 a long run: {calls} no-op calls in one run, memory stores, the full policy stack");
    let first = Figure::of(at[0].clone()).median;
    for (k, samples) in checkpoints.iter().zip(at) {
        let figure = Figure::of(samples);
        println!(
            "  engine time per decision at step {k:>6}: {}  ({:.2}× step 10's)",
            figure.show("µs"),
            figure.median / first
        );
        // For bench-peers/plot_w6.py, which draws this curve beside LangGraph's.
        println!("rein_w6 step={k} us={:.3}", figure.median);
    }
    println!("  the whole run: {}", Figure::of(whole).show("s"));

    // Resume at the end: a run paused after `calls` calls, resumed by a fresh engine.
    let mut resumes = Vec::new();
    let mut entries = 0;
    for _ in 0..REPS {
        let dir = tempfile::tempdir().expect("a temp dir");
        let (engine, _) = long_engine(
            Engine::builder().filesystem_with(dir.path(), FsyncPolicy::Relaxed),
            calls,
            true,
        );
        let paused = rt.block_on(engine.run("a long run")).expect("the run");
        assert_eq!(paused.status(), RunStatus::Paused);
        drop(engine);
        let (fresh, _) = long_engine(
            Engine::builder().filesystem_with(dir.path(), FsyncPolicy::Relaxed),
            calls,
            true,
        );
        let start = Instant::now();
        let done = rt
            .block_on(fresh.resume_with_input(&paused.id, "yes"))
            .expect("resumes");
        resumes.push(start.elapsed().as_secs_f64());
        assert_eq!(done.status(), RunStatus::Completed);
        entries = rt
            .block_on(fresh.ledger(&paused.id))
            .expect("the ledger")
            .len();
    }
    let resume = Figure::of(resumes);
    println!(
        "  resuming it at step {} (filesystem stores, a fresh engine, the ledger read and the run rebuilt): {}  = {:.2} µs per ledger entry ({entries} entries)",
        calls + 3,
        resume.show("s"),
        resume.median * 1e6 / entries as f64
    );
}

// ---- W8: a big ledger ---------------------------------------------------------------------------

/// Writes a ledger of `n` entries to `path`: the kinds of a W1 run (decisions, calls,
/// results, charges, transitions), cycled and sealed into one chain. Returns its bytes'
/// length.
fn big_ledger(rt: &tokio::runtime::Runtime, path: &Path, n: u64) -> u64 {
    let engine = {
        let steps: Vec<ScriptStep> = std::iter::once(ScriptStep::expect(
            State::Intake,
            Decision::transition(State::Explore, "start"),
        ))
        .chain((0..8).map(|i| {
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("noop", json!({"i": i}), "look it up"),
            )
        }))
        .chain([
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!({"ok": true}))),
        ])
        .collect();
        Engine::builder()
            .tool(noop())
            .planner(ScriptedPlanner::new(steps))
            .budget("tool_calls", 50)
            .build()
            .expect("an engine")
    };
    let template = rt.block_on(async {
        let run = engine.run("a run to copy").await.expect("a run");
        engine.ledger(&run.id).await.expect("its ledger")
    });
    let mut chain = Chain::new("big-ledger".parse().expect("an id"));
    let mut out =
        std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("create"));
    let mut bytes = 0;
    for i in 0..n {
        let model = &template.entries()[(i as usize) % template.len()];
        let entry = chain.seal(
            Timestamp::from_unix_millis(1_700_000_000_000 + i),
            model.state(),
            model.event().clone(),
        );
        out.write_all(entry.json_line()).expect("write");
        bytes += entry.json_line().len() as u64;
    }
    out.flush().expect("flush");
    bytes
}

fn w8(rt: &tokio::runtime::Runtime, n: u64) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("big.jsonl");
    let bytes = big_ledger(rt, &path, n);
    let path_str = path.to_str().expect("a UTF-8 path");
    let (verify, peak) = rein_process(&["ledger", "verify", path_str]);
    // The baseline: SHA-256 over the same bytes, read the same way, in one process.
    let mut sha = Vec::new();
    for _ in 0..REPS {
        let start = Instant::now();
        let mut file = std::fs::File::open(&path).expect("open");
        let mut buffer = vec![0; 256 * 1024];
        let mut hasher = Sha256::new();
        loop {
            let read = std::io::Read::read(&mut file, &mut buffer).expect("read");
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        black_box(hasher.finalize());
        sha.push(start.elapsed().as_secs_f64());
    }
    let sha = Figure::of(sha);
    let mib = bytes as f64 / (1024.0 * 1024.0);
    println!("W8 a big ledger: {n} entries, {mib:.0} MiB");
    println!(
        "  rein ledger verify (line by line): {}  = {:.0} MiB/s, peak memory {}",
        verify.show("s"),
        mib / verify.median,
        mb(peak)
    );
    println!(
        "  raw SHA-256 of the same bytes:     {}  = {:.0} MiB/s; rein takes {:.1}× as long",
        sha.show("s"),
        mib / sha.median,
        verify.median / sha.median
    );
    // The whole-file reading (what `--tree` still does), at a size that fits anywhere.
    let small = n.min(32_000);
    let small_path = dir.path().join("small.jsonl");
    big_ledger(rt, &small_path, small);
    let small_str = small_path.to_str().expect("a UTF-8 path");
    let (_, streamed) = rein_process(&["ledger", "verify", small_str]);
    let (_, whole) = rein_process(&["ledger", "verify", "--tree", small_str]);
    println!(
        "  at {small} entries: peak memory {} line by line, {} reading the file whole (--tree)",
        mb(streamed),
        mb(whole)
    );
}

// ---- W9: many runs -------------------------------------------------------------------------------

/// Adds runs to the data directory at `dir` until it holds `n`: each a short completed run
/// (a transition, a call, a finish) with its ledger and snapshot, as `rein run` leaves them.
fn fill(rt: &tokio::runtime::Runtime, dir: &Path, have: usize, n: usize) {
    let engine = Engine::builder()
        .filesystem_with(dir, FsyncPolicy::Relaxed)
        .tool(noop())
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("noop", json!({"i": 1}), "look"),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!({"ok": true}))),
        ]))
        .budget("tool_calls", 5)
        .build()
        .expect("an engine");
    rt.block_on(async {
        for i in have..n {
            let goal = format!("run {i}");
            let run = engine.run(goal.as_str()).await.expect("a run");
            black_box(run);
        }
    });
}

fn w9(rt: &tokio::runtime::Runtime, sizes: &[usize]) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let data = dir.path().join("data");
    let data_str = data.to_str().expect("a UTF-8 path").to_owned();
    let index = data.join("index.jsonl");
    let mut have = 0;
    println!("W9 many runs: `rein runs list` and opening one run (`rein ledger verify ID`)");
    for &n in sizes {
        fill(rt, &data, have, n);
        have = n;
        // Without an index: every ledger is read (what a listing cost before the index).
        let mut cold = Vec::new();
        let mut cold_peak = None;
        for _ in 0..REPS {
            std::fs::remove_file(&index).ok();
            let m = rein_once(&["runs", "list", "--data-dir", &data_str]);
            cold.push(m.seconds);
            cold_peak = cold_peak.max(m.peak_kb);
        }
        let cold = Figure::of(cold);
        let (warm, warm_peak) = rein_process(&["runs", "list", "--data-dir", &data_str]);
        let (page, _) = rein_process(&[
            "runs",
            "list",
            "--status",
            "completed",
            "--limit",
            "50",
            "--data-dir",
            &data_str,
        ]);
        let one = first_run(&data);
        let (open, open_peak) = rein_process(&["ledger", "verify", &one, "--data-dir", &data_str]);
        println!(
            "  {n:>7} runs: list {} (peak {}) with the index, {} (peak {}) rebuilding it from every ledger ({:.1}×); a page of 50 completed runs {}; opening one run {} (peak {})",
            warm.show("s"),
            mb(warm_peak),
            cold.show("s"),
            mb(cold_peak),
            cold.median / warm.median,
            page.show("s"),
            open.show("s"),
            mb(open_peak)
        );
    }
}

/// The id of one run in the data directory at `data`.
fn first_run(data: &Path) -> String {
    let ledgers: PathBuf = data.join("ledgers");
    let entry = std::fs::read_dir(ledgers)
        .expect("ledgers")
        .next()
        .expect("a ledger")
        .expect("an entry");
    entry
        .file_name()
        .to_string_lossy()
        .trim_end_matches(".jsonl")
        .to_owned()
}

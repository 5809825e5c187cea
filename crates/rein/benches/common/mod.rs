//! What the workload benchmarks share: the W1 engine (tool, script, policies), the recorded
//! ledger the baselines hash and write, and the median/min–max figures they print.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each bench binary uses part of this module"
)]

use std::hint::black_box;
use std::time::Duration;

use rein::prelude::*;
use rein::{EngineBuilder, Ledger};
use sha2::{Digest as _, Sha256};

/// Repetitions of every timed batch; figures are the median and the min–max over them.
pub const REPS: usize = 11;

/// W1's script: 19 decisions, 14 of them tool calls.
pub const DECISIONS: usize = 19;
pub const CALLS: usize = 14;

pub const GOAL: &str = "Look things up and act on them";

// ---- figures -----------------------------------------------------------------------------------

/// The median and range of one figure over the repetitions.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Figure {
    pub fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        Self {
            median: samples[samples.len() / 2],
            min: samples[0],
            max: samples[samples.len() - 1],
        }
    }

    /// The figure times `k`.
    pub fn scaled(self, k: f64) -> Self {
        Self {
            median: self.median * k,
            min: self.min * k,
            max: self.max * k,
        }
    }

    /// `k / figure`: a time per unit turned into units per time (min and max swap).
    pub fn rate(self, k: f64) -> Self {
        Self {
            median: k / self.median,
            min: k / self.max,
            max: k / self.min,
        }
    }

    /// `median (min – max)` with `decimals` decimals.
    pub fn show(self, decimals: usize) -> String {
        format!(
            "{:.d$} ({:.d$} – {:.d$})",
            self.median,
            self.min,
            self.max,
            d = decimals
        )
    }
}

/// Time per unit, in nanoseconds, of a batch that did `units` in `elapsed`.
pub fn per_unit((elapsed, units): (Duration, u64)) -> f64 {
    elapsed.as_nanos() as f64 / units.max(1) as f64
}

/// Runs `batch` `REPS` times, each returning (elapsed, units done): the time per unit.
pub fn repeat(mut batch: impl FnMut() -> (Duration, u64)) -> Figure {
    Figure::of((0..REPS).map(|_| per_unit(batch())).collect())
}

/// As [`repeat`] for several batches measured in turn within each repetition, so that a
/// slow spell of a shared machine (or of its disk) falls on all of them.
pub fn repeat_each(batches: &mut [&mut dyn FnMut() -> (Duration, u64)]) -> Vec<Figure> {
    let mut samples = vec![Vec::with_capacity(REPS); batches.len()];
    for _ in 0..REPS {
        for (batch, samples) in batches.iter_mut().zip(&mut samples) {
            samples.push(per_unit(batch()));
        }
    }
    samples.into_iter().map(Figure::of).collect()
}

/// [`repeat_each`] for two batches.
pub fn repeat_pair(
    mut a: impl FnMut() -> (Duration, u64),
    mut b: impl FnMut() -> (Duration, u64),
) -> (Figure, Figure) {
    let figures = repeat_each(&mut [&mut a, &mut b]);
    (figures[0], figures[1])
}

pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// One line saying what the figures ran on.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!("{cores} cores, {cpu}; figures are medians (min – max) over {REPS} repetitions")
}

// ---- the W1 workload ---------------------------------------------------------------------------

/// The no-op read-only tool every workload calls, written as a user writes one.
pub fn noop() -> FnTool {
    FnTool::builder("noop")
        .description("Does nothing, successfully")
        .annotations(Annotations::read_only())
        .input_schema(json!({
            "type": "object",
            "properties": {"i": {"type": "integer"}},
            "required": ["i"]
        }))
        .handler(|_input: Value| async { Ok(Value::Null) })
        .build()
        .expect("a valid tool")
}

/// The input of call `i` (0 to 13).
pub fn call_input(i: usize) -> Value {
    json!({ "i": i })
}

/// W1's script: intake→explore; 8 calls in explore; explore→decide; decide→act; 6 calls
/// in act; act→validate; finish (validate→done).
pub fn script() -> ScriptedPlanner {
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
    steps.extend((0..8).map(|i| call(State::Explore, i)));
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
    assert_eq!(steps.len(), DECISIONS);
    ScriptedPlanner::new(steps)
}

/// The W1 engine: the no-op tool, the script, budgets and a step limit, and every default
/// policy — eligibility, transitions, approvals, input schema, and the resilience stack
/// (timeout, circuit breaker, retry for idempotent tools, panic capture) — with the stores
/// `builder` has (in memory unless told otherwise).
pub fn engine(builder: EngineBuilder) -> Engine {
    builder
        .tool(noop())
        .planner(script())
        .budget("tool_calls", 50)
        .budget("steps", 50)
        .max_steps(50)
        .build()
        .expect("a valid engine")
}

/// One W1 run, checked to have completed.
pub async fn run_w1(engine: &Engine) -> Run {
    let run = engine.run(GOAL).await.expect("the run is driven");
    assert_eq!(run.status(), RunStatus::Completed, "W1 runs complete");
    run
}

/// A recorded W1 run's ledger.
pub fn recorded_ledger(rt: &tokio::runtime::Runtime) -> Ledger {
    let engine = engine(Engine::builder());
    rt.block_on(async {
        let run = run_w1(&engine).await;
        engine.ledger(&run.id).await.expect("a ledger")
    })
}

/// Per entry of `ledger`: the previous hash and the canonical bytes, i.e. exactly what the
/// ledger hashes (each JSON line without its `hash` field).
pub fn hashed_bytes(ledger: &Ledger) -> Vec<(Vec<u8>, Vec<u8>)> {
    ledger
        .entries()
        .iter()
        .map(|e| (e.prev().as_bytes().to_vec(), e.canonical_bytes()))
        .collect()
}

/// SHA-256 of each entry's bytes, as the ledger chains them, with nothing else around it.
pub fn raw_sha256(entries: &[(Vec<u8>, Vec<u8>)]) {
    for (prev, body) in entries {
        let mut hasher = Sha256::new();
        hasher.update(prev);
        hasher.update(body);
        black_box(hasher.finalize());
    }
}

//! Engine overhead per decision step, against calling the tool directly, in the same run.
//!
//! Each run takes `CALLS + 3` decisions: intake → explore, `CALLS` calls of a no-op read-only
//! tool (input schema checked, eligibility, approval policy, budget reservation, resilience
//! stack, ledger entries hashed), explore → decide, finish. Stores are in memory. Measured:
//!
//! - `baseline/direct_call`: the no-op tool called directly (what a bare loop would cost);
//! - `engine/sequential`: one run at a time on a current-thread runtime;
//! - `engine/concurrent_64`: 64 runs at once on a multi-thread runtime (per-step time is wall
//!   time over all steps of all runs: throughput).
//!
//! A summary with µs per step and the ratio to the baseline is printed at the end.
//! `cargo bench -p rein-engine --bench engine` (add `-- --warm-up-time 1 --measurement-time 3`
//! for a quick run).

// A benchmark reports its figures on stdout.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::Criterion;
use rein_engine::Engine;
use rein_planner::{ScriptStep, ScriptedPlanner};
use rein_run::{Decision, RunStatus, State};
use rein_tool::{Annotations, Tool, ToolError, ToolName, ToolOutput, ToolSpec};
use serde_json::{Value, json};

/// Tool calls per run.
const CALLS: u64 = 50;
/// Decisions per run.
const STEPS: u64 = CALLS + 3;
/// Runs in flight at once in the concurrent benchmark.
const CONCURRENT: u64 = 64;

/// A read-only tool that does nothing.
#[derive(Debug)]
struct Noop {
    spec: ToolSpec,
}

impl Noop {
    fn new() -> Self {
        let name = ToolName::new("noop").expect("a valid name");
        let spec = ToolSpec::new(name, "does nothing")
            .with_annotations(Annotations::read_only())
            .with_input_schema(json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            }));
        Self { spec }
    }
}

impl Tool for Noop {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _input: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(Value::Null))
    }
}

fn input() -> Value {
    json!({"n": 1})
}

/// A fresh engine (so the in-memory stores only hold one sample's runs) with every policy on.
fn engine() -> Engine {
    let mut steps = vec![ScriptStep::expect(
        State::Intake,
        Decision::transition(State::Explore, "start"),
    )];
    steps.extend((0..CALLS).map(|_| {
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("noop", input(), "bench"),
        )
    }));
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "done"),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("done", Value::Null),
    ));
    Engine::builder()
        .tool(Noop::new())
        .planner(ScriptedPlanner::new(steps))
        .budget("tool_calls", CALLS)
        .budget("steps", STEPS)
        .max_steps(u32::try_from(STEPS).expect("fits"))
        .build()
        .expect("engine builds")
}

/// Per-sample nanoseconds per step (or per call), by benchmark.
#[derive(Debug, Default)]
struct Samples(Mutex<BTreeMap<&'static str, Vec<f64>>>);

impl Samples {
    fn record(&self, name: &'static str, elapsed: Duration, units: u64) {
        let per_unit = elapsed.as_nanos() as f64 / units as f64;
        self.0
            .lock()
            .expect("lock")
            .entry(name)
            .or_default()
            .push(per_unit);
    }

    /// The median of a benchmark's samples, in nanoseconds per unit.
    fn median(&self, name: &str) -> f64 {
        let mut samples = self
            .0
            .lock()
            .expect("lock")
            .get(name)
            .cloned()
            .unwrap_or_default();
        samples.sort_by(f64::total_cmp);
        samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

fn baseline(c: &mut Criterion, samples: &Arc<Samples>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let tool = Noop::new();
    c.bench_function("baseline/direct_call", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(tool.call(black_box(input())).await.expect("ok"));
                }
                let elapsed = start.elapsed();
                samples.record("direct", elapsed, iters);
                elapsed
            })
        });
    });
}

fn sequential(c: &mut Criterion, samples: &Arc<Samples>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    c.bench_function("engine/sequential", |b| {
        b.iter_custom(|iters| {
            let engine = engine();
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let run = engine.run("bench").await.expect("run");
                    assert_eq!(run.status(), RunStatus::Completed);
                    black_box(run);
                }
                let elapsed = start.elapsed();
                samples.record("sequential", elapsed, iters * STEPS);
                elapsed
            })
        });
    });
}

fn concurrent(c: &mut Criterion, samples: &Arc<Samples>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    c.bench_function("engine/concurrent_64", |b| {
        b.iter_custom(|iters| {
            let engine = engine();
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let tasks: Vec<_> = (0..CONCURRENT)
                        .map(|_| {
                            let engine = engine.clone();
                            tokio::spawn(async move { engine.run("bench").await })
                        })
                        .collect();
                    for task in tasks {
                        let run = task.await.expect("task").expect("run");
                        assert_eq!(run.status(), RunStatus::Completed);
                    }
                }
                let elapsed = start.elapsed();
                samples.record("concurrent", elapsed, iters * CONCURRENT * STEPS);
                elapsed
            })
        });
    });
}

fn main() {
    let samples = Arc::new(Samples::default());
    let mut c = Criterion::default().configure_from_args();
    baseline(&mut c, &samples);
    sequential(&mut c, &samples);
    concurrent(&mut c, &samples);
    c.final_summary();

    let direct = samples.median("direct");
    let sequential = samples.median("sequential");
    let concurrent = samples.median("concurrent");
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    println!();
    println!(
        "engine overhead per decision step ({STEPS} decisions per run, {CALLS} no-op tool calls; \
         full policy stack; in-memory stores; ledger hashing on); medians of the samples:"
    );
    println!(
        "  baseline: direct no-op tool call      {:>9.3} µs/call",
        direct / 1e3
    );
    println!(
        "  engine, sequential runs               {:>9.3} µs/step  ({:.0}x baseline)",
        sequential / 1e3,
        sequential / direct
    );
    println!(
        "  engine, {CONCURRENT} concurrent runs ({workers} workers) {:>9.3} µs/step  ({:.0}x baseline, {:.2}x sequential throughput)",
        concurrent / 1e3,
        concurrent / direct,
        sequential / concurrent
    );
}

//! The cost of the execution stack: a no-op tool called through its `ToolStack` versus
//! called directly, in the same run. `stack` has every step in (a queueing bulkhead too);
//! `stack_default` is the engine's default stack (no bulkhead), the one W1 calls through;
//! `stack_untimed` the same with an observer that times nothing, as the engine's.
//!
//! Run with: `cargo bench -p rein-resilience -- --warm-up-time 1 --measurement-time 3`
//!
//! Both benchmarks time a loop of awaited calls inside one `block_on` of a current-thread
//! runtime, so the runtime's own cost is not counted. At the end the median ns/call of each
//! and their ratios to the bare call are printed to stderr.

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rein_resilience::{AttemptObserver, Bulkhead, ExecutionStack, ResilienceConfig, ToolCall};
use rein_tool::{Annotations, SharedTool, Tool, ToolError, ToolOutput, ToolSpec};
use serde_json::Value;
use tokio::runtime::Runtime;

/// Returns its input.
struct Noop(ToolSpec);

impl Tool for Noop {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(input))
    }
}

/// An observer that allows every attempt and ignores reports; if `timed` is false it times
/// nothing either, as the engine's observer (which has a clock of its own).
struct Allow {
    timed: bool,
}

impl AttemptObserver for Allow {
    fn times_attempts(&self) -> bool {
        self.timed
    }
}

/// Per-sample ns/call, collected from criterion's timed samples.
#[derive(Default, Clone)]
struct Samples(Arc<Mutex<Vec<f64>>>);

impl Samples {
    fn push(&self, iters: u64, elapsed: Duration) {
        self.0
            .lock()
            .unwrap()
            .push(elapsed.as_nanos() as f64 / iters as f64);
    }

    fn median(&self) -> f64 {
        let mut samples = self.0.lock().unwrap().clone();
        samples.sort_by(f64::total_cmp);
        samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

fn noop() -> SharedTool {
    let spec = ToolSpec::new("noop".parse().unwrap(), "does nothing")
        .with_annotations(Annotations::read_only()); // idempotent: the retry layer is in
    Arc::new(Noop(spec))
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn stack_vs_bare(c: &mut Criterion) {
    let runtime = runtime();
    let tool = noop();
    // Every layer in: a queueing bulkhead, retry (idempotent tool), breaker, observer,
    // timeout, panic catcher.
    let config = ResilienceConfig {
        bulkhead: Bulkhead::Queue {
            max_concurrent: NonZeroUsize::new(64).unwrap(),
        },
        ..ResilienceConfig::default()
    };
    let stack = ExecutionStack::new(config).build(Arc::clone(&tool));
    let default_stack = ExecutionStack::new(ResilienceConfig::default()).build(Arc::clone(&tool));
    let timed: Arc<dyn AttemptObserver> = Arc::new(Allow { timed: true });
    let untimed: Arc<dyn AttemptObserver> = Arc::new(Allow { timed: false });
    let bare_samples = Samples::default();
    let stacks = [
        ("stack", &stack, &timed, Samples::default()),
        ("stack_default", &default_stack, &timed, Samples::default()),
        (
            "stack_untimed",
            &default_stack,
            &untimed,
            Samples::default(),
        ),
    ];

    let mut group = c.benchmark_group("noop_tool");
    group.bench_function("bare", |b| {
        b.iter_custom(|iters| {
            let elapsed = runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(tool.call_boxed(black_box(Value::Null)).await).unwrap();
                }
                start.elapsed()
            });
            bare_samples.push(iters, elapsed);
            elapsed
        });
    });
    for (name, stack, observer, samples) in &stacks {
        group.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                let elapsed = runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let call = ToolCall::new(black_box(Value::Null))
                            .with_observer(Arc::clone(observer));
                        black_box(stack.call(call).await).unwrap();
                    }
                    start.elapsed()
                });
                samples.push(iters, elapsed);
                elapsed
            });
        });
    }
    group.finish();

    let bare = bare_samples.median();
    eprintln!("\nnoop tool, median of criterion's samples: bare {bare:.1} ns/call");
    for (name, _, _, samples) in &stacks {
        let stack = samples.median();
        eprintln!(
            "  {name}: {stack:.1} ns/call, {:.1}x bare (+{:.0} ns/call)",
            stack / bare,
            stack - bare
        );
    }
}

criterion_group!(benches, stack_vs_bare);
criterion_main!(benches);

//! Cost of one accepted transition through the lifecycle, next to a baseline doing the same
//! checks without the state machine (`Transitions::check`, the budget guard, an assignment).
//!
//! Run with: `cargo bench -p rein-statemachine --bench transition`
//!
//! Both benchmarks alternate between `decide` and `act` (a table with both edges), so every
//! iteration is one accepted move, and every other one enters `act` and runs the budget
//! guard against a limited budget with room. After both ran, the ratio of their means over
//! every iteration criterion ran (warm-up included) is printed.

use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rein_policy::{Budget, Transitions};
use rein_run::{BudgetName, BudgetUsage, State};
use rein_statemachine::Lifecycle;

/// Total time and iterations measured for one benchmark.
#[derive(Default)]
struct Tally(Cell<(Duration, u64)>);

impl Tally {
    fn add(&self, elapsed: Duration, iters: u64) {
        let (total, n) = self.0.get();
        self.0.set((total + elapsed, n + iters));
    }

    fn mean_ns(&self) -> Option<f64> {
        let (total, n) = self.0.get();
        (n > 0).then(|| total.as_secs_f64() * 1e9 / n as f64)
    }
}

fn next(state: State) -> State {
    if state == State::Decide {
        State::Act
    } else {
        State::Decide
    }
}

fn transition(c: &mut Criterion) {
    let table = Transitions::from_edges([
        (State::Intake, State::Decide),
        (State::Decide, State::Act),
        (State::Act, State::Decide),
        (State::Decide, State::Failed),
        (State::Act, State::Failed),
    ])
    .expect("a valid table");
    // A limited budget with room, so the guard does its real work.
    let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 10);
    let usage = BudgetUsage::default();
    let (lifecycle_tally, baseline_tally) = (Tally::default(), Tally::default());

    let mut group = c.benchmark_group("transition");
    group.bench_function("lifecycle (statig)", |b| {
        let mut lifecycle = Lifecycle::new(State::Decide, table).expect("a working state");
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let to = next(lifecycle.state());
                let moved = lifecycle.transition(to, black_box(&budget), black_box(&usage));
                black_box(moved.expect("accepted"));
            }
            let elapsed = start.elapsed();
            lifecycle_tally.add(elapsed, iters);
            elapsed
        });
    });
    group.bench_function("baseline (Transitions::check)", |b| {
        let mut state = State::Decide;
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let to = next(state);
                let checked = black_box(&table).check(state, to).map(|()| {
                    let exhausted = to == State::Act
                        && black_box(&budget)
                            .first_exhausted(black_box(&usage))
                            .is_some();
                    (state, to, exhausted)
                });
                black_box(checked.expect("accepted"));
                state = to;
            }
            let elapsed = start.elapsed();
            baseline_tally.add(elapsed, iters);
            elapsed
        });
    });
    group.finish();

    if let (Some(lifecycle), Some(baseline)) = (lifecycle_tally.mean_ns(), baseline_tally.mean_ns())
    {
        #[allow(clippy::print_stdout, reason = "a benchmark reports its figures")]
        {
            println!(
                "mean over all iterations (warm-up included): lifecycle {lifecycle:.2} ns, baseline {baseline:.2} ns, ratio {:.2}x",
                lifecycle / baseline
            );
        }
    }
}

criterion_group!(benches, transition);
criterion_main!(benches);

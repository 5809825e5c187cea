//! rein's counted workloads (docs/BENCHMARKS.md): W1's allocations per run, and W4, the
//! memory held per completed run, both read from a counting global allocator. They live
//! apart from the timed `workloads` bench because counting every allocation with atomics
//! slows an allocation-heavy program down (by about 40% for W1 here).
//!
//! Run with: `cargo bench -p rein --bench memory`.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

mod common;

use std::alloc::System;

use common::{CALLS, DECISIONS, current_thread, engine, recorded_ledger, run_w1};
use rein::Engine;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The bytes the counting allocator reports as live right now (as requested by callers:
/// the allocator's own bookkeeping is not counted). `stats_alloc` adds a reallocation's
/// growth to `bytes_allocated` and its shrinkage to `bytes_deallocated` already.
fn live_bytes() -> i128 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i128 - s.bytes_deallocated as i128
}

fn main() {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| named.is_empty() || named.iter().any(|a| a == name);
    if wanted("w1") {
        w1_allocations();
    }
    if wanted("w4") {
        w4();
    }
}

/// Allocations a W1 run makes, from `engine.run` to the returned run dropped.
fn w1_allocations() {
    let rt = current_thread();
    let engine = engine(Engine::builder());
    let runs = 200;
    let change = rt.block_on(async {
        run_w1(&engine).await;
        let region = Region::new(GLOBAL);
        for _ in 0..runs {
            run_w1(&engine).await;
        }
        region.change()
    });
    let per_run = change.allocations as f64 / f64::from(runs);
    println!("\nW1  allocations (counted over {runs} runs)");
    println!(
        "    allocations   {per_run:.1} per run ({:.1} per decision)",
        per_run / DECISIONS as f64
    );
    println!(
        "    bytes         {:.0} allocated per run, {:.1} reallocations per run",
        change.bytes_allocated as f64 / f64::from(runs),
        change.reallocations as f64 / f64::from(runs)
    );
}

/// Live bytes per completed run with 10,000 runs kept in the memory stores, and how much of
/// that is the runs' evidence.
fn w4() {
    let rt = current_thread();
    let runs = 10_000;
    let ledger = recorded_ledger(&rt);
    let lines: usize = ledger.entries().iter().map(|e| e.json_line().len()).sum();
    let engine = engine(Engine::builder());
    let (per_run, evidence) = rt.block_on(async {
        run_w1(&engine).await;
        let before = live_bytes();
        let mut last = None;
        for _ in 0..runs {
            last = Some(run_w1(&engine).await);
        }
        let last = last.expect("a run");
        let kept = live_bytes() - before;
        // One copy of a run's evidence, measured the same way.
        let before = live_bytes();
        let evidence = last.evidence().to_vec();
        let evidence_bytes = live_bytes() - before;
        drop(evidence);
        drop(last);
        (kept as f64 / f64::from(runs), evidence_bytes as f64)
    });
    println!("\nW4  memory held per completed run: {runs} W1 runs kept in the memory stores");
    println!("    per run       {per_run:.0} bytes live");
    println!("    evidence      {evidence:.0} bytes ({CALLS} tool results, one copy)");
    println!("    beyond it     {:.0} bytes per run", per_run - evidence);
    println!(
        "    of which      {lines} bytes are the ledger's {} JSON lines (the audit trail), \
         {:.0} the rest (snapshot, indexes)",
        ledger.len(),
        per_run - evidence - lines as f64
    );
    drop(engine);
}

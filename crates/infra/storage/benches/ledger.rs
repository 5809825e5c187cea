//! Ledger append cost: `FsLedgerStore` under `Relaxed` and `EveryEntry` fsync, against a raw
//! `write` (and `write` + `fdatasync`) of the same bytes to a plain file, in the same run.
//!
//! Run with: `cargo bench -p rein-storage --bench ledger`
//! (short: `-- --warm-up-time 1 --measurement-time 3`). Prints the ratios at the end.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use rein_ledger::{EntryKind, Ledger};
use rein_run::{State, Timestamp};
use rein_storage::{FsConfig, FsStores, FsyncPolicy, MemoryLedgerStore};

thread_local! {
    /// Time per iteration of every timed batch, per benchmark, for the ratios at the end.
    static SAMPLES: RefCell<BTreeMap<&'static str, Vec<f64>>> = RefCell::default();
}

/// Records one timed batch of `name`.
fn record(name: &'static str, elapsed: Duration, iters: u64) {
    let per_iter = elapsed.as_nanos() as f64 / iters.max(1) as f64;
    SAMPLES.with(|samples| samples.borrow_mut().entry(name).or_default().push(per_iter));
}

/// The median time per iteration of `name`'s batches, in nanoseconds (robust to the odd
/// slow batch on a shared machine); NaN if it did not run (filtered out).
fn median_ns(name: &str) -> f64 {
    SAMPLES.with(|samples| {
        let Some(times) = samples.borrow().get(name).cloned() else {
            return f64::NAN;
        };
        let mut times = times;
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    })
}

/// A ledger of a fresh run with `n` entries of a realistic size (a tool result's worth of
/// JSON, about 400 bytes a line).
fn ledger(run: u64, n: u64) -> Ledger {
    let mut ledger = Ledger::new(format!("bench-{run}").parse().unwrap());
    for i in 0..n {
        let note = format!(
            "step {i}: {}",
            "the tool returned rows 1-20 of the report; ".repeat(6)
        );
        ledger.append(
            Timestamp::from_unix_millis(1_700_000_000_000 + i),
            State::Act,
            EntryKind::Steering { note },
        );
    }
    ledger
}

fn bench_appends(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let line_len = ledger(0, 1).entries()[0].to_json_line().len();
    let mut group = c.benchmark_group("ledger_append");
    group.throughput(Throughput::Elements(1));
    let mut run = 0;
    let mut next_run = move || {
        run += 1;
        run
    };

    // Baselines: the same JSON lines written to a plain file, synchronously.
    for (name, fsync) in [("raw_write", false), ("raw_write_fdatasync", true)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let ledger = ledger(next_run(), iters);
                let lines: Vec<String> = ledger
                    .entries()
                    .iter()
                    .map(rein_ledger::Entry::to_json_line)
                    .collect();
                let path = root.path().join(format!("{}.raw", ledger.run_id()));
                let mut file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap();
                let start = Instant::now();
                for line in &lines {
                    file.write_all(line.as_bytes()).unwrap();
                    if fsync {
                        file.sync_data().unwrap();
                    }
                }
                let elapsed = start.elapsed();
                record(name, elapsed, iters);
                elapsed
            });
        });
    }

    let relaxed = FsStores::open_with(
        root.path().join("relaxed"),
        FsConfig::default().with_fsync(FsyncPolicy::Relaxed),
    )
    .unwrap();
    let every_entry = FsStores::open_with(
        root.path().join("every-entry"),
        FsConfig::default().with_fsync(FsyncPolicy::EveryEntry),
    )
    .unwrap();
    let memory = MemoryLedgerStore::new();
    let stores: [(&'static str, &dyn rein_ledger::DynLedgerStore); 3] = [
        ("fs_relaxed", relaxed.ledgers()),
        ("fs_every_entry", every_entry.ledgers()),
        ("memory", &memory),
    ];
    for (name, store) in stores {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let ledger = ledger(next_run(), iters);
                let elapsed = runtime.block_on(async {
                    let start = Instant::now();
                    for entry in ledger.entries() {
                        store.append_boxed(entry).await.unwrap();
                    }
                    start.elapsed()
                });
                record(name, elapsed, iters);
                elapsed
            });
        });
    }
    group.finish();

    let us = |name| median_ns(name) / 1000.0;
    println!("\nledger append, {line_len}-byte lines (median time per entry over the batches):");
    for name in [
        "raw_write",
        "raw_write_fdatasync",
        "memory",
        "fs_relaxed",
        "fs_every_entry",
    ] {
        println!("  {name:<22} {:>9.2} µs", us(name));
    }
    println!(
        "  fs_relaxed / raw_write                  = {:>6.2}x",
        us("fs_relaxed") / us("raw_write")
    );
    println!(
        "  fs_every_entry / raw_write_fdatasync    = {:>6.2}x",
        us("fs_every_entry") / us("raw_write_fdatasync")
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_appends(&mut criterion);
    criterion.final_summary();
}

//! Artifact throughput: `FsArtifactStore` put (new and already stored content) and get, and
//! `MemoryArtifactStore`, against raw SHA-256 of the same bytes (and, for puts, against
//! writing the bytes to a new file), in the same run.
//!
//! Run with: `cargo bench -p rein-storage --bench artifact`
//! (short: `-- --warm-up-time 1 --measurement-time 3`). Prints the ratios at the end.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use rein_artifact::{ArtifactStore, DynArtifactStore, StoreOptions};
use rein_storage::{FsConfig, FsStores, FsyncPolicy, MemoryArtifactStore};
use sha2::{Digest as _, Sha256};

/// Time per iteration (seconds) of every timed batch, per (benchmark, size).
type Samples = BTreeMap<(&'static str, usize), Vec<f64>>;

thread_local! {
    /// Every timed batch, for the ratios printed at the end.
    static SAMPLES: RefCell<Samples> = RefCell::default();
}

/// Records one timed batch of `name` at `size`.
fn record(name: &'static str, size: usize, elapsed: Duration, iters: u64) {
    let per_iter = elapsed.as_secs_f64() / iters.max(1) as f64;
    SAMPLES.with(|samples| {
        samples
            .borrow_mut()
            .entry((name, size))
            .or_default()
            .push(per_iter);
    });
}

/// Throughput of `name` at `size` from the median batch, in MiB/s; `None` if it did not
/// run (filtered out).
fn mib_per_s(name: &'static str, size: usize) -> Option<f64> {
    SAMPLES.with(|samples| {
        let mut times = samples.borrow().get(&(name, size))?.clone();
        times.sort_by(f64::total_cmp);
        Some(size as f64 / (1024.0 * 1024.0) / times[times.len() / 2])
    })
}

/// `size` bytes, made distinct by `seed` in their first eight.
fn content(size: usize, seed: u64) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let tag = seed.to_le_bytes();
    let n = tag.len().min(size);
    bytes[..n].copy_from_slice(&tag[..n]);
    bytes
}

const SIZES: [usize; 2] = [4 * 1024, 1024 * 1024];

/// Flushes dirty pages and lets the filesystem journal settle, untimed, so one benchmark's
/// writeback (or a removed temp root) does not land in the next one's timings.
fn settle() {
    let _ = std::process::Command::new("sync").status();
}

fn bench_artifacts(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let mut seed = 0u64;
    let mut group = c.benchmark_group("artifact");
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));

        group.bench_with_input(BenchmarkId::new("raw_sha256", size), &size, |b, &size| {
            let bytes = content(size, 0);
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(Sha256::digest(std::hint::black_box(&bytes)));
                }
                let elapsed = start.elapsed();
                record("raw_sha256", size, elapsed, iters);
                elapsed
            });
        });

        // Filesystem baseline: the same bytes written to a new file each, no sync (what any
        // store that keeps a file per artifact pays at least).
        group.bench_with_input(BenchmarkId::new("raw_new_file", size), &size, |b, &size| {
            let dir = tempfile::tempdir().unwrap();
            settle();
            b.iter_custom(|iters| {
                let inputs: Vec<(u64, Vec<u8>)> = (0..iters)
                    .map(|_| {
                        seed += 1;
                        (seed, content(size, seed))
                    })
                    .collect();
                let start = Instant::now();
                for (seed, bytes) in &inputs {
                    let mut file = OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(dir.path().join(seed.to_string()))
                        .unwrap();
                    file.write_all(bytes).unwrap();
                }
                let elapsed = start.elapsed();
                record("raw_new_file", size, elapsed, iters);
                elapsed
            });
        });

        // New content every iteration, into a store whose shard folders already exist (the
        // steady state).
        for (name, fsync) in [
            ("fs_put_relaxed", FsyncPolicy::Relaxed),
            ("fs_put_every_step", FsyncPolicy::EveryStep),
        ] {
            let root = tempfile::tempdir().unwrap();
            let config = FsConfig::default().with_fsync(fsync);
            let stores = FsStores::open_with(root.path(), config).unwrap();
            for shard in 0..=255u8 {
                let folder = stores.artifacts().dir().join(format!("{shard:02x}"));
                std::fs::create_dir(folder).unwrap();
            }
            settle();
            group.bench_with_input(BenchmarkId::new(name, size), &size, |b, &size| {
                b.iter_custom(|iters| {
                    let inputs: Vec<Vec<u8>> = (0..iters)
                        .map(|_| {
                            seed += 1;
                            content(size, seed)
                        })
                        .collect();
                    runtime.block_on(async {
                        let start = Instant::now();
                        for bytes in inputs {
                            stores
                                .artifacts()
                                .put(bytes, StoreOptions::new())
                                .await
                                .unwrap();
                        }
                        let elapsed = start.elapsed();
                        record(name, size, elapsed, iters);
                        elapsed
                    })
                });
            });
        }

        let root = tempfile::tempdir().unwrap();
        let stores = FsStores::open(root.path()).unwrap();
        let memory = MemoryArtifactStore::new();
        settle();
        let bytes = content(size, u64::MAX);
        let stores_: [(&'static str, &'static str, &dyn DynArtifactStore); 2] = [
            ("fs_put_existing", "fs_get", stores.artifacts()),
            ("memory_put_existing", "memory_get", &memory),
        ];
        for (put_name, get_name, store) in stores_ {
            let id = runtime
                .block_on(store.put_boxed(bytes.clone(), StoreOptions::new()))
                .unwrap()
                .id()
                .clone();
            group.bench_with_input(BenchmarkId::new(put_name, size), &size, |b, &size| {
                b.iter_custom(|iters| {
                    let inputs: Vec<Vec<u8>> = (0..iters).map(|_| bytes.clone()).collect();
                    let elapsed = runtime.block_on(async {
                        let start = Instant::now();
                        for input in inputs {
                            store.put_boxed(input, StoreOptions::new()).await.unwrap();
                        }
                        start.elapsed()
                    });
                    record(put_name, size, elapsed, iters);
                    elapsed
                });
            });
            group.bench_with_input(BenchmarkId::new(get_name, size), &size, |b, &size| {
                b.iter_custom(|iters| {
                    let elapsed = runtime.block_on(async {
                        let start = Instant::now();
                        for _ in 0..iters {
                            std::hint::black_box(store.get_boxed(&id).await.unwrap());
                        }
                        start.elapsed()
                    });
                    record(get_name, size, elapsed, iters);
                    elapsed
                });
            });
        }
    }
    group.finish();

    println!("\nartifact throughput (MiB/s, median batch) and ratio to raw SHA-256:");
    for size in SIZES {
        let Some(raw) = mib_per_s("raw_sha256", size) else {
            continue;
        };
        println!("  {} KiB: raw_sha256 {raw:.0} MiB/s", size / 1024);
        for name in [
            "raw_new_file",
            "fs_put_relaxed",
            "fs_put_every_step",
            "fs_put_existing",
            "fs_get",
            "memory_put_existing",
            "memory_get",
        ] {
            if let Some(rate) = mib_per_s(name, size) {
                println!(
                    "    {name:<22} {rate:>8.1} MiB/s   time ×{:>7.2} of raw",
                    raw / rate
                );
            }
        }
        if let (Some(put), Some(file)) = (
            mib_per_s("fs_put_relaxed", size),
            mib_per_s("raw_new_file", size),
        ) {
            println!(
                "    fs_put_relaxed vs raw_new_file: time ×{:.2}",
                file / put
            );
        }
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench_artifacts(&mut criterion);
    criterion.final_summary();
}

//! The built-in tools' costs next to their baselines, measured in the same run
//! (docs/BENCHMARKS.md, "Built-in tools"): `fs.grep` over a generated 10 000-file tree
//! against ripgrep (`rg`) on the same tree, and `shell.run`'s spawn overhead against a bare
//! `tokio::process::Command`.
//!
//! Run with: `make bench-tools` (installs Debian's `ripgrep` if `rg` is missing), or
//! `cargo bench -p rein-tools --bench tools`.
//!
//! Each figure is the median of its repetitions, with the min–max; the two sides of a
//! ratio alternate, on the same data, in the same process.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rein_tools::shell::{ShellConfig, ShellGuard, ShellRun};
use rein_tools::{FsOp, FsTool, Workspace};
use serde_json::json;

/// Files in the generated tree, and how many of them hold the needle.
const FILES: usize = 10_000;
const NEEDLE_EVERY: usize = 10;
/// Repetitions of each grep; spawns per repetition and repetitions of the spawn bench.
const GREP_REPS: usize = 7;
const SPAWNS: usize = 50;
const SPAWN_REPS: usize = 7;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    grep();
    runtime.block_on(spawn());
}

/// 100 folders of 100 files, 40 lines each; every tenth file holds the needle once.
fn tree(root: &Path) {
    let filler: String = (0..40)
        .map(|i| format!("fn function_{i}(x: u32) -> u32 {{ x.wrapping_mul({i}) }}\n"))
        .collect();
    for i in 0..FILES {
        let dir = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("a folder");
        }
        let mut text = filler.clone();
        if i % NEEDLE_EVERY == 0 {
            text.push_str("// the needle_7f3a is here\n");
        }
        std::fs::write(dir.join(format!("f{i:05}.rs")), text).expect("a file");
    }
}

fn median(mut xs: Vec<Duration>) -> (Duration, Duration, Duration) {
    xs.sort();
    (xs[xs.len() / 2], xs[0], xs[xs.len() - 1])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn grep() {
    let dir = tempfile::tempdir().expect("a temp dir");
    tree(dir.path());
    let tool = FsTool::new(
        FsOp::Grep,
        Workspace::open(dir.path()).expect("a workspace"),
    );
    let input = json!({"pattern": "needle_[0-9a-f]+", "max_results": 5000});
    let have_rg = std::process::Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    // Warm the page cache for both.
    let expected = tool.run(input.clone()).expect("grep runs")["matches"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(expected, FILES / NEEDLE_EVERY, "fs.grep finds every needle");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..GREP_REPS {
        let start = Instant::now();
        let out = tool.run(input.clone()).expect("grep runs");
        ours.push(start.elapsed());
        assert_eq!(out["matches"].as_array().map_or(0, Vec::len), expected);
        if have_rg {
            let start = Instant::now();
            let output = std::process::Command::new("rg")
                .args(["-n", "needle_[0-9a-f]+"])
                .arg(dir.path())
                .output()
                .expect("rg runs");
            theirs.push(start.elapsed());
            #[expect(clippy::naive_bytecount, reason = "not worth a dependency")]
            let lines = output.stdout.iter().filter(|&&b| b == b'\n').count();
            assert_eq!(lines, expected, "rg finds every needle");
        }
    }
    let (m, lo, hi) = median(ours);
    println!(
        "fs.grep, {FILES} files ({expected} matches): {:.1} ms (min {:.1}, max {:.1})",
        ms(m),
        ms(lo),
        ms(hi)
    );
    if have_rg {
        let (r, rlo, rhi) = median(theirs);
        println!(
            "rg -n, same tree:                  {:.1} ms (min {:.1}, max {:.1})",
            ms(r),
            ms(rlo),
            ms(rhi)
        );
        println!("fs.grep / rg = {:.2}", m.as_secs_f64() / r.as_secs_f64());
    } else {
        println!("rg is not installed: `make bench-tools` installs Debian's ripgrep");
    }
}

async fn spawn() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tool = ShellRun::new(
        Workspace::open(dir.path()).expect("a workspace"),
        ShellConfig::new(ShellGuard::new(["true"], Vec::<&str>::new())),
    );
    let input = json!({"argv": ["true"]});
    let (mut ours, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..SPAWN_REPS {
        let start = Instant::now();
        for _ in 0..SPAWNS {
            let out = tool.run(input.clone()).await.expect("true runs");
            assert_eq!(out["exit_code"], 0);
        }
        ours.push(start.elapsed() / SPAWNS as u32);
        let start = Instant::now();
        for _ in 0..SPAWNS {
            let out = tokio::process::Command::new("true")
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .output()
                .await
                .expect("true runs");
            assert!(out.status.success());
        }
        bare.push(start.elapsed() / SPAWNS as u32);
    }
    let (m, lo, hi) = median(ours);
    let (b, blo, bhi) = median(bare);
    println!(
        "shell.run `true`:                  {:.0} µs per call (min {:.0}, max {:.0})",
        m.as_secs_f64() * 1e6,
        lo.as_secs_f64() * 1e6,
        hi.as_secs_f64() * 1e6
    );
    println!(
        "tokio::process::Command `true`:    {:.0} µs per call (min {:.0}, max {:.0})",
        b.as_secs_f64() * 1e6,
        blo.as_secs_f64() * 1e6,
        bhi.as_secs_f64() * 1e6
    );
    println!(
        "shell.run / bare spawn = {:.2}",
        m.as_secs_f64() / b.as_secs_f64()
    );
}

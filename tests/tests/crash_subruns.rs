//! The crash test of a tree of runs: runs the `rein` binary on `tests/crash_tree/delegate.json`
//! (a root delegating to a child that delegates a non-idempotent charge to a grandchild) with
//! filesystem stores, kills it with SIGKILL at seeded random points, and resumes the root
//! with `rein resume` until it ends.
//!
//! After every kill, from the files the dead process left: every ledger of the data
//! directory loads and verifies (a torn final line is the only loss allowed, and the next
//! process cuts it), every entry seen before is still there, and the charge never ran
//! twice. At the end of each series the root completed, the grandchild either charged
//! exactly once or failed with `in_doubt_tool_call` (DESIGN.md §3: a non-idempotent call
//! left in doubt is never run again), and `rein ledger verify ROOT --tree` verifies the
//! whole tree.
//!
//! Knobs (env): `REIN_CRASH_KILLS` (kills, default 12), `REIN_CRASH_SEED` (default 0x5EED),
//! `REIN_BIN` (a prebuilt `rein`; otherwise it is built with cargo).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rein::ledger::{Entry, EntryKind};
use rein::run::FailureKind;
use rein::{Ledger, RunId};

/// A seeded PRNG (splitmix64): the same seed gives the same kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| {
            let v = v.trim();
            v.strip_prefix("0x")
                .map_or_else(|| v.parse().ok(), |hex| u64::from_str_radix(hex, 16).ok())
        })
        .unwrap_or(default)
}

fn rein_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("REIN_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a target dir")
        .to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet", "-p", "rein-cli", "--bin", "rein"]);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    assert!(
        build.status().expect("cargo runs").success(),
        "building rein failed"
    );
    profile_dir.join(format!("rein{}", std::env::consts::EXE_SUFFIX))
}

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crash_tree/delegate.json")
}

/// The complete lines of a ledger file, parsed and verified (a torn final line is left
/// out: the next process cuts it). Reads only.
fn read_ledger(path: &Path, id: &RunId) -> Result<Ledger, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let entries = bytes[..complete]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_slice::<Entry>(line).map_err(|e| format!("line {}: {e}", i + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ledger::from_entries(id.clone(), entries).map_err(|e| e.to_string())
}

/// Every ledger with entries in `data`, by run id.
fn ledgers(data: &Path) -> Result<BTreeMap<RunId, Ledger>, String> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(data.join("ledgers")) else {
        return Ok(out);
    };
    for entry in dir {
        let path = entry.map_err(|e| e.to_string())?.path();
        let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl"))
            .and_then(|s| s.parse::<RunId>().ok())
        else {
            continue;
        };
        let ledger = read_ledger(&path, &id).map_err(|e| format!("{id}: {e}"))?;
        if !ledger.is_empty() {
            out.insert(id, ledger);
        }
    }
    Ok(out)
}

/// The root: the run whose ledger names no parent.
fn root(ledgers: &BTreeMap<RunId, Ledger>) -> Option<RunId> {
    let roots: Vec<&RunId> = ledgers
        .iter()
        .filter(|(_, l)| {
            !l.entries()
                .iter()
                .any(|e| matches!(e.event(), EntryKind::ChildOf { .. }))
        })
        .map(|(id, _)| id)
        .collect();
    roots.first().map(|id| (*id).clone())
}

fn ended(ledger: &Ledger) -> Option<Result<(), FailureKind>> {
    ledger.entries().iter().rev().find_map(|e| match e.event() {
        EntryKind::RunCompleted { .. } => Some(Ok(())),
        EntryKind::RunFailed { failure } => Some(Err(failure.kind)),
        _ => None,
    })
}

fn charges(data: &Path) -> usize {
    std::fs::read(data.join("counts/charge.log")).map_or(0, |b| {
        b.split(|&c| c == b'\n').filter(|l| !l.is_empty()).count()
    })
}

fn spawn(bin: &Path, data: &Path, root: Option<&RunId>) -> std::process::Child {
    let mut command = Command::new(bin);
    match root {
        None => command.arg("run").arg(scenario()),
        Some(id) => command.arg("resume").arg(id.as_str()),
    };
    command
        .arg("--data-dir")
        .arg(data)
        .args(["--json", "--quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("rein starts")
}

#[derive(Debug, Default)]
struct Figures {
    kills: u64,
    series: u64,
    processes: u64,
    entries_lost: u64,
    double_executions: u64,
    in_doubt: u64,
    trees_verified: u64,
    failures: Vec<String>,
}

#[test]
fn a_tree_of_runs_killed_at_random_points_resumes_verifies_and_never_charges_twice() {
    let kills = env_u64("REIN_CRASH_KILLS", 12);
    let seed = env_u64("REIN_CRASH_SEED", 0x5EED);
    let bin = rein_bin();
    let mut rng = Rng(seed);
    let mut f = Figures::default();
    let started = Instant::now();

    // An uninterrupted run: how long it takes (the range kill points are drawn from).
    let base = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let status = spawn(&bin, base.path(), None).wait().expect("wait");
    let took = t0.elapsed();
    assert_eq!(status.code(), Some(0), "the uninterrupted run completes");
    let all = ledgers(base.path()).expect("ledgers");
    assert_eq!(all.len(), 3, "root, child, grandchild");
    assert_eq!(charges(base.path()), 1);
    let window = (took.as_micros() as u64 * 5 / 4).max(2_000);

    let mut left = kills;
    while left > 0 {
        f.series += 1;
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path();
        let mut seen: BTreeMap<RunId, Vec<Entry>> = BTreeMap::new();
        let mut kills_here = 1 + rng.below(3).min(left - 1);
        let mut root_id: Option<RunId> = None;
        for cycle in 0.. {
            assert!(cycle < 100, "the tree never ends");
            let why = format!("series {} process {cycle}", f.series);
            let mut child = spawn(&bin, data, root_id.as_ref());
            f.processes += 1;
            let mut killed = false;
            if kills_here > 0 {
                std::thread::sleep(Duration::from_micros(rng.below(window)));
                if child.try_wait().expect("try_wait").is_none() {
                    child.kill().expect("SIGKILL");
                    killed = true;
                    kills_here -= 1;
                    left -= 1;
                    f.kills += 1;
                }
            }
            let status = child.wait().expect("wait");
            let all = match ledgers(data) {
                Ok(all) => all,
                Err(e) => {
                    f.failures
                        .push(format!("{why}: a ledger does not load: {e}"));
                    break;
                }
            };
            for (id, before) in &seen {
                let now = all.get(id).map_or(&[][..], |l| l.entries());
                let kept = before.iter().zip(now).take_while(|(a, b)| a == b).count();
                if kept < before.len() {
                    f.entries_lost += (before.len() - kept) as u64;
                    f.failures.push(format!("{why}: entries of {id} lost"));
                }
            }
            seen = all
                .iter()
                .map(|(id, l)| (id.clone(), l.entries().to_vec()))
                .collect();
            let n = charges(data);
            if n > 1 {
                f.double_executions += n as u64 - 1;
                f.failures.push(format!("{why}: the charge ran {n} times"));
            }
            root_id = root(&all);
            let Some(root) = root_id.as_ref() else {
                continue; // killed before the root's first entry: start again
            };
            if !killed && !matches!(status.code(), Some(0 | 1)) {
                f.failures.push(format!("{why}: rein exited with {status}"));
                break;
            }
            let Some(outcome) = ended(&all[root]) else {
                if killed {
                    continue;
                }
                f.failures
                    .push(format!("{why}: rein exited, the root did not end"));
                break;
            };
            if outcome != Ok(()) {
                f.failures
                    .push(format!("{why}: the root ended {outcome:?}"));
            }
            // The grandchild charged once, or its charge was left in doubt by a kill.
            let leaf = all.values().find(|l| {
                l.entries()
                    .iter()
                    .any(|e| matches!(e.event(), EntryKind::ChildOf { depth: 2, .. }))
            });
            match leaf.and_then(ended) {
                Some(Ok(())) if n == 1 => {}
                Some(Err(FailureKind::InDoubtToolCall)) if n <= 1 => f.in_doubt += 1,
                other => f.failures.push(format!(
                    "{why}: the grandchild ended {other:?} with {n} charges"
                )),
            }
            let verify = Command::new(&bin)
                .args(["ledger", "verify", root.as_str(), "--tree", "--data-dir"])
                .arg(data)
                .output()
                .expect("rein runs");
            if verify.status.success()
                && String::from_utf8_lossy(&verify.stdout).contains("tree of 3 runs")
            {
                f.trees_verified += 1;
            } else {
                f.failures.push(format!(
                    "{why}: the tree does not verify: {}{}",
                    String::from_utf8_lossy(&verify.stdout),
                    String::from_utf8_lossy(&verify.stderr)
                ));
            }
            break;
        }
    }
    eprintln!(
        "crash test of a tree of runs (seed {seed:#x}, {:.1} s): {} kills over {} series ({} \
         processes); entries lost: {}; double executions: {}; charges left in doubt: {}; \
         trees verified: {}",
        started.elapsed().as_secs_f64(),
        f.kills,
        f.series,
        f.processes,
        f.entries_lost,
        f.double_executions,
        f.in_doubt,
        f.trees_verified
    );
    assert!(f.failures.is_empty(), "{}", f.failures.join("\n"));
    assert_eq!((f.entries_lost, f.double_executions), (0, 0));
    assert_eq!(f.trees_verified, f.series);
}

//! The crash test: runs the `rein` binary on the scenarios in `tests/crash/` with filesystem
//! stores (fsync per step), kills it with SIGKILL at seeded random points — inside tool
//! calls (fixture tools with delays) and inside ledger appends and fsyncs (a scenario of
//! quick steps) — and resumes it with `rein resume` until the run ends.
//!
//! After every kill it checks, through the facade, from the files the dead process left:
//! the ledger loads and verifies (a torn final line cut, and reported, is the only loss
//! allowed; every cut must be reported), every entry seen before is still there, the run
//! snapshot loads, no budget went over, no fixture tool ran more often than the ledger has
//! calls for it, and no non-idempotent tool ran twice. At the end of each series the
//! outcome must be the one an uninterrupted run has, except where DESIGN.md §3 says
//! otherwise: a non-idempotent call left in doubt fails the run with `in_doubt_tool_call`.
//!
//! The run snapshot is a cache that is not synced (DESIGN.md §7), so after some kills the
//! harness also does to it what a power cut may: removes it, or puts back an earlier one
//! that is behind the ledger. The resume after must rebuild the run from its ledger and say
//! so in its `run_resumed` entry. When a run has ended, it may remove the snapshot too:
//! `rein ledger verify` and `rein runs list` must still find the run, from its ledger.
//!
//! The short form runs in `cargo test`; `make crash-test` runs the long form. Knobs (env):
//! `REIN_CRASH_KILLS` (kills per scenario, default 12), `REIN_CRASH_SEED` (default
//! 0x5EED), `REIN_BIN` (a prebuilt `rein`; otherwise it is built with cargo).

mod chaos;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rein::ledger::{Entry, EntryKind};
use rein::run::{BudgetName, FailureKind};
use rein::store::{FsStores, RunStore, RunStoreError};
use rein::{Ledger, RunId, Value};

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

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// How a run ended, as its ledger says.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Completed(Value),
    Failed(FailureKind),
}

/// A scenario file and what the harness needs to know about it.
struct Scenario {
    name: String,
    path: PathBuf,
    tool_calls: u64,
    max_steps: u64,
    /// The fixture tools that are not idempotent.
    non_idempotent: BTreeSet<String>,
}

impl Scenario {
    fn load(path: &Path) -> Self {
        let json: Value =
            serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
        let non_idempotent = json["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter(|t| !t["annotations"]["idempotent"].as_bool().unwrap_or(false))
            .map(|t| t["fixture"].as_str().expect("a fixture").to_owned())
            .collect();
        Self {
            name: path
                .file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned(),
            path: path.to_path_buf(),
            tool_calls: json["policies"]["budgets"]["tool_calls"]
                .as_u64()
                .expect("a tool_calls budget"),
            max_steps: json["max_steps"].as_u64().expect("max_steps"),
            non_idempotent,
        }
    }
}

/// The figures the test reports.
#[derive(Debug, Default)]
struct Figures {
    kills: u64,
    /// Where the process was when it died: the kind of the last entry on disk.
    killed_after: BTreeMap<&'static str, u64>,
    processes: u64,
    /// Torn final lines left (as a power cut would) and then cut by `rein resume`, and the
    /// cuts its ledger reported.
    torn_tails: u64,
    torn_tails_reported: u64,
    /// Snapshots removed or put back behind their ledger (as a power cut may leave them,
    /// being unsynced) before a resume, and the resumes that said so.
    snapshots_lost: u64,
    snapshots_behind: u64,
    snapshots_reported: u64,
    /// Snapshots removed after their run ended, the run still verified and listed.
    snapshots_lost_after_end: u64,
    entries_lost: u64,
    double_executions: u64,
    unrecorded_executions: u64,
    budget_overruns: u64,
    in_doubt_failures: u64,
    series: u64,
    outcomes_equal: u64,
    failures: Vec<String>,
}

/// What a series has seen so far.
#[derive(Default)]
struct Series {
    id: Option<RunId>,
    seen: Vec<Entry>,
    /// A non-idempotent call was left in doubt by a kill: the run must fail with
    /// `in_doubt_tool_call` when resumed.
    in_doubt: Option<String>,
    /// The ledger file ends in a torn line the next process must cut and report.
    torn_pending: bool,
    /// A torn line was left for the next process.
    torn_left: bool,
    /// The earliest snapshot seen, to put back as one a power cut left behind its ledger.
    early_snapshot: Option<(Vec<u8>, u64)>,
    /// The snapshot was removed or put back behind the ledger, when the ledger held this
    /// many `run_resumed` entries: the next one must say so.
    snapshot_doctored: Option<usize>,
}

fn rein_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("REIN_BIN") {
        return PathBuf::from(bin);
    }
    // Beside this test's own binary: <target>/<profile>/deps/crash-… → <target>/<profile>/rein.
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
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building the rein binary failed");
    profile_dir.join(format!("rein{}", std::env::consts::EXE_SUFFIX))
}

fn scenarios() -> Vec<Scenario> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crash");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/crash")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| Scenario::load(p)).collect()
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

/// The run in `data` with at least one entry, read straight from its ledger file (the
/// harness never writes: a torn tail stays for the next process to cut and report), and
/// every check a kill must pass.
async fn inspect(
    data: &Path,
    scenario: &Scenario,
    series: &mut Series,
    figures: &mut Figures,
    why: &str,
) {
    let stores = FsStores::open(data).expect("stores");
    let mut found = None;
    if let Ok(dir) = std::fs::read_dir(data.join("ledgers")) {
        for entry in dir {
            let path = entry.expect("entry").path();
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".jsonl"))
                .and_then(|s| s.parse::<RunId>().ok())
            else {
                continue;
            };
            match read_ledger(&path, &id) {
                Ok((ledger, torn)) => {
                    series.torn_pending = torn;
                    if !ledger.is_empty() {
                        assert!(
                            found.is_none(),
                            "{why}: two runs with entries in one data directory"
                        );
                        found = Some((id, ledger));
                    }
                }
                Err(e) => figures
                    .failures
                    .push(format!("{why}: the ledger does not load: {e}")),
            }
        }
    }
    let Some((id, ledger)) = found else {
        // Killed before the first entry was on disk: the run never started.
        if !series.seen.is_empty() {
            figures.entries_lost += series.seen.len() as u64;
            figures.failures.push(format!("{why}: the ledger vanished"));
        }
        return;
    };
    chaos::assert_chain(&ledger);
    if let Some(known) = &series.id {
        assert_eq!(known, &id, "{why}: the run changed identity");
    }
    series.id = Some(id.clone());
    let entries = ledger.entries();

    // Nothing seen before is lost or changed.
    let kept = series
        .seen
        .iter()
        .zip(entries)
        .take_while(|(a, b)| a == b)
        .count();
    if kept < series.seen.len() {
        figures.entries_lost += (series.seen.len() - kept) as u64;
        figures.failures.push(format!(
            "{why}: {} entries seen before are gone or changed",
            series.seen.len() - kept
        ));
    }
    series.seen = entries.to_vec();

    // The snapshot loads (or was never written).
    match stores.runs().load(&id).await {
        Ok(run) => {
            if series.early_snapshot.is_none()
                && let Some(head) = run.ledger_head()
            {
                let bytes = std::fs::read(snapshot_path(data, &id)).expect("read the snapshot");
                series.early_snapshot = Some((bytes, head.seq));
            }
        }
        Err(RunStoreError::NotFound { .. }) => {}
        Err(e) => figures
            .failures
            .push(format!("{why}: the run snapshot does not load: {e}")),
    }

    // Budgets never went over.
    let consumed: u64 = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::BudgetConsumed { name, amount, .. } if *name == BudgetName::TOOL_CALLS => {
                Some(*amount)
            }
            _ => None,
        })
        .sum();
    let decisions = entries
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::Decision { .. }))
        .count() as u64;
    if consumed > scenario.tool_calls || decisions > scenario.max_steps {
        figures.budget_overruns += 1;
        figures.failures.push(format!(
            "{why}: budget over: {consumed} tool calls, {decisions} steps"
        ));
    }

    // Executions: never more than the recorded calls; non-idempotent ones at most once.
    let mut calls: BTreeMap<(String, String), u64> = BTreeMap::new();
    for entry in entries {
        if let EntryKind::ToolCall { tool, input, .. } = entry.event() {
            *calls
                .entry((tool.to_string(), input.to_string()))
                .or_default() += 1;
        }
    }
    for (tool, executions) in executions(data) {
        let mut total = 0;
        for (input, n) in executions {
            total += n;
            let recorded = input.as_ref().map_or(u64::MAX, |i| {
                calls.get(&(tool.clone(), i.clone())).copied().unwrap_or(0)
            });
            if n > recorded {
                figures.unrecorded_executions += n - recorded;
                figures.failures.push(format!(
                    "{why}: {tool} {input:?} ran {n} times, {recorded} calls on record"
                ));
            }
        }
        if scenario.non_idempotent.contains(&tool) && total > 1 {
            figures.double_executions += total - 1;
            figures
                .failures
                .push(format!("{why}: non-idempotent {tool} ran {total} times"));
        }
    }

    // A non-idempotent call started and not finished is in doubt. A batch's group starts
    // all its calls before their outcomes, which follow in the same order: the calls open
    // are a queue. Resume settles every call left open (runs it again or fails the run).
    let mut open: std::collections::VecDeque<(String, bool)> = std::collections::VecDeque::new();
    for entry in entries {
        match entry.event() {
            EntryKind::ToolCall {
                tool, idempotent, ..
            } => open.push_back((tool.to_string(), *idempotent)),
            EntryKind::ToolResult { attempt: 0, .. } | EntryKind::ToolError { attempt: 0, .. } => {}
            EntryKind::ToolResult { .. } | EntryKind::ToolError { .. } => {
                open.pop_front();
            }
            EntryKind::RunFailed { .. } | EntryKind::RunResumed { .. } => open.clear(),
            _ => {}
        }
    }
    if let Some((tool, _)) = open.into_iter().find(|(_, idempotent)| !idempotent) {
        series.in_doubt.get_or_insert(tool);
    }
}

/// The complete lines of the ledger at `path`, parsed and verified, and whether a torn
/// (unterminated) final line follows them. Reads only.
fn read_ledger(path: &Path, id: &RunId) -> Result<(Ledger, bool), String> {
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
    let ledger = Ledger::from_entries(id.clone(), entries).map_err(|e| e.to_string())?;
    Ok((ledger, complete < bytes.len()))
}

fn snapshot_path(data: &Path, id: &RunId) -> PathBuf {
    data.join("runs").join(format!("{id}.json"))
}

fn resumes(series: &Series) -> usize {
    series
        .seen
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::RunResumed { .. }))
        .count()
}

/// Does to the run's snapshot what a power cut may, it being unsynced: every other time
/// puts back the earliest one seen when it is behind the ledger, else removes it. Returns
/// whether it put one back (`Some(true)`), removed one (`Some(false)`), or found none
/// (`None`).
fn doctor_snapshot(data: &Path, series: &Series, rng: &mut Rng) -> Option<bool> {
    let id = series.id.as_ref()?;
    let path = snapshot_path(data, id);
    if !path.is_file() {
        return None;
    }
    let last = series.seen.last().map_or(0, Entry::seq);
    match &series.early_snapshot {
        Some((bytes, head)) if *head < last && rng.below(2) == 0 => {
            std::fs::write(&path, bytes).expect("put the earlier snapshot back");
            Some(true)
        }
        _ => {
            std::fs::remove_file(&path).expect("remove the snapshot");
            Some(false)
        }
    }
}

/// After its run ended: removes the snapshot, and checks that the run still verifies and
/// is listed with the status its ledger gives.
fn lose_snapshot_after_end(
    bin: &Path,
    data: &Path,
    series: &Series,
    figures: &mut Figures,
    why: &str,
) {
    let Some(id) = &series.id else { return };
    let path = snapshot_path(data, id);
    if std::fs::remove_file(&path).is_err() {
        return;
    }
    figures.snapshots_lost_after_end += 1;
    let rein = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .arg("--data-dir")
            .arg(data)
            .output()
            .expect("rein runs")
    };
    let verify = rein(&["ledger", "verify", id.as_str()]);
    if !verify.status.success() {
        figures.failures.push(format!(
            "{why}: with its snapshot lost after the run ended, `ledger verify` failed: {}",
            String::from_utf8_lossy(&verify.stderr)
        ));
    }
    let list = rein(&["runs", "list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    let status = match outcome(series) {
        Some(Outcome::Completed(_)) => "completed",
        _ => "failed",
    };
    if !listed
        .lines()
        .any(|line| line.starts_with(id.as_str()) && line.contains(status))
    {
        figures.failures.push(format!(
            "{why}: with its snapshot lost after the run ended, `runs list` does not list it \
             as {status}:\n{listed}"
        ));
    }
}

/// Leaves a torn final line, as a power cut in the middle of a write would: a prefix of the
/// last line written, without its newline.
fn tear(data: &Path, series: &Series, rng: &mut Rng) -> bool {
    let Some(id) = &series.id else { return false };
    let path = data.join("ledgers").join(format!("{id}.jsonl"));
    let Some(last) = series.seen.last() else {
        return false;
    };
    let line = last.to_json_line();
    let cut = 1 + rng.below(line.len() as u64 - 2) as usize;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    std::io::Write::write_all(&mut file, &line.as_bytes()[..cut]).expect("write");
    true
}

/// The executions the fixture tools logged, per tool: input (compact JSON; `None` for a
/// line cut short by a kill) → count.
fn executions(data: &Path) -> BTreeMap<String, BTreeMap<Option<String>, u64>> {
    let mut out: BTreeMap<String, BTreeMap<Option<String>, u64>> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(data.join("counts")) else {
        return out;
    };
    for entry in dir {
        let path = entry.expect("entry").path();
        let tool = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(&path).expect("read");
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let input = serde_json::from_slice::<Value>(line)
                .ok()
                .map(|v| v["input"].to_string());
            *out.entry(tool.clone())
                .or_default()
                .entry(input)
                .or_default() += 1;
        }
    }
    out
}

/// How the run in `data` ended, if it did.
fn outcome(series: &Series) -> Option<Outcome> {
    series.seen.iter().rev().find_map(|e| match e.event() {
        EntryKind::RunCompleted { result, .. } => Some(Outcome::Completed(result.clone())),
        EntryKind::RunFailed { failure } => Some(Outcome::Failed(failure.kind)),
        _ => None,
    })
}

fn last_kind(series: &Series) -> &'static str {
    series
        .seen
        .last()
        .map_or("(no entry yet)", |e| e.event().name())
}

/// Starts `rein run` (no run on disk yet) or `rein resume` in `data`.
fn spawn(bin: &Path, scenario: &Scenario, data: &Path, series: &Series) -> std::process::Child {
    let mut command = Command::new(bin);
    match &series.id {
        None => command.arg("run").arg(&scenario.path),
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

/// Runs `scenario` without interruption: the outcome every series must reach, and how long
/// it took (the range kill points are drawn from).
async fn baseline(bin: &Path, scenario: &Scenario) -> (Outcome, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let status = spawn(bin, scenario, dir.path(), &Series::default())
        .wait()
        .expect("wait");
    let took = started.elapsed();
    assert!(
        status.code().is_some_and(|c| c <= 1),
        "{}: baseline exit {status}",
        scenario.name
    );
    let mut series = Series::default();
    let mut figures = Figures::default();
    inspect(dir.path(), scenario, &mut series, &mut figures, "baseline").await;
    assert!(figures.failures.is_empty(), "{:?}", figures.failures);
    (outcome(&series).expect("the baseline ends"), took)
}

async fn crash_scenario(
    bin: &Path,
    scenario: &Scenario,
    kills: u64,
    rng: &mut Rng,
    figures: &mut Figures,
) {
    let (expected, took) = baseline(bin, scenario).await;
    // Kill points over the whole run, process start-up included, and a little past it.
    let window = (took.as_micros() as u64 * 5 / 4).max(2_000);
    let mut left = kills;
    while left > 0 {
        figures.series += 1;
        let dir = tempfile::tempdir().expect("tempdir");
        let mut series = Series::default();
        let mut kills_here = 1 + rng.below(4).min(left - 1);
        for cycle in 0.. {
            assert!(cycle < 100, "{}: the run never ends", scenario.name);
            let mut child = spawn(bin, scenario, dir.path(), &series);
            figures.processes += 1;
            let why = format!(
                "{} series {} process {cycle}",
                scenario.name, figures.series
            );
            let mut killed = false;
            if kills_here > 0 {
                std::thread::sleep(Duration::from_micros(rng.below(window)));
                if child.try_wait().expect("try_wait").is_none() {
                    child.kill().expect("SIGKILL");
                    killed = true;
                }
            }
            let status = child.wait().expect("wait");
            inspect(dir.path(), scenario, &mut series, figures, &why).await;
            if let Some(before) = series.snapshot_doctored {
                // The first resume after the snapshot was doctored must say it rebuilt the run.
                let note = series
                    .seen
                    .iter()
                    .filter_map(|e| match e.event() {
                        EntryKind::RunResumed { note } => Some(note),
                        _ => None,
                    })
                    .nth(before);
                if let Some(note) = note {
                    series.snapshot_doctored = None;
                    if note.contains("snapshot") && note.contains("rebuilt from its ledger") {
                        figures.snapshots_reported += 1;
                    } else {
                        figures.failures.push(format!(
                            "{why}: the resume after a lost or stale snapshot did not say so: {note}"
                        ));
                    }
                }
            }
            if series.torn_left && !series.torn_pending {
                // The process that ran after the tear cut it; if it got as far as resuming,
                // its ledger says so.
                series.torn_left = false;
                figures.torn_tails += 1;
                let reported = series.seen.iter().rev().find_map(|e| match e.event() {
                    EntryKind::RunResumed { note } => Some(note.contains("torn")),
                    _ => None,
                });
                if reported == Some(true) {
                    figures.torn_tails_reported += 1;
                }
            }
            if killed {
                kills_here -= 1;
                left -= 1;
                figures.kills += 1;
                *figures.killed_after.entry(last_kind(&series)).or_default() += 1;
                if outcome(&series).is_none() && !series.torn_pending && rng.below(3) == 0 {
                    series.torn_left = tear(dir.path(), &series, rng);
                    series.torn_pending = series.torn_left;
                }
                if outcome(&series).is_none()
                    && series.snapshot_doctored.is_none()
                    && rng.below(3) == 0
                    && let Some(behind) = doctor_snapshot(dir.path(), &series, rng)
                {
                    if behind {
                        figures.snapshots_behind += 1;
                    } else {
                        figures.snapshots_lost += 1;
                    }
                    series.snapshot_doctored = Some(resumes(&series));
                }
            } else if !matches!(status.code(), Some(0 | 1)) {
                figures.failures.push(format!(
                    "{why}: rein exited with {status} (last entry {})",
                    last_kind(&series)
                ));
                break;
            }
            // Killed or not, the series is over once the run has ended.
            let Some(got) = outcome(&series) else {
                if killed {
                    continue;
                }
                figures
                    .failures
                    .push(format!("{why}: rein exited but the run did not end"));
                break;
            };
            if rng.below(2) == 0 {
                lose_snapshot_after_end(bin, dir.path(), &series, figures, &why);
            }
            match (&series.in_doubt, &got) {
                (Some(_), Outcome::Failed(FailureKind::InDoubtToolCall)) => {
                    figures.in_doubt_failures += 1;
                }
                (Some(tool), _) => figures.failures.push(format!(
                    "{why}: {tool} was in doubt, yet the run ended {got:?}"
                )),
                (None, got) if *got == expected => figures.outcomes_equal += 1,
                (None, got) => figures.failures.push(format!(
                    "{why}: ended {got:?}, uninterrupted it ends {expected:?}"
                )),
            }
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_points_the_run_resumes_to_the_same_outcome_and_nothing_runs_twice() {
    let kills = env_u64("REIN_CRASH_KILLS", 12);
    let seed = env_u64("REIN_CRASH_SEED", 0x5EED);
    let bin = rein_bin();
    let mut rng = Rng(seed);
    let mut figures = Figures::default();
    let started = Instant::now();
    let scenarios = scenarios();
    assert!(scenarios.len() >= 3);
    for scenario in &scenarios {
        crash_scenario(&bin, scenario, kills, &mut rng, &mut figures).await;
    }
    eprintln!(
        "crash test (seed {seed:#x}, {} scenarios, {:.1} s): {} kills survived over {} series \
         ({} processes); entries lost: {}; torn tails left and cut: {} ({} reported in the resumed ledger); \
         snapshots lost / put back behind their ledger before a resume: {} / {} ({} reported in the resumed ledger); \
         snapshots lost after the run ended, the run still verified and listed: {}; double executions: {}; \
         executions without a recorded call: {}; budget overruns: {}; outcomes equal to an \
         uninterrupted run: {}; in-doubt failures (DESIGN.md §3): {}; killed after: {:?}",
        scenarios.len(),
        started.elapsed().as_secs_f64(),
        figures.kills,
        figures.series,
        figures.processes,
        figures.entries_lost,
        figures.torn_tails,
        figures.torn_tails_reported,
        figures.snapshots_lost,
        figures.snapshots_behind,
        figures.snapshots_reported,
        figures.snapshots_lost_after_end,
        figures.double_executions,
        figures.unrecorded_executions,
        figures.budget_overruns,
        figures.outcomes_equal,
        figures.in_doubt_failures,
        figures.killed_after,
    );
    assert!(
        figures.failures.is_empty(),
        "{}",
        figures.failures.join("\n")
    );
    assert_eq!(figures.kills, kills * scenarios.len() as u64);
    assert_eq!((figures.entries_lost, figures.double_executions), (0, 0));
    // The store cuts a torn line with the entry that reports it: a cut nobody recorded would
    // be a loss nobody can see.
    assert_eq!(
        figures.torn_tails_reported, figures.torn_tails,
        "torn tails cut without a report in the resumed ledger"
    );
    assert_eq!(
        figures.outcomes_equal + figures.in_doubt_failures,
        figures.series
    );
    // Every resume after a lost or stale snapshot rebuilt the run from its ledger, and said so.
    assert_eq!(
        figures.snapshots_reported,
        figures.snapshots_lost + figures.snapshots_behind,
        "a lost or stale snapshot resumed without a report"
    );
}

//! `rein runs prune`: removes finished runs older than a given age — each with the child
//! runs it delegated to, their ledgers, snapshots and stored scenarios — then the
//! artifacts only they referred to, and keeps the run index consistent.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rein::store::{ArtifactId, FsRunIndex, IndexedRun};
use rein::{RunId, RunStatus};

use crate::cli::{PrunedStatus, RunsPruneArgs};
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::render::age;
use crate::run_index::RunSummary;

/// `rein runs prune`.
pub(crate) fn prune(args: &RunsPruneArgs) -> CliResult {
    let data = DataDir::new(&args.data.data_dir)?;
    data.require()?;
    let runs = crate::run_index::runs(&data)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let older_than = u64::try_from(args.older_than.as_millis()).unwrap_or(u64::MAX);
    let cutoff = now.saturating_sub(older_than);
    let plan = Plan::of(&runs, cutoff, args.status);
    if plan.trees.is_empty() {
        outln!(
            "nothing to prune in {}: no {}run ended more than {} ago ({} runs, {} kept: not finished, broken, or with a child that is not)",
            data.shown(),
            args.status.map_or("", |s| match s {
                PrunedStatus::Completed => "completed ",
                PrunedStatus::Failed => "failed ",
            }),
            age(older_than),
            runs.len(),
            plan.held
        );
        return Ok(Exit::Ok);
    }
    let doomed: Vec<&RunId> = plan.trees.iter().flatten().collect();
    let doomed_set: HashSet<&RunId> = doomed.iter().copied().collect();
    let summaries: HashMap<&RunId, &RunSummary> =
        runs.iter().map(|r| (&r.id, &r.summary)).collect();
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    // Artifacts only the doomed runs refer to: read before their ledgers go.
    let candidates = artifacts_of(&data, doomed.iter().copied())?;
    let mut removed = Vec::new();
    let mut failure = None;
    for id in &doomed {
        if args.dry_run {
            removed.push((*id).clone());
            continue;
        }
        match remove_run(&data, id) {
            Ok(()) => removed.push((*id).clone()),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    // The index never keeps a row for a run that is gone.
    if !args.dry_run {
        FsRunIndex::new(&data.layout())
            .forget::<RunSummary>(&removed)
            .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?;
    }
    for id in &removed {
        let summary = summaries.get(id);
        outln!(
            "{verb} run {id}  {}  ended {} ago  {}",
            summary.map_or("?", |s| s.shown.as_str()),
            summary
                .and_then(|s| s.last)
                .map_or_else(|| "?".to_owned(), |t| age(now.saturating_sub(t))),
            summary.map_or("", |s| s.detail.as_str())
        );
    }
    if let Some(e) = failure {
        return Err(e);
    }
    // The artifacts a remaining run refers to stay, whoever stored them first.
    let kept = remaining_references(&data, &runs, &doomed_set, &candidates)?;
    let mut artifacts = 0;
    let mut busy = None;
    if !candidates.is_empty() && !args.dry_run {
        busy = runs
            .iter()
            .find(|r| r.summary.status == Some(RunStatus::Running) && being_driven(&data, &r.id))
            .map(|r| r.id.clone());
    }
    if let Some(id) = &busy {
        outln!(
            "kept every artifact: run {id} is being driven now and may store one of them again; prune again when it is done"
        );
    } else {
        for id in candidates.iter().filter(|c| !kept.contains(c.as_str())) {
            if !args.dry_run {
                for path in data.layout().artifact(id) {
                    remove_file(&path)?;
                }
            }
            artifacts += 1;
        }
    }
    outln!(
        "{verb} {} runs ({} finished trees) and {artifacts} artifacts no remaining run refers to; {} runs kept",
        removed.len(),
        plan.trees.len(),
        runs.len() - removed.len()
    );
    Ok(Exit::Ok)
}

/// The run trees to remove: each a root and every run below it, all finished, the last of
/// them before the cutoff.
struct Plan {
    trees: Vec<Vec<RunId>>,
    /// Root runs kept although old enough: not finished, broken, or with a run below that
    /// is not finished.
    held: usize,
}

impl Plan {
    fn of(runs: &[IndexedRun<RunSummary>], cutoff: u64, status: Option<PrunedStatus>) -> Self {
        let by_id: HashMap<&RunId, &RunSummary> =
            runs.iter().map(|r| (&r.id, &r.summary)).collect();
        let mut children: HashMap<&RunId, Vec<&RunId>> = HashMap::new();
        let mut has_parent = HashSet::new();
        for run in runs {
            for child in &run.summary.children {
                if let Some((&child, _)) = by_id.get_key_value(child) {
                    children.entry(&run.id).or_default().push(child);
                    has_parent.insert(child);
                }
            }
            if let Some(parent) = &run.summary.parent
                && by_id.contains_key(parent)
            {
                has_parent.insert(&run.id);
                children.entry(parent).or_default().push(&run.id);
            }
        }
        let wanted = |summary: &RunSummary| match status {
            None => true,
            Some(PrunedStatus::Completed) => summary.status == Some(RunStatus::Completed),
            Some(PrunedStatus::Failed) => summary.status == Some(RunStatus::Failed),
        };
        let mut trees = Vec::new();
        let mut held = 0;
        for run in runs.iter().filter(|r| !has_parent.contains(&r.id)) {
            if !wanted(&run.summary) || !old(&run.summary, cutoff) {
                continue;
            }
            // The whole tree goes, or none of it: a parent's ledger names its children.
            let mut tree = Vec::new();
            let mut seen = HashSet::new();
            let mut stack = vec![&run.id];
            let mut removable = true;
            while let Some(id) = stack.pop() {
                if !seen.insert(id) {
                    continue;
                }
                let summary = by_id[id];
                removable &= summary.finished() && old(summary, cutoff);
                tree.push(id.clone());
                stack.extend(children.get(id).into_iter().flatten().copied());
            }
            if removable {
                trees.push(tree);
            } else {
                held += 1;
            }
        }
        Self { trees, held }
    }
}

/// Whether the run's last entry is older than `cutoff`.
fn old(summary: &RunSummary, cutoff: u64) -> bool {
    summary.last.is_some_and(|last| last <= cutoff)
}

/// Whether a `rein` process holds run `id`'s lock (it is driving the run).
fn being_driven(data: &DataDir, id: &RunId) -> bool {
    let path = data.root().join("scenarios").join(format!("{id}.lock"));
    let Ok(file) = std::fs::OpenOptions::new().write(true).open(path) else {
        return false;
    };
    matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Removes run `id`'s files: ledger, snapshot, stored scenario (and its source and lock).
fn remove_run(data: &DataDir, id: &RunId) -> Result<(), CliError> {
    let scenarios = data.root().join("scenarios");
    for path in [
        data.snapshot(id),
        data.scenario(id),
        data.scenario_source(id),
        scenarios.join(format!("{id}.lock")),
        // The ledger last: while it is there, the run is listed and can be pruned again.
        data.ledger(id),
    ] {
        remove_file(&path)?;
    }
    Ok(())
}

fn remove_file(path: &Path) -> Result<(), CliError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CliError::new(
            Exit::Failed,
            format!(
                "cannot remove {}: {e}; the runs listed above were removed, the others kept",
                path.display()
            ),
        )),
    }
}

/// The artifacts on disk that the ledgers of `ids` refer to.
fn artifacts_of<'a>(
    data: &DataDir,
    ids: impl Iterator<Item = &'a RunId>,
) -> Result<HashSet<ArtifactId>, CliError> {
    let mut found = HashSet::new();
    for id in ids {
        scan(&data.ledger(id), |token| {
            if let Ok(artifact) = token.parse::<ArtifactId>()
                && data.layout().artifact(&artifact)[0].is_file()
            {
                found.insert(artifact);
            }
        })?;
    }
    Ok(found)
}

/// The `candidates` that a run not being removed refers to (by id).
fn remaining_references(
    data: &DataDir,
    runs: &[IndexedRun<RunSummary>],
    doomed: &HashSet<&RunId>,
    candidates: &HashSet<ArtifactId>,
) -> Result<HashSet<String>, CliError> {
    let mut kept = HashSet::new();
    if candidates.is_empty() {
        return Ok(kept);
    }
    let wanted: HashSet<&str> = candidates.iter().map(ArtifactId::as_str).collect();
    for run in runs.iter().filter(|r| !doomed.contains(&r.id)) {
        scan(&data.ledger(&run.id), |token| {
            if wanted.contains(token) {
                kept.insert(token.to_owned());
            }
        })?;
        if kept.len() == candidates.len() {
            break;
        }
    }
    Ok(kept)
}

/// Calls `found` with every run of 64 hexadecimal digits in the file at `path` (line by
/// line, in bounded memory). An artifact id is one; whatever else is (hashes), only ever
/// keeps an artifact, never removes one.
fn scan(path: &Path, mut found: impl FnMut(&str)) -> Result<(), CliError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(CliError::new(
                Exit::Failed,
                format!("cannot read {}: {e}", path.display()),
            ));
        }
    };
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(|e| {
            CliError::new(Exit::Failed, format!("cannot read {}: {e}", path.display()))
        })?;
        if read == 0 {
            return Ok(());
        }
        for token in line.split(|b| !b.is_ascii_hexdigit()) {
            if token.len() == 64
                && let Ok(token) = std::str::from_utf8(token)
            {
                found(token);
            }
        }
    }
}

//! Chaos across processes: `rein worker` processes drive submitted runs whose tools are slow
//! and whose writes are not idempotent, while a random worker holding a lease is killed
//! with SIGKILL (and a new one started) again and again, and the database server is
//! restarted once mid-run. At the end every run ended, no non-idempotent call ran twice, no
//! side effect is missing from its run's ledger, every ledger verifies, and no two workers
//! wrote to one run under one fencing token. The figures are printed.
//!
//! The short form (30 runs, 3 kills) runs in `cargo test`; the long form is
//! `make chaos-pg` (`REIN_CHAOS_RUNS`, `REIN_CHAOS_KILLS`). A test binary of its own: the
//! restart would cut the other tests' connections (cargo runs test binaries one at a time).

mod support;
#[path = "worker_chaos/workers.rs"]
mod workers;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use rein::ledger::EntryKind;
use rein::postgres::{PgConfig, PgStores};
use rein::run::FailureKind;
use rein::store::{LedgerStore as _, RunStore as _};
use rein::{RunId, RunStatus};
use serde_json::{Value, json};
use support::pg::{connect, fresh, restart_cluster};
use support::{Outcome, Scratch, rein};
use workers::{Dice, Workers};

/// How much chaos.
#[derive(Debug)]
struct Plan {
    runs: usize,
    kills: usize,
    /// Workers alive at any time.
    workers: usize,
    /// How long everything may take before the test fails naming what did not happen.
    bound: Duration,
}

impl Plan {
    fn from_env() -> Self {
        let number = |name: &str, default: usize| {
            std::env::var(name).ok().map_or(default, |v| {
                v.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}={v}: give a whole number"))
            })
        };
        let runs = number("REIN_CHAOS_RUNS", 30);
        Self {
            runs,
            kills: number("REIN_CHAOS_KILLS", 3),
            workers: 3,
            // Generous: a loaded machine with debug binaries.
            bound: Duration::from_secs(240 + 6 * runs as u64),
        }
    }
}

/// Each run: a slow idempotent lookup in `explore`, then two slow charges in `act`, each
/// charge a non-idempotent write that appends a line per execution to a file in the
/// workspace (the side effects, counted).
fn scenario(workspace: &Path, run: usize) -> String {
    let t = |from: &str, to: &str| json!({"expect": from, "decision": {"type": "transition", "to": to, "reason": "next"}});
    let call = |state: &str, tool: &str, n: usize| json!({"expect": state, "decision": {"type": "call_tool", "tool": tool, "input": {"run": run, "n": n}, "reason": tool}});
    json!({
        "goal": format!("chaos run {run}"),
        "workspace": workspace,
        "approver": "auto",
        "tools": [
            {"fixture": "lookup", "annotations": {"read_only": true, "idempotent": true, "risk_level": "low"},
             "behavior": {"output": {"found": true}}, "delay_ms": 150, "count_file": "lookups.log"},
            {"fixture": "charge", "annotations": {"risk_level": "low"},
             "behavior": {"output": {"charged": true}}, "delay_ms": 150, "count_file": "charges.log"}
        ],
        "planner": {"scripted": [
            t("intake", "explore"),
            call("explore", "lookup", 1),
            t("explore", "decide"),
            t("decide", "act"),
            call("act", "charge", 1),
            call("act", "charge", 2),
            t("act", "validate"),
            {"expect": "validate", "decision": {"type": "finish", "summary": "charged twice", "result": {"run": run}}}
        ]}
    })
    .to_string()
}

/// The runs not yet ended (completed or failed, and off the queue), by what they are.
async fn unfinished(stores: &PgStores, ids: &[RunId]) -> Vec<String> {
    let queued = stores.queued().await.unwrap_or_else(|_| ids.to_vec());
    let mut left = Vec::new();
    for id in ids {
        match stores.runs().load(id).await {
            Ok(run) if run.status().is_terminal() && !queued.contains(id) => {}
            Ok(run) => left.push(format!("{id} ({:?})", run.status())),
            Err(e) => left.push(format!("{id} (not loaded: {e})")),
        }
    }
    left
}

/// The workers holding a live lease on a queued run now (none while the database is away).
async fn holders(url: &str) -> Vec<String> {
    let Ok(db) = connect(url).await else {
        return Vec::new();
    };
    db.query(
        "SELECT DISTINCT l.owner FROM rein_leases l JOIN rein_queue q USING (run_id) \
         WHERE l.expires_at > now() ORDER BY 1",
        &[],
    )
    .await
    .map(|rows| rows.iter().map(|r| r.get(0)).collect())
    .unwrap_or_default()
}

/// The side effects a count file records: executions per (run, n).
fn effects(file: &Path) -> BTreeMap<(u64, u64), usize> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a count line that is not JSON ({e}): {line}"));
        let key = (
            v["input"]["run"].as_u64().unwrap(),
            v["input"]["n"].as_u64().unwrap(),
        );
        *counts.entry(key).or_default() += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_killed_at_random_and_a_database_restart_lose_nothing_and_repeat_no_write() {
    let plan = Plan::from_env();
    let began = Instant::now();
    let deadline = began + plan.bound;
    let (url, _db) = fresh().await;
    let scratch = Scratch::new();
    let workspace = scratch.dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();

    // Submitted first, from processes of their own.
    let mut ids = Vec::new();
    for run in 0..plan.runs {
        let file = scratch.write(&format!("chaos-{run}.json"), &scenario(&workspace, run));
        let (url, file) = (url.clone(), file.to_str().unwrap().to_owned());
        let out = tokio::task::spawn_blocking(move || {
            Outcome::of(
                &rein()
                    .args(["submit", &file])
                    .env("REIN_STORE", url)
                    .output()
                    .unwrap(),
            )
        })
        .await
        .unwrap();
        out.expect_code(0);
        ids.push(RunId::new(out.stdout.trim()).unwrap());
    }
    let stores = PgStores::connect(PgConfig::from_url(&url).unwrap())
        .await
        .unwrap();

    let mut workers = Workers {
        url: url.clone(),
        dir: scratch.dir.path().to_owned(),
        live: Vec::new(),
        started: 0,
        killed: Vec::new(),
        died: Vec::new(),
    };
    for _ in 0..plan.workers {
        workers.start();
    }
    let seed = u64::from(began.elapsed().subsec_nanos()) | 1;
    let mut dice = Dice(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut restarted = false;

    // Kill a worker that holds a lease, start another, every few hundred ms; restart the
    // database once, halfway through the kills.
    'chaos: for kill in 0..plan.kills {
        let victim = loop {
            workers.check();
            if unfinished(&stores, &ids).await.is_empty() {
                break 'chaos;
            }
            let live = workers.names();
            let held: Vec<String> = holders(&url)
                .await
                .into_iter()
                .filter(|h| live.contains(h))
                .collect();
            if !held.is_empty() {
                break held[dice.below(held.len())].clone();
            }
            assert!(
                Instant::now() < deadline,
                "no live worker took a lease for {:?}; worker logs in {}",
                plan.bound,
                scratch.dir.path().display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        workers.kill(&victim);
        if !restarted && kill >= plan.kills / 2 {
            tokio::task::spawn_blocking(restart_cluster).await.unwrap();
            restarted = true;
        }
        // Started once the server is back: a worker that cannot reach the database when
        // it starts exits 1, as documented.
        workers.start();
        tokio::time::sleep(Duration::from_millis(200 + 50 * dice.below(8) as u64)).await;
    }

    // Every run ends.
    loop {
        workers.check();
        let left = unfinished(&stores, &ids).await;
        if left.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            let logs: Vec<String> = workers
                .lines()
                .into_iter()
                .rev()
                .take(40)
                .map(|(w, l)| format!("{w}: {l}"))
                .collect();
            panic!(
                "after {:?}, {} of {} runs had not ended: {}\nlive workers {:?}, exited {:?}\nlast worker lines:\n{}",
                plan.bound,
                left.len(),
                ids.len(),
                left.join(", "),
                workers.names(),
                workers.died,
                logs.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    workers.stop();
    let ran_for = began.elapsed();

    let mut problems: Vec<String> = workers.died.clone();
    let charges = effects(&workspace.join("charges.log"));
    let lookups = effects(&workspace.join("lookups.log"));
    for (&(run, n), &count) in &charges {
        if count > 1 {
            problems.push(format!("run {run}: charge {n} ran {count} times"));
        }
    }

    // The fencing token each entry was written under.
    let db = connect(&url).await.unwrap();
    let mut tokens: HashMap<String, Vec<Option<i64>>> = HashMap::new();
    for row in db
        .query(
            "SELECT run_id, fencing_token FROM rein_ledger ORDER BY run_id, seq",
            &[],
        )
        .await
        .unwrap()
    {
        tokens.entry(row.get(0)).or_default().push(row.get(1));
    }

    let (mut completed, mut in_doubt, mut entries, mut taken_over, mut max_token) = (0, 0, 0, 0, 0);
    for (run, id) in ids.iter().enumerate() {
        let stored = stores.runs().load(id).await.unwrap();
        let ledger = match stores.ledgers().load(id).await {
            Ok(loaded) => loaded.ledger,
            Err(e) => {
                problems.push(format!("run {run} ({id}): its ledger does not load: {e}"));
                continue;
            }
        };
        let events: Vec<&EntryKind> = ledger
            .entries()
            .iter()
            .map(rein::ledger::Entry::event)
            .collect();
        entries += events.len();
        match (stored.status(), events.last()) {
            (RunStatus::Completed, Some(EntryKind::RunCompleted { .. })) => completed += 1,
            (RunStatus::Failed, Some(EntryKind::RunFailed { failure }))
                if failure.kind == FailureKind::InDoubtToolCall =>
            {
                in_doubt += 1;
            }
            (status, last) => problems.push(format!(
                "run {run} ({id}) ended {status:?} with last entry {last:?}"
            )),
        }
        // Every side effect that happened has its call in the ledger, written before it.
        for n in 1..=2u64 {
            let happened = charges.get(&(run as u64, n)).copied().unwrap_or(0);
            let called = events.iter().any(|e| {
                matches!(e, EntryKind::ToolCall { tool, input, .. }
                    if tool.as_str() == "charge" && input["n"] == n)
            });
            if happened > 0 && !called {
                problems.push(format!(
                    "run {run}: charge {n} ran but its call is not in the ledger"
                ));
            }
            if stored.status() == RunStatus::Completed && happened != 1 {
                problems.push(format!(
                    "run {run} completed but charge {n} ran {happened} times"
                ));
            }
        }
        // Tokens never go back, and each lease (one token) resumed the run at most once:
        // two workers under one token would have resumed it twice.
        let run_tokens = tokens.get(id.as_str()).cloned().unwrap_or_default();
        if run_tokens.len() != events.len() {
            problems.push(format!(
                "run {run}: {} rows, {} entries",
                run_tokens.len(),
                events.len()
            ));
            continue;
        }
        if run_tokens.windows(2).any(|w| w[0] > w[1]) {
            problems.push(format!("run {run}: fencing tokens go back: {run_tokens:?}"));
        }
        let mut resumed: BTreeMap<Option<i64>, usize> = BTreeMap::new();
        for (event, token) in events.iter().zip(&run_tokens) {
            if matches!(event, EntryKind::RunResumed { .. }) {
                *resumed.entry(*token).or_default() += 1;
            }
        }
        if let Some((token, n)) = resumed.iter().find(|(_, n)| **n > 1) {
            problems.push(format!(
                "run {run}: resumed {n} times under token {token:?}"
            ));
        }
        if resumed.len() > 1 {
            taken_over += 1;
        }
        max_token = max_token.max(run_tokens.iter().flatten().copied().max().unwrap_or(0));
    }

    // What each worker says it drove, under which token: never one token in two workers.
    let mut drivers: HashMap<(String, u64), String> = HashMap::new();
    for (worker, line) in workers.lines() {
        let Some(rest) = line.strip_prefix("run ") else {
            continue;
        };
        let Some((id, rest)) = rest.split_once(" (lease token ") else {
            continue;
        };
        let Some((token, _)) = rest.split_once(')') else {
            continue;
        };
        let key = (id.to_owned(), token.parse().unwrap());
        if let Some(other) = drivers.insert(key.clone(), worker.clone())
            && other != worker
        {
            problems.push(format!(
                "run {} under token {}: driven by {other} and {worker}",
                key.0, key.1
            ));
        }
    }

    // Every ledger verifies through the command line as well.
    for id in &ids {
        let (url, run) = (url.clone(), id.to_string());
        let out = tokio::task::spawn_blocking(move || {
            Outcome::of(
                &rein()
                    .args(["ledger", "verify", &run])
                    .env("REIN_STORE", url)
                    .output()
                    .unwrap(),
            )
        })
        .await
        .unwrap();
        if out.code != 0 {
            problems.push(format!(
                "rein ledger verify {id}: exit {}: {}",
                out.code, out.stderr
            ));
        }
    }

    let executed = |m: &BTreeMap<(u64, u64), usize>| m.values().sum::<usize>();
    eprintln!(
        "chaos: {} runs in {:.1} s (seed {seed}): {completed} completed, {in_doubt} failed on an in-doubt charge; \
         {} workers started, {} killed with SIGKILL, {} database restart; \
         {} charges ran (none twice), {} lookups ran ({} more than once, idempotent); \
         {entries} ledger entries, {taken_over} runs taken over, highest fencing token {max_token}",
        ids.len(),
        ran_for.as_secs_f64(),
        workers.started,
        workers.killed.len(),
        u8::from(restarted),
        executed(&charges),
        executed(&lookups),
        lookups.values().filter(|&&n| n > 1).count(),
    );
    assert!(
        restarted && !workers.killed.is_empty(),
        "every run ended before the chaos: {} kills, restarted: {restarted}; submit more runs (REIN_CHAOS_RUNS)",
        workers.killed.len()
    );
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert_eq!(completed + in_doubt, ids.len());
}

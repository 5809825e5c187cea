//! Stopping a run from another process: `rein abort` and `rein interrupt` store a stop
//! request where the run is kept (a data directory, or `--store`), the process driving it
//! (`rein run`, a `rein worker`) honours it at its next step, and the ledger names who
//! asked. With a shared store, `rein resume` and `rein approve` only record the answer or
//! the verdict and queue the run: a worker drives it.

mod support;

use std::process::Stdio;

use support::pg::{
    QUEUED, entries_of, fresh, rein_on, run_id_of, start_worker, stop_worker, until_count,
};
use support::{Outcome, Scratch, durable_drop_table, rein};

/// A run whose one tool call never answers (within ten minutes): it is being driven until
/// someone stops it.
fn hanging() -> String {
    serde_json::json!({
        "goal": "wait for the slow service",
        "tools": [{
            "fixture": "slow.lookup", "description": "never answers",
            "annotations": {"read_only": true, "timeout_ms": 600_000}, "behavior": "hang"
        }],
        "planner": {"scripted": [
            {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
            {"expect": "explore", "decision": {"type": "call_tool", "tool": "slow.lookup", "input": {}, "reason": "look"}},
            {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "have it"}},
            {"expect": "decide", "decision": {"type": "finish", "summary": "done"}}
        ]}
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_abort_reaches_the_worker_driving_the_run_on_the_store() {
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    let file = scratch.write("hang.json", &hanging());
    let out = rein_on(&url, &["submit", file.to_str().unwrap()]).await;
    out.expect_code(0);
    let id = out.stdout.trim().to_owned();
    let worker = start_worker(&url, "stop-worker");
    // The worker is inside the call that never answers.
    until_count(&db, &entries_of("tool_call"), &id, 1).await;

    rein_on(
        &url,
        &["abort", &id, "--by", "alice", "--reason", "runaway call"],
    )
    .await
    .expect_code(0)
    .stdout_has(&[&format!("abort of run {id} requested by alice")]);
    until_count(&db, &entries_of("run_failed"), &id, 1).await;
    until_count(
        &db,
        "SELECT 1 - count(*) FROM rein_queue WHERE run_id = $1",
        &id,
        1,
    )
    .await;
    let shown = rein_on(&url, &["ledger", "show", &id]).await;
    shown
        .expect_code(0)
        .stdout_has(&["abort requested by alice", "runaway call", "aborted"]);
    let stopped = stop_worker(worker).await;
    stopped
        .expect_code(0)
        .stderr_has(&[&format!("run {id} (lease token 1): failed")]);

    // A finished run, an unknown run, a bad id: bad input, nothing recorded.
    rein_on(&url, &["interrupt", &id, "--reason", "late", "--by", "bob"])
        .await
        .expect_code(2)
        .stderr_has(&["has failed already", "nothing was recorded"]);
    rein_on(
        &url,
        &["abort", "no-such-run", "--reason", "x", "--by", "bob"],
    )
    .await
    .expect_code(2)
    .stderr_has(&["no run no-such-run", "rein runs list --store URL"]);
    rein_on(&url, &["abort", "../etc", "--reason", "x", "--by", "bob"])
        .await
        .expect_code(2)
        .stderr_has(&["is not a run id"]);
    let left: i64 = db
        .query_one("SELECT count(*) FROM rein_stop_requests", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        left, 0,
        "an honoured request is cleared; a refused one never stored"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_abort_reaches_rein_run_in_another_process_on_the_data_directory() {
    let scratch = Scratch::new();
    let file = scratch.write("hang.json", &hanging());
    let data = scratch.data();
    let running = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .arg("run")
        .arg(&file)
        .arg("--data-dir")
        .arg(&data)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run's ledger, once it holds the call that never answers.
    let ledgers = data.join("ledgers");
    let id = loop {
        let found = std::fs::read_dir(&ledgers).ok().and_then(|dir| {
            dir.filter_map(Result::ok).find_map(|e| {
                let text = std::fs::read_to_string(e.path()).ok()?;
                let name = e.file_name().to_string_lossy().into_owned();
                (text.contains("\"type\":\"tool_call\""))
                    .then(|| name.trim_end_matches(".jsonl").to_owned())
            })
        });
        if let Some(id) = found {
            break id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    // --by defaults to the user running rein.
    let (asked_id, dir) = (id.clone(), data.clone());
    let asked = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .args(["abort", &asked_id, "--reason", "wrong goal", "--data-dir"])
                .arg(dir)
                .env("USER", "carol")
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    asked
        .expect_code(0)
        .stdout_has(&[&format!("abort of run {id} requested by carol")]);
    let output = tokio::task::spawn_blocking(move || running.wait_with_output().unwrap())
        .await
        .unwrap();
    Outcome::of(&output).expect_code(1).stdout_has(&["aborted"]);
    let dir = data.clone();
    let shown_id = id.clone();
    let shown = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .args(["ledger", "show", &shown_id, "--data-dir"])
                .arg(dir)
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    shown
        .expect_code(0)
        .stdout_has(&["abort requested by carol", "wrong goal"]);
}

/// An interrupt asked while the run waits in the queue is honoured when a worker takes it:
/// the run is left interrupted, off the queue; `rein resume` queues it again and a worker
/// drives it to its end.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_run_waits_until_resume_queues_it_for_a_worker() {
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    let file = scratch.scenario("happy-path.json");
    let out = rein_on(&url, &["submit", file.to_str().unwrap()]).await;
    let id = out.stdout.trim().to_owned();
    rein_on(
        &url,
        &["interrupt", &id, "--by", "bob", "--reason", "hold it"],
    )
    .await
    .expect_code(0);
    let worker = start_worker(&url, "interrupting");
    until_count(&db, &entries_of("run_interrupted"), &id, 1).await;
    until_count(
        &db,
        "SELECT 1 - count(*) FROM rein_queue WHERE run_id = $1",
        &id,
        1,
    )
    .await;
    rein_on(&url, &["runs", "list"])
        .await
        .stdout_has(&["INTERRUPTED"]);
    rein_on(&url, &["ledger", "show", &id])
        .await
        .stdout_has(&["interrupt requested by bob", "hold it"]);

    rein_on(&url, &["resume", &id])
        .await
        .expect_code(0)
        .stdout_has(&[&format!("run {id} is queued"), "a worker drives it"]);
    until_count(&db, &entries_of("run_completed"), &id, 1).await;
    stop_worker(worker).await.expect_code(0);
    rein_on(&url, &["ledger", "verify", &id])
        .await
        .expect_code(0);
}

/// The machine that answers or approves never runs the agent's tools: the answer and the
/// verdict are recorded and the run queued; nothing more happens until a worker runs.
#[tokio::test(flavor = "multi_thread")]
async fn an_answer_and_a_verdict_are_recorded_and_a_worker_drives_the_run() {
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    let asked = rein_on(
        &url,
        &["run", scratch.scenario("ask-human.json").to_str().unwrap()],
    )
    .await;
    asked.expect_code(3);
    let question = run_id_of(&asked);
    rein_on(&url, &["resume", &question, "--input", "maybe"])
        .await
        .expect_code(2);
    rein_on(&url, &["resume", &question, "--input", "yes"])
        .await
        .expect_code(0)
        .stdout_has(&[&format!("run {question} is queued")]);

    let drop = scratch.write("drop.json", &durable_drop_table("drop the stale table"));
    let paused = rein_on(&url, &["run", drop.to_str().unwrap()]).await;
    paused.expect_code(3);
    let approval = run_id_of(&paused);
    rein_on(
        &url,
        &["approve", &approval, "--reason", "stale", "--by", "alice"],
    )
    .await
    .expect_code(0)
    .stdout_has(&[&format!("run {approval} is queued")]);
    // A second verdict is refused: the run waits for none now.
    rein_on(
        &url,
        &["approve", &approval, "--reason", "again", "--by", "alice"],
    )
    .await
    .expect_code(2);
    // Recorded, queued, and not driven: no tool ran on this machine.
    for id in [&question, &approval] {
        let queued: i64 = db.query_one(QUEUED, &[id]).await.unwrap().get(0);
        assert_eq!(queued, 1);
        let done: i64 = db
            .query_one(&entries_of("run_completed"), &[id])
            .await
            .unwrap()
            .get(0);
        assert_eq!(done, 0, "run {id} was driven by the process that answered");
    }
    let granted_tool_runs: i64 = db
        .query_one(&entries_of("tool_result"), &[&approval])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        granted_tool_runs, 0,
        "the approved call ran where it was approved"
    );

    let worker = start_worker(&url, "after-verdicts");
    until_count(&db, &entries_of("run_completed"), &question, 1).await;
    until_count(&db, &entries_of("run_completed"), &approval, 1).await;
    stop_worker(worker).await.expect_code(0);
    rein_on(&url, &["ledger", "show", &approval])
        .await
        .expect_code(0)
        .stdout_has(&["granted", "alice"]);
}

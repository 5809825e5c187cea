//! Driving runs on a `PostgreSQL` store (`--store`, or `REIN_STORE`) as on a data
//! directory: `rein run` stores the scenario with the run (never a secret), and `rein
//! resume`, `approve`, `narrow` and `replay` rebuild the run's engine from it, under the
//! run's lease (resume and approve only record and queue the run for a worker); `rein submit` queues runs and `rein worker` drives them and stops cleanly
//! on SIGTERM. Each test has a database of its own on the test cluster (`make pg-start`, or
//! `REIN_TEST_PG_URL`; docs/POSTGRES.md).

mod support;

use std::path::Path;
use std::process::Stdio;

use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::json;
use support::pg::{
    cluster_tls_url, entries_of, fresh, on_database, rein_on, run_id_of, start_worker, stop_worker,
    until_count,
};
use support::{Outcome, Scratch, durable_drop_table, rein};

#[tokio::test(flavor = "multi_thread")]
async fn a_run_asks_is_narrowed_resumed_and_replayed_from_the_store() {
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    let file = scratch.scenario("ask-human.json");
    let asked = rein_on(&url, &["run", file.to_str().unwrap()]).await;
    asked
        .expect_code(3)
        .stdout_has(&["paused", "rein resume", "--store URL"]);
    let id = run_id_of(&asked);
    let stored: i64 = db
        .query_one(
            "SELECT count(*) FROM rein_run_configs WHERE run_id = $1",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 1, "the scenario is stored with the run");
    // Nothing was left leased: the next command takes the run at once.
    let narrowed = rein_on(
        &url,
        &["narrow", &id, "--reason", "wind down", "--max-steps", "15"],
    )
    .await;
    narrowed
        .expect_code(0)
        .stdout_has(&["policy narrowed ✓", "--store URL"]);

    // The answer is recorded and the run queued; a worker drives it to its end.
    let resumed = rein_on(&url, &["resume", &id, "--input", "yes"]).await;
    resumed
        .expect_code(0)
        .stdout_has(&[&format!("run {id} is queued")]);
    let worker = start_worker(&url, "after-answer");
    until_count(&db, &entries_of("run_completed"), &id, 1).await;
    stop_worker(worker).await.expect_code(0);
    rein_on(&url, &["replay", &id]).await.expect_code(0);
    rein_on(&url, &["ledger", "verify", &id])
        .await
        .expect_code(0);
    rein_on(&url, &["resume", &id])
        .await
        .expect_code(2)
        .stderr_has(&["finished"]);

    // A run held by another process is not driven twice: its lease is refused.
    db.execute(
        "INSERT INTO rein_leases (run_id, owner, fencing_token, expires_at)
         VALUES ($1, 'elsewhere', 1, now() + interval '1 hour')
         ON CONFLICT (run_id) DO UPDATE SET owner = 'elsewhere', expires_at = now() + interval '1 hour'",
        &[&id],
    )
    .await
    .unwrap();
    rein_on(
        &url,
        &["narrow", &id, "--reason", "again", "--max-steps", "14"],
    )
    .await
    .expect_code(1)
    .stderr_has(&["is leased to elsewhere", "nothing was done"]);
    rein_on(&url, &["resume", "no-such-run"])
        .await
        .expect_code(2)
        .stderr_has(&["no run no-such-run in the store"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_durable_approval_is_given_from_another_process_on_the_store() {
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    let file = scratch.write("drop.json", &durable_drop_table("drop the stale table"));
    let paused = rein_on(&url, &["run", file.to_str().unwrap()]).await;
    paused
        .expect_code(3)
        .stdout_has(&["approval", "rein approve", "--store URL"]);
    let id = run_id_of(&paused);
    // The verdict is recorded and the run queued; a worker runs the granted call.
    rein_on(
        &url,
        &["approve", &id, "--reason", "stale", "--by", "alice"],
    )
    .await
    .expect_code(0)
    .stdout_has(&[&format!("run {id} is queued")]);
    let worker = start_worker(&url, "after-verdict");
    until_count(&db, &entries_of("run_completed"), &id, 1).await;
    stop_worker(worker).await.expect_code(0);
    rein_on(
        &url,
        &["approve", &id, "--reason", "again", "--by", "alice"],
    )
    .await
    .expect_code(2);
    rein_on(&url, &["ledger", "show", &id])
        .await
        .expect_code(0)
        .stdout_has(&["granted", "alice"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scenario_stored_with_a_run_holds_no_key_or_header_value() {
    let server = FakeServer::start([Reply::openai_sse(
        "",
        &[Call::new("fail", &json!({"reason": "checked"}))],
        (90, 10),
        5,
    )])
    .await
    .unwrap();
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    let text = json!({
        "goal": "look at nothing",
        "planner": {"llm": {"provider": {
            "api": "open_ai", "base_url": server.base_url(), "model": "fake", "retries": 0, "stream": true,
            "api_key_env": "REIN_TEST_STORE_KEY",
            "extra_headers": [["api-key", "s3cret-literal-header"]]
        }}}
    })
    .to_string();
    let file = scratch.write("llm.json", &text);
    let store = url.clone();
    let out = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .arg("run")
                .arg(file)
                .env("REIN_STORE", store)
                .env("REIN_TEST_STORE_KEY", "s3cret-env-key")
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    out.stdout_has(&["checked"]);
    let rows = db
        .query(
            "SELECT config || coalesce(source, '') FROM rein_run_configs
             UNION ALL SELECT convert_from(line, 'UTF8') FROM rein_ledger
             UNION ALL SELECT snapshot FROM rein_runs",
            &[],
        )
        .await
        .unwrap();
    assert!(rows.len() > 2);
    let stored: String = rows.iter().map(|r| r.get::<_, String>(0)).collect();
    assert!(
        stored.contains("REIN_TEST_STORE_KEY"),
        "the variable's name is kept"
    );
    assert!(stored.contains(r#"{"redacted":true}"#) || stored.contains(r#""redacted": true"#));
    assert!(!stored.contains("s3cret"), "a secret reached the store");
}

#[tokio::test(flavor = "multi_thread")]
async fn submitted_runs_are_driven_by_a_worker_that_stops_cleanly_on_sigterm() {
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    let file = scratch.scenario("happy-path.json");
    let mut ids = Vec::new();
    for _ in 0..3 {
        let out = rein_on(&url, &["submit", file.to_str().unwrap()]).await;
        out.expect_code(0).stderr_has(&["queued run"]);
        ids.push(out.stdout.trim().to_owned());
    }
    let queued: i64 = db
        .query_one("SELECT count(*) FROM rein_queue", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(queued, 3);

    let worker = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .args([
            "worker",
            "--poll",
            "0.05",
            "--concurrency",
            "2",
            "--name",
            "test-worker",
        ])
        .env("REIN_STORE", &url)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        let left: i64 = db
            .query_one("SELECT count(*) FROM rein_queue", &[])
            .await
            .unwrap()
            .get(0);
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = worker.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = tokio::task::spawn_blocking(move || worker.wait_with_output().unwrap())
        .await
        .unwrap();
    let out = Outcome::of(&output);
    out.expect_code(0).stderr_has(&[
        "worker test-worker serving the queue",
        "stopping: no new runs are claimed",
        "3 runs claimed, 3 completed",
        &format!("run {} (lease token 1): completed", ids[0]),
    ]);
    for id in &ids {
        rein_on(&url, &["ledger", "verify", id])
            .await
            .expect_code(0);
    }
    rein_on(&url, &["runs", "list"])
        .await
        .expect_code(0)
        .stdout_has(&["COMPLETED"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn submit_and_worker_need_a_store() {
    let scratch = Scratch::new();
    let file = scratch.scenario("happy-path.json");
    let out = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .arg("submit")
                .arg(file)
                .env_remove("REIN_STORE")
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    out.expect_code(2).stderr_has(&["--store postgres://"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_a_worker_cannot_rebuild_is_named_and_left_for_another_worker() {
    let (url, db) = fresh().await;
    let scratch = Scratch::new();
    // A literal header value is never stored: a worker reads it again from the original
    // file, which is gone by the time the worker claims the run.
    let text = json!({
        "goal": "needs its header",
        "planner": {"llm": {"provider": {
            "api": "open_ai", "base_url": "http://127.0.0.1:9/v1", "model": "fake",
            "extra_headers": [["api-key", "s3cret-literal-header"]]
        }}}
    })
    .to_string();
    let file = scratch.write("gone.json", &text);
    let out = rein_on(&url, &["submit", file.to_str().unwrap()]).await;
    out.expect_code(0);
    let id = out.stdout.trim().to_owned();
    std::fs::remove_file(&file).unwrap();

    let worker = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["worker", "--poll", "0.05", "--name", "no-header"])
        .env("REIN_STORE", &url)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        let leased: i64 = db
            .query_one(
                "SELECT count(*) FROM rein_leases WHERE run_id = $1 AND owner = 'no-header'",
                &[&id],
            )
            .await
            .unwrap()
            .get(0);
        if leased == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let stopped = stop_worker(worker).await;
    stopped.expect_code(0).stderr_has(&[
        &format!("run {id} (lease token 1): cannot be driven here"),
        "gone.json: cannot read the scenario: no such file",
        "left leased until its lease expires",
    ]);
    // Still queued, still leased (until it expires) for a worker that has the file.
    let queued: i64 = db
        .query_one("SELECT count(*) FROM rein_queue WHERE run_id = $1", &[&id])
        .await
        .unwrap()
        .get(0);
    assert_eq!(queued, 1);
    assert!(!stopped.stderr.contains("s3cret"));
}

/// A fixture that counts its executions, in a scenario with or without a workspace.
fn counting(workspace: Option<&Path>) -> String {
    let mut scenario = json!({
        "goal": "charge once",
        "approver": "auto",
        "tools": [{
            "fixture": "charge",
            "annotations": {"risk_level": "low"},
            "behavior": {"output": {"charged": true}},
            "count_file": "counts/charge.log"
        }],
        "planner": {"scripted": [
            {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "go"}},
            {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "go"}},
            {"expect": "decide", "decision": {"type": "transition", "to": "act", "reason": "charge"}},
            {"expect": "act", "decision": {"type": "call_tool", "tool": "charge", "input": {"n": 1}, "reason": "charge"}},
            {"expect": "act", "decision": {"type": "transition", "to": "validate", "reason": "check"}},
            {"expect": "validate", "decision": {"type": "finish", "summary": "charged", "result": {}}}
        ]}
    });
    if let Some(dir) = workspace {
        scenario["workspace"] = json!(dir);
    }
    scenario.to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fixture_counts_into_the_workspace_on_a_store_and_is_refused_without_one() {
    let (url, _db) = fresh().await;
    let scratch = Scratch::new();
    let workspace = scratch.dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    // A store has no data directory: the count goes into the workspace, stored with the run
    // so that every worker counts in the same place.
    let file = scratch.write("counted.json", &counting(Some(&workspace)));
    rein_on(&url, &["run", file.to_str().unwrap()])
        .await
        .expect_code(0);
    let counted = std::fs::read_to_string(workspace.join("counts/charge.log")).unwrap();
    assert_eq!(counted.lines().count(), 1, "{counted}");
    assert!(counted.contains(r#""tool":"charge""#), "{counted}");

    // Without a workspace the count would go nowhere: refused before anything runs.
    let file = scratch.write("uncounted.json", &counting(None));
    for command in ["run", "submit"] {
        rein_on(&url, &[command, file.to_str().unwrap()])
            .await
            .expect_code(2)
            .stderr_has(&["tools[0].count_file", "--workspace DIR"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_are_listed_over_tls_with_the_servers_certificate_and_name_verified() {
    let (url, _db) = fresh().await;
    let scratch = Scratch::new();
    let file = scratch.scenario("happy-path.json");
    let done = rein_on(&url, &["run", file.to_str().unwrap()]).await;
    done.expect_code(0);
    let id = run_id_of(&done);
    // The same database over TCP, `sslmode=verify-full` and the cluster's own CA as
    // `sslrootcert` (the cluster refuses TCP without TLS).
    let (_, name) = url.rsplit_once('/').unwrap();
    let tls = on_database(&cluster_tls_url(), name);
    assert!(tls.contains("sslmode=verify-full&sslrootcert="), "{tls}");
    let listed = rein_with(&["runs", "list", "--store", &tls]).await;
    listed.expect_code(0).stdout_has(&[&id]);

    // The certificate names localhost, not 127.0.0.1: refused, saying what to change.
    let password = tls
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password.to_owned())
        .unwrap();
    let by_address = tls.replace("@localhost:", "@127.0.0.1:");
    let refused = rein_with(&["runs", "list", "--store", &by_address]).await;
    refused.expect_code(1).stderr_has(&[
        "cannot connect to PostgreSQL at",
        "not valid for name",
        "sslmode=verify-ca",
    ]);
    let unknown = tls.replace("sslmode=verify-full", "sslmode=verify_full");
    let bad = rein_with(&["runs", "list", "--store", &unknown]).await;
    bad.expect_code(2)
        .stderr_has(&["the store url's sslmode cannot be used"]);
    for out in [&listed, &refused, &bad] {
        assert!(!format!("{}{}", out.stdout, out.stderr).contains(&password));
    }
}

/// `rein ARGS`, off the async runtime.
async fn rein_with(args: &[&str]) -> Outcome {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || Outcome::of(&rein().args(&args).output().unwrap()))
        .await
        .unwrap()
}

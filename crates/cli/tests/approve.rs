//! `rein approve`: a scenario under a durable approval policy pauses for approval (exit 3),
//! `rein runs list` shows what it waits for, and a second `rein` process gives the verdict;
//! the run then completes (or, denied, fails) and its ledger verifies. Bad input exits 2.

mod support;

use support::{Outcome, Scratch, rein};

/// The durable-approval scenario, with the goal `rein approve`'s tests use.
fn scenario() -> String {
    support::durable_drop_table("Drop the stale orders table")
}

/// `rein ARGS… --data-dir DATA` in `scratch`.
fn rein_in(scratch: &Scratch, args: &[&str]) -> Outcome {
    let output = rein()
        .args(args)
        .arg("--data-dir")
        .arg(scratch.data())
        .output()
        .unwrap();
    Outcome::of(&output)
}

/// Runs the durable scenario until it pauses for approval; returns its run id.
fn paused(scratch: &Scratch) -> String {
    let before = scratch.run_ids();
    scratch.write("durable.json", &scenario());
    scratch
        .run("durable.json", &[])
        .expect_code(3)
        .stdout_has(&[
            "approval   db.drop_table (risk critical",
            "approve    rein approve ",
        ]);
    scratch.new_run_id(&before)
}

#[test]
fn a_second_rein_process_approves_and_the_run_completes_and_verifies() {
    let scratch = Scratch::new();
    let id = paused(&scratch);
    let listed = rein_in(&scratch, &["runs", "list"]);
    listed
        .expect_code(0)
        .stdout_has(&[&id, "WAITING-APPROVAL", "db.drop_table (risk critical"]);
    // The longest status still leaves the next column under its heading.
    let header = listed.stdout.lines().next().expect("a header");
    let row = listed
        .stdout
        .lines()
        .find(|l| l.contains(&id))
        .expect("the run's row");
    let state = header.find("STATE").expect("a STATE column");
    assert!(
        row[..state].ends_with("  ") && !row[state..].starts_with(' '),
        "the STATE column is not aligned:\n{header}\n{row}"
    );
    // Resuming without a verdict is refused: still paused, and how to approve is shown.
    rein_in(&scratch, &["resume", &id])
        .expect_code(3)
        .stderr_has(&["waiting for approval", "rein approve"]);

    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    let pending: serde_json::Value = ledger
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|entry| entry["event"]["type"] == "approval_pending")
        .expect("an approval_pending entry");
    let hash = pending["event"]["pending"]["input_hash"]
        .as_str()
        .expect("a hash")
        .to_owned();
    rein_in(
        &scratch,
        &[
            "approve",
            &id,
            "--reason",
            "ticket 42",
            "--by",
            "alice",
            "--input-hash",
            &hash,
        ],
    )
    .expect_code(0)
    .stdout_has(&["completed ✓", "table dropped"]);
    rein_in(&scratch, &["ledger", "verify", &id]).expect_code(0);
    rein_in(&scratch, &["ledger", "show", &id])
        .expect_code(0)
        .stdout_has(&[
            "paused, waiting for approval of db.drop_table (risk critical)",
            "approval granted for db.drop_table by alice: ticket 42",
        ]);
    let listed = rein_in(&scratch, &["runs", "list"]);
    listed.expect_code(0).stdout_has(&["completed"]);
    assert!(!listed.stdout.contains("WAITING-APPROVAL"));

    // A second verdict: the run waits for nothing any more.
    rein_in(
        &scratch,
        &["approve", &id, "--reason", "again", "--by", "alice"],
    )
    .expect_code(2)
    .stderr_has(&["completed"]);
}

#[test]
fn an_approval_after_the_timeout_comes_too_late_and_the_run_fails() {
    let scratch = Scratch::new();
    // A timeout of 1 ms has passed by the time a second process looks.
    scratch.write(
        "durable.json",
        &scenario().replacen(r#""timeout_ms": 86400000"#, r#""timeout_ms": 1"#, 1),
    );
    scratch.run("durable.json", &[]).expect_code(3);
    let id = scratch.new_run_id(&[]);
    let late = rein_in(
        &scratch,
        &["approve", &id, "--reason", "ok", "--by", "alice"],
    );
    late.expect_code(1).stderr_has(&[
        "the approval came too late",
        &format!("run {id} waited for a verdict on `db.drop_table`"),
        "the run failed because of it",
        "nothing was approved",
    ]);
    assert!(
        !late.stderr.contains("waits for no approval"),
        "{}",
        late.stderr
    );
    // Asked again, the ledger still says why.
    rein_in(
        &scratch,
        &["approve", &id, "--reason", "ok", "--by", "alice"],
    )
    .expect_code(1)
    .stderr_has(&["the approval came too late", "denied as timed out at entry"]);
    rein_in(&scratch, &["ledger", "show", &id])
        .expect_code(0)
        .stdout_has(&["approval DENIED for db.drop_table by engine: no verdict within 1 ms"]);
}

#[test]
fn a_denial_fails_the_run() {
    let scratch = Scratch::new();
    let id = paused(&scratch);
    rein_in(
        &scratch,
        &[
            "approve", &id, "--deny", "--reason", "frozen", "--by", "bob",
        ],
    )
    .expect_code(1)
    .stdout_has(&["failed ✗", "frozen"]);
    rein_in(&scratch, &["ledger", "verify", &id]).expect_code(0);
}

#[test]
fn bad_input_to_approve_exits_2_and_records_nothing() {
    let scratch = Scratch::new();
    let id = paused(&scratch);
    let ledger = std::fs::read(scratch.ledger(&id)).unwrap();
    rein_in(
        &scratch,
        &["approve", "no-such-run", "--reason", "x", "--by", "alice"],
    )
    .expect_code(2)
    .stderr_has(&["no run no-such-run"]);
    rein_in(&scratch, &["approve", &id, "--reason", "x", "--by", " "])
        .expect_code(2)
        .stderr_has(&["--by is empty"]);
    rein_in(&scratch, &["approve", &id, "--by", "alice"]).expect_code(2);
    rein_in(
        &scratch,
        &[
            "approve",
            &id,
            "--reason",
            "x",
            "--by",
            "alice",
            "--input-hash",
            &"0".repeat(64),
        ],
    )
    .expect_code(2)
    .stderr_has(&["not the one you looked at", "nothing was recorded"]);
    assert_eq!(std::fs::read(scratch.ledger(&id)).unwrap(), ledger);
}

#[test]
fn validate_warns_that_a_durable_policy_never_asks_the_scenarios_approver() {
    let scratch = Scratch::new();
    let with_approver =
        scenario().replacen(r#""tools": ["#, r#""approver": "auto", "tools": ["#, 1);
    let file = scratch.write("durable-approver.json", &with_approver);
    let output = rein().arg("validate").arg(file).output().unwrap();
    Outcome::of(&output)
        .expect_code(0)
        .stderr_has(&["policies.approvals.mode", "never asked"]);
}

#[test]
fn json_output_says_how_to_approve_on_stderr() {
    let scratch = Scratch::new();
    scratch.write("durable.json", &scenario());
    let outcome = scratch.run("durable.json", &["--json"]);
    outcome
        .expect_code(3)
        .stderr_has(&["waiting for approval of `db.drop_table`", "rein approve "]);
    let run: serde_json::Value = serde_json::from_str(&outcome.stdout).unwrap();
    assert_eq!(run["status"], "paused");
    assert_eq!(run["pending_approval"]["tool"], "db.drop_table");
}

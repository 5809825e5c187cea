//! Ledgers on disk: verify names the first broken entry (exit 4), show prints a timeline,
//! and every way of pointing at the wrong thing gets a clear message and exit code.

mod support;

use support::{Outcome, Scratch, rein};

fn rein_in(scratch: &Scratch, args: &[&str]) -> Outcome {
    Outcome::of(
        &rein()
            .args(args)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
}

/// A scratch directory with one completed happy-path run; its id.
fn completed_run() -> (Scratch, String) {
    let scratch = Scratch::new();
    scratch.run("happy-path.json", &[]).expect_code(0);
    let id = scratch.new_run_id(&[]);
    (scratch, id)
}

#[test]
fn an_untouched_ledger_verifies_by_id_and_by_file() {
    let (scratch, id) = completed_run();
    rein_in(&scratch, &["ledger", "verify", &id])
        .expect_code(0)
        .stdout_has(&[
            "30 entries",
            "verified ✓",
            "reaches entry 30, the head run snapshot",
        ]);
    let file = scratch.ledger(&id);
    // By file, in its data directory: checked against the run's snapshot too.
    rein_in(&scratch, &["ledger", "verify", file.to_str().unwrap()])
        .expect_code(0)
        .stdout_has(&["verified ✓", "reaches entry 30"]);
    // By file, without --data-dir: DATA/ledgers/ID.jsonl is checked in DATA, its snapshot
    // included (issue 10: the data directory is inferred from the path).
    let outcome = Outcome::of(
        &rein()
            .args(["ledger", "verify"])
            .arg(&file)
            .output()
            .unwrap(),
    );
    outcome
        .expect_code(0)
        .stdout_has(&[&id, "verified ✓", "reaches entry 30"]);
    // A copy outside any data directory: the chain alone, and said so.
    let copy = scratch.dir.path().join("copy.jsonl");
    std::fs::copy(&file, &copy).unwrap();
    let outcome = Outcome::of(
        &rein()
            .args(["ledger", "verify"])
            .arg(&copy)
            .output()
            .unwrap(),
    );
    outcome.expect_code(0).stdout_has(&[
        &id,
        "verified ✓",
        "entries cut from the end of the chain cannot be detected",
    ]);
}

/// Issue 10 item 7: a deleted or emptied ledger whose run snapshot is there falls short of
/// the snapshot: exit 4, named as such, by id, by file, on resume, and in `runs list`.
#[test]
fn a_deleted_or_emptied_ledger_falls_short_of_its_snapshot() {
    for (how, missing) in [("deleted", true), ("emptied", false)] {
        let (scratch, id) = completed_run();
        let file = scratch.ledger(&id);
        if missing {
            std::fs::remove_file(&file).unwrap();
        } else {
            std::fs::write(&file, b"").unwrap();
        }
        let what = if missing { "is missing" } else { "is empty" };
        for target in [id.as_str(), file.to_str().unwrap()] {
            for command in ["verify", "show"] {
                rein_in(&scratch, &["ledger", command, target])
                    .expect_code(4)
                    .stderr_has(&[
                        "falls short of its run snapshot",
                        "was saved after ledger entry 30",
                        what,
                    ]);
            }
        }
        rein_in(&scratch, &["inspect", &id]).expect_code(4);
        rein_in(&scratch, &["resume", &id])
            .expect_code(4)
            .stderr_has(&["falls short of its run snapshot"]);
        let listed = rein_in(&scratch, &["runs", "list"]);
        listed.expect_code(0).stdout_has(&[&id, "BROKEN", what]);
        assert!(
            scratch.ledger(&id).exists() != missing,
            "{how}: nothing was written"
        );
    }
}

/// Keeps the first `keep` lines of the ledger at `path`; returns the bytes left.
fn cut_lines(path: &std::path::Path, keep: usize) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let kept: Vec<u8> = bytes
        .split_inclusive(|&b| b == b'\n')
        .take(keep)
        .flatten()
        .copied()
        .collect();
    std::fs::write(path, &kept).unwrap();
    kept
}

#[test]
fn a_ledger_cut_at_a_line_boundary_fails_against_its_run_snapshot() {
    let (scratch, id) = completed_run();
    let path = scratch.ledger(&id);
    let cut = cut_lines(&path, 28);
    // The 28 lines left are a valid chain; only the run's snapshot shows what is missing.
    for target in [id.clone(), path.to_str().unwrap().to_owned()] {
        rein_in(&scratch, &["ledger", "verify", &target])
            .expect_code(4)
            .stderr_has(&[
                "failed verification ✗",
                &format!("{id}.json was saved after ledger entry 30 (hash "),
                "but the ledger ends at entry 28: its last entries were cut",
                "restore the ledger file from a backup",
            ]);
    }
    rein_in(&scratch, &["ledger", "show", &id])
        .expect_code(4)
        .stderr_has(&["ends at entry 28"]);
    rein_in(&scratch, &["inspect", &id])
        .expect_code(4)
        .stderr_has(&["ends at entry 28"]);
    rein_in(&scratch, &["runs", "list"])
        .expect_code(0)
        .stdout_has(&[&id, "BROKEN"]);
    assert_eq!(std::fs::read(&path).unwrap(), cut, "nothing may be written");
}

#[test]
fn resuming_a_run_whose_ledger_was_cut_behind_its_snapshot_is_refused() {
    let scratch = Scratch::new();
    scratch.run("ask-human.json", &[]).expect_code(3);
    let id = scratch.new_run_id(&[]);
    let path = scratch.ledger(&id);
    let lines = std::fs::read(&path)
        .unwrap()
        .split_inclusive(|&b| b == b'\n')
        .count();
    let cut = cut_lines(&path, lines - 1);
    rein_in(&scratch, &["resume", &id, "--input", "yes"])
        .expect_code(4)
        .stderr_has(&[&format!(
            "but the ledger ends at entry {}: its last entries were cut",
            lines - 1
        )]);
    assert_eq!(std::fs::read(&path).unwrap(), cut, "nothing may be written");
}

#[test]
fn a_tampered_ledger_fails_verification_naming_the_entry() {
    let (scratch, id) = completed_run();
    let path = scratch.ledger(&id);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let n = lines
        .iter()
        .position(|l| l.contains("\"path\":\"notes.txt\"") && l.contains("\"type\":\"decision\""))
        .unwrap();
    lines[n] = lines[n].replace("notes.txt", "secret.txt");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let seq = n + 1;
    rein_in(&scratch, &["ledger", "verify", &id])
        .expect_code(4)
        .stderr_has(&[&format!("entry {seq} was edited after it was written")]);
    // `show` still shows what it can, and says it is broken.
    rein_in(&scratch, &["ledger", "show", &id])
        .expect_code(4)
        .stdout_has(&["secret.txt"])
        .stderr_has(&[&format!("entry {seq} was edited")]);
    // `inspect` refuses to draw a tampered run.
    rein_in(&scratch, &["inspect", &id]).expect_code(4);

    // A dropped entry is named too.
    lines.remove(n);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    rein_in(&scratch, &["ledger", "verify", &id])
        .expect_code(4)
        .stderr_has(&["failed verification", &format!("entry {seq}")]);

    // An entry that is no longer JSON.
    lines[3] = "{\"seq\": 4, garbage".to_owned();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    rein_in(&scratch, &["ledger", "verify", &id])
        .expect_code(4)
        .stderr_has(&["entry 4 (line 4) is not a readable ledger entry"]);
}

#[test]
fn resuming_a_run_whose_ledger_was_tampered_with_is_refused() {
    let scratch = Scratch::new();
    scratch.run("ask-human.json", &[]).expect_code(3);
    let id = scratch.new_run_id(&[]);
    let path = scratch.ledger(&id);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen("Publish the release notes", "Delete the release notes", 1),
    )
    .unwrap();
    let before = std::fs::read(&path).unwrap();
    rein_in(&scratch, &["resume", &id, "--input", "yes"])
        .expect_code(4)
        .stderr_has(&["entry 1 was edited"]);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "nothing may be written"
    );
}

#[test]
fn a_torn_final_line_is_reported_but_not_a_failure() {
    let (scratch, id) = completed_run();
    let path = scratch.ledger(&id);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"seq\":31,\"at\":");
    std::fs::write(&path, bytes).unwrap();
    rein_in(&scratch, &["ledger", "verify", &id])
        .expect_code(0)
        .stdout_has(&["line 31", "torn final write", "verified ✓"]);
}

/// A last line whose newline never reached the disk is torn even when its bytes happen to
/// parse: the store cuts it when the run is opened, so the CLI does not count it either. The
/// run's snapshot was saved after that entry, so the ledger now falls short of it.
#[test]
fn a_final_line_without_its_newline_is_torn_even_if_it_parses() {
    let (scratch, id) = completed_run();
    let path = scratch.ledger(&id);
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.pop(), Some(b'\n'));
    std::fs::write(&path, bytes).unwrap();
    rein_in(&scratch, &["ledger", "verify", &id])
        .expect_code(4)
        .stdout_has(&["line 30", "torn final write"])
        .stderr_has(&["saved after ledger entry 30", "the ledger ends at entry 29"]);
    let outside = scratch.dir.path().join("copy.jsonl");
    std::fs::copy(&path, &outside).unwrap();
    rein_in(&scratch, &["ledger", "verify", outside.to_str().unwrap()])
        .expect_code(0)
        .stdout_has(&["line 30", "torn final write", "verified ✓"]);
}

#[test]
fn show_prints_a_timeline_or_json() {
    let (scratch, id) = completed_run();
    rein_in(&scratch, &["ledger", "show", &id])
        .expect_code(0)
        .stdout_has(&[
            " seq      time  state     event",
            "   1   +0.000s  intake    run started: \"Summarise notes.txt into out/summary.md\"",
            "decision #2: call fs.read {\"path\":\"notes.txt\"} — read the notes",
            "approval granted for fs.write by auto",
            "budget tool_calls: 1/10",
            "completed: summary written to out/summary.md",
            "hash chain intact — verified ✓",
        ]);
    let outcome = rein_in(&scratch, &["ledger", "show", &id, "--json"]);
    outcome.expect_code(0);
    let entries: serde_json::Value = serde_json::from_str(&outcome.stdout).unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 30);
    assert_eq!(entries[0]["event"]["type"], "run_started");
}

#[test]
fn wrong_targets_get_clear_messages() {
    let (scratch, _id) = completed_run();
    let missing = "01234567-89ab-7def-8123-456789abcdef";
    for args in [
        vec!["ledger", "verify", missing],
        vec!["ledger", "show", missing],
        vec!["inspect", missing],
        vec!["resume", missing, "--input", "yes"],
    ] {
        rein_in(&scratch, &args).expect_code(2).stderr_has(&[
            &format!("no run {missing} in data directory"),
            "rein runs list",
        ]);
    }
    rein_in(&scratch, &["resume", "../etc/passwd"])
        .expect_code(2)
        .stderr_has(&["is not a run id"]);

    // A file that is not a ledger, and an empty one.
    let scenario = scratch.scenario("happy-path.json");
    let outcome = Outcome::of(
        &rein()
            .args(["ledger", "verify"])
            .arg(&scenario)
            .output()
            .unwrap(),
    );
    outcome
        .expect_code(2)
        .stderr_has(&["happy-path.json is not a rein ledger: line 1 is not a ledger entry"]);
    let empty = scratch.dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let outcome = Outcome::of(
        &rein()
            .args(["ledger", "show"])
            .arg(&empty)
            .output()
            .unwrap(),
    );
    outcome
        .expect_code(2)
        .stderr_has(&["is not a rein ledger: it is empty"]);
    let outcome = Outcome::of(
        &rein()
            .args(["ledger", "verify", "no/such/file.jsonl"])
            .output()
            .unwrap(),
    );
    outcome
        .expect_code(2)
        .stderr_has(&["no ledger file no/such/file.jsonl"]);
}

#[test]
fn a_data_directory_that_cannot_be_used_is_refused_before_anything_runs() {
    let scratch = Scratch::new();
    let file = scratch.dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    for (data, why) in [
        (file.clone(), "it is a file, not a directory".to_owned()),
        (
            file.join("below"),
            format!("{} is a file, not a directory", file.display()),
        ),
    ] {
        let outcome = Outcome::of(
            &rein()
                .arg("run")
                .arg(scratch.scenario("happy-path.json"))
                .arg("--data-dir")
                .arg(&data)
                .output()
                .unwrap(),
        );
        outcome
            .expect_code(2)
            .stderr_has(&["cannot use data directory", &why]);
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
    assert!(
        !scratch.dir.path().join("scenarios/workspace/out").exists(),
        "the scenario must not have run"
    );

    // Commands that only read need the directory to exist, and create nothing.
    let nowhere = scratch.dir.path().join("nowhere");
    for args in [
        vec!["runs", "list"],
        vec!["ledger", "verify", "some-run"],
        vec!["resume", "some-run"],
    ] {
        let outcome = Outcome::of(
            &rein()
                .args(&args)
                .arg("--data-dir")
                .arg(&nowhere)
                .output()
                .unwrap(),
        );
        outcome.expect_code(2).stderr_has(&["no data directory at"]);
    }
    assert!(!nowhere.exists());
}

//! `rein runs list` through the run index (only runs whose files changed are read; missing,
//! stale or corrupt snapshots reported, never trusted; paged and filtered by status) and
//! `rein runs prune` (finished runs only, whole trees, unreferenced artifacts, the index
//! kept consistent).

mod support;

use std::path::Path;
use std::time::{Duration, SystemTime};

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

/// Runs example `name` (expecting `code`) and returns the new run's id.
fn run(scratch: &Scratch, name: &str, code: i32) -> String {
    let before = scratch.run_ids();
    scratch.run(name, &[]).expect_code(code);
    scratch.new_run_id(&before)
}

fn list(scratch: &Scratch, extra: &[&str]) -> Outcome {
    let mut args = vec!["runs", "list"];
    args.extend_from_slice(extra);
    let outcome = rein_in(scratch, &args);
    outcome.expect_code(0);
    outcome
}

/// The listing's line for run `id`.
fn line_of<'a>(outcome: &'a Outcome, id: &str) -> &'a str {
    outcome
        .stdout
        .lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("{id} is not listed:\n{}", outcome.stdout))
}

fn snapshot(scratch: &Scratch, id: &str) -> std::path::PathBuf {
    scratch.data().join("runs").join(format!("{id}.json"))
}

fn index(scratch: &Scratch) -> String {
    std::fs::read_to_string(scratch.data().join("index.jsonl")).unwrap()
}

/// Overwrites the file at `path` with `bytes` of the same length, in place (the same
/// inode), and puts its modification time back: a change no stamp can see.
fn overwrite_unseen(path: &Path, bytes: &[u8]) {
    let meta = std::fs::metadata(path).unwrap();
    assert_eq!(meta.len(), bytes.len() as u64);
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    std::io::Write::write_all(&mut &file, bytes).unwrap();
    file.set_modified(meta.modified().unwrap()).unwrap();
}

#[test]
fn a_listing_reads_only_the_runs_whose_files_changed() {
    let scratch = Scratch::new();
    let a = run(&scratch, "happy-path.json", 0);
    let b = run(&scratch, "happy-path.json", 0);
    let first = list(&scratch, &[]);
    assert!(line_of(&first, &a).contains("completed"));
    let stored = index(&scratch);
    assert_eq!(
        stored.lines().count(),
        3,
        "a header and one line per run: {stored}"
    );
    // Run a's ledger garbled where no stamp sees it: the listing still shows what the index
    // holds, so it did not read the ledger.
    let ledger = scratch.ledger(&a);
    let length = std::fs::metadata(&ledger).unwrap().len() as usize;
    overwrite_unseen(&ledger, &vec![b'x'; length]);
    let unread = list(&scratch, &[]);
    assert!(
        line_of(&unread, &a).contains("completed"),
        "{}",
        unread.stdout
    );
    assert_eq!(index(&scratch), stored, "nothing changed, nothing written");
    // Any real change moves the stamp: the run is read again, and its ledger is now not one.
    std::fs::File::options()
        .write(true)
        .open(&ledger)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    let reread = list(&scratch, &[]);
    assert!(
        line_of(&reread, &a).contains("unreadable"),
        "{}",
        reread.stdout
    );
    assert!(line_of(&reread, &b).contains("completed"));
}

#[test]
fn a_run_that_goes_on_after_a_listing_is_listed_as_it_is_now() {
    let scratch = Scratch::new();
    let id = run(&scratch, "ask-human.json", 3);
    assert!(line_of(&list(&scratch, &[]), &id).contains("paused"));
    rein_in(&scratch, &["resume", &id, "--input", "yes"]).expect_code(0);
    assert!(line_of(&list(&scratch, &[]), &id).contains("completed"));
}

#[test]
fn a_missing_or_corrupt_index_is_rebuilt_from_the_ledgers() {
    let scratch = Scratch::new();
    let a = run(&scratch, "happy-path.json", 0);
    let b = run(&scratch, "ask-human.json", 3);
    let expected = list(&scratch, &[]).stdout;
    for garbage in [
        &b""[..],
        b"{\"rein_run_index\": 99}\n",
        b"not json\n",
        b"{\"rein_run_index\":1}\n{oops\n",
    ] {
        std::fs::write(scratch.data().join("index.jsonl"), garbage).unwrap();
        assert_eq!(list(&scratch, &[]).stdout, expected);
        assert!(index(&scratch).starts_with("{\"rein_run_index\":1}\n"));
    }
    std::fs::remove_file(scratch.data().join("index.jsonl")).unwrap();
    let rebuilt = list(&scratch, &[]);
    assert_eq!(rebuilt.stdout, expected);
    assert!(index(&scratch).contains(&a) && index(&scratch).contains(&b));
}

#[test]
fn snapshots_that_disagree_with_their_ledgers_are_reported_and_the_ledger_listed() {
    let scratch = Scratch::new();
    let missing = run(&scratch, "happy-path.json", 0);
    let corrupt = run(&scratch, "happy-path.json", 0);
    let behind = run(&scratch, "ask-human.json", 3);
    let fine = run(&scratch, "happy-path.json", 0);
    let clean = list(&scratch, &[]);
    assert!(!clean.stdout.contains("note:"), "{}", clean.stdout);

    std::fs::remove_file(snapshot(&scratch, &missing)).unwrap();
    std::fs::write(snapshot(&scratch, &corrupt), b"{").unwrap();
    // A snapshot a power cut left behind: saved after entry 2.
    let second: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(scratch.ledger(&behind))
            .unwrap()
            .lines()
            .nth(1)
            .unwrap(),
    )
    .unwrap();
    let path = snapshot(&scratch, &behind);
    let mut saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let last = saved["ledger_head"]["seq"].clone();
    saved["ledger_head"] = serde_json::json!({"seq": 2, "hash": second["hash"]});
    std::fs::write(&path, serde_json::to_vec(&saved).unwrap()).unwrap();

    let listed = list(&scratch, &[]);
    assert!(line_of(&listed, &missing).contains("completed"));
    assert!(line_of(&listed, &corrupt).contains("completed"));
    assert!(line_of(&listed, &behind).contains("paused"));
    assert!(line_of(&listed, &fine).contains("completed"));
    listed.stdout_has(&[
        &format!("note: run {missing}: its snapshot is missing; it is listed from its ledger"),
        &format!("note: run {corrupt}: its snapshot could not be read ("),
        &format!(
            "note: run {behind}: its snapshot is behind its ledger (saved after entry 2, the ledger ends at entry {last})"
        ),
    ]);
    assert!(!listed.stdout.contains(&format!("note: run {fine}")));
    // Resuming rebuilds the snapshot: the note goes.
    rein_in(&scratch, &["resume", &behind, "--input", "yes"]).expect_code(0);
    let after = list(&scratch, &[]);
    assert!(line_of(&after, &behind).contains("completed"));
    assert!(!after.stdout.contains(&format!("note: run {behind}")));
}

#[test]
fn listings_are_paged_and_filtered_by_status() {
    let scratch = Scratch::new();
    let a = run(&scratch, "happy-path.json", 0);
    let b = run(&scratch, "ask-human.json", 3);
    let c = run(&scratch, "happy-path.json", 0);
    let paused = list(&scratch, &["--status", "paused"]);
    line_of(&paused, &b);
    assert!(!paused.stdout.contains(&a) && !paused.stdout.contains(&c));
    let completed = list(&scratch, &["--status", "completed"]);
    line_of(&completed, &a);
    line_of(&completed, &c);
    assert!(!completed.stdout.contains(&b));
    list(&scratch, &["--status", "failed"]).stdout_has(&["no failed runs in", "(3 runs in all)"]);

    let page = list(&scratch, &["--limit", "1", "--offset", "1"]);
    line_of(&page, &b);
    assert!(!page.stdout.contains(&a) && !page.stdout.contains(&c));
    page.stdout_has(&["rows 2–2 of 3; the next page: --offset 2"]);
    let last = list(&scratch, &["--limit", "5", "--offset", "2"]);
    line_of(&last, &c);
    last.stdout_has(&["rows 3–3 of 3"]);
    assert!(!last.stdout.contains("next page"));

    rein_in(&scratch, &["runs", "list", "--status", "sleeping"])
        .expect_code(2)
        .stderr_has(&["invalid value 'sleeping'", "paused"]);
}

#[test]
fn concurrent_listings_leave_a_whole_index() {
    let scratch = Scratch::new();
    let ids: Vec<String> = (0..3)
        .map(|_| run(&scratch, "happy-path.json", 0))
        .collect();
    for _ in 0..3 {
        std::fs::remove_file(scratch.data().join("index.jsonl")).ok();
        let children: Vec<_> = (0..4)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
                    .args(["runs", "list", "--data-dir"])
                    .arg(scratch.data())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success());
            let stdout = String::from_utf8_lossy(&output.stdout);
            for id in &ids {
                assert!(stdout.contains(id.as_str()), "{stdout}");
            }
        }
        let stored = index(&scratch);
        assert_eq!(stored.lines().count(), 4, "{stored}");
    }
}

#[test]
fn prune_removes_old_finished_runs_and_never_a_paused_one() {
    let scratch = Scratch::new();
    let done = run(&scratch, "happy-path.json", 0);
    let paused = run(&scratch, "ask-human.json", 3);
    let failed = run(&scratch, "budget-exhausted.json", 1);
    list(&scratch, &[]);

    // Nothing is old enough yet.
    rein_in(&scratch, &["runs", "prune", "--older-than", "1d"])
        .expect_code(0)
        .stdout_has(&["nothing to prune", "no run ended more than 1d ago"]);
    // A dry run lists and removes nothing.
    rein_in(
        &scratch,
        &["runs", "prune", "--older-than", "0s", "--dry-run"],
    )
    .expect_code(0)
    .stdout_has(&[
        &format!("would remove run {done}"),
        &format!("would remove run {failed}"),
    ]);
    assert!(scratch.ledger(&done).is_file());

    // By status: the failed run only.
    let pruned = rein_in(
        &scratch,
        &["runs", "prune", "--older-than", "0s", "--status", "failed"],
    );
    pruned
        .expect_code(0)
        .stdout_has(&[&format!("removed run {failed}  failed"), "removed 1 runs"]);
    assert!(!pruned.stdout.contains(&done) && !pruned.stdout.contains(&paused));
    assert!(!scratch.ledger(&failed).exists());
    assert!(!snapshot(&scratch, &failed).exists());
    assert!(
        !scratch
            .data()
            .join("scenarios")
            .join(format!("{failed}.json"))
            .exists()
    );
    assert!(!index(&scratch).contains(&failed), "the index forgets it");

    // Then everything finished: the paused run stays, with its files.
    rein_in(&scratch, &["runs", "prune", "--older-than", "0s"])
        .expect_code(0)
        .stdout_has(&[&format!("removed run {done}  completed"), "1 runs kept"]);
    assert!(scratch.ledger(&paused).is_file() && snapshot(&scratch, &paused).is_file());
    let left = list(&scratch, &[]);
    line_of(&left, &paused);
    assert!(!left.stdout.contains(&done) && !left.stdout.contains(&failed));
    // The paused run still resumes.
    rein_in(&scratch, &["resume", &paused, "--input", "yes"]).expect_code(0);

    rein_in(&scratch, &["runs", "prune", "--older-than", "ten days"])
        .expect_code(2)
        .stderr_has(&["is not a duration", "30d"]);
}

/// A scenario whose tool's long output (`seq 1 COUNT`) is stored as an artifact, ending
/// with `LAST` (a finish, or a question that pauses the run).
const ARTIFACT_RUN: &str = r#"{
  "goal": "count",
  "workspace": "workspace",
  "approver": "auto",
  "tools": [{"builtin": "shell.run", "shell": {"allow": ["seq"], "output_cap": 50, "isolation": "none"}}],
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore"}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide"}},
    {"expect": "decide", "decision": {"type": "transition", "to": "act"}},
    {"expect": "act", "decision": {"type": "call_tool", "tool": "shell.run", "input": {"argv": ["seq", "1", "COUNT"]}}},
    {"expect": "act", "decision": {"type": "transition", "to": "validate"}},
    {"expect": "validate", "decision": LAST}
  ]}
}"#;

const FINISH: &str = r#"{"type": "finish", "summary": "counted"}"#;
const ASK: &str =
    r#"{"type": "ask_human", "question": "keep counting?", "options": ["yes", "no"]}"#;

fn artifact_files(scratch: &Scratch) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(shards) = std::fs::read_dir(scratch.data().join("artifacts")) else {
        return files;
    };
    for shard in shards {
        let shard = shard.unwrap().path();
        if shard.is_dir() {
            for file in std::fs::read_dir(&shard).unwrap() {
                files.push(file.unwrap().path());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn prune_removes_the_artifacts_only_pruned_runs_refer_to() {
    let scratch = Scratch::new();
    let counting = |count: u32, last: &str, code: i32| {
        let before = scratch.run_ids();
        let text = ARTIFACT_RUN
            .replace("COUNT", &count.to_string())
            .replace("LAST", last);
        let file = scratch.write(&format!("count-{count}-{code}.json"), &text);
        Outcome::of(
            &rein()
                .arg("run")
                .arg(file)
                .arg("--data-dir")
                .arg(scratch.data())
                .output()
                .unwrap(),
        )
        .expect_code(code);
        scratch.new_run_id(&before)
    };
    let shared = counting(500, FINISH, 0);
    let own = counting(900, FINISH, 0);
    // A paused run holding the same output as the first: one artifact, two runs.
    let paused = counting(500, ASK, 3);
    let stored = artifact_files(&scratch);
    assert_eq!(
        stored.len(),
        4,
        "two artifacts, content and reference each: {stored:?}"
    );

    let pruned = rein_in(&scratch, &["runs", "prune", "--older-than", "0s"]);
    pruned.expect_code(0).stdout_has(&[
        &format!("removed run {shared}"),
        &format!("removed run {own}"),
        "removed 2 runs (2 finished trees) and 1 artifacts no remaining run refers to; 1 runs kept",
    ]);
    let left = artifact_files(&scratch);
    assert_eq!(left.len(), 2, "{left:?}");
    // The paused run's artifact is whole: it resumes, and its ledger still verifies.
    rein_in(&scratch, &["ledger", "verify", &paused]).expect_code(0);
    line_of(&list(&scratch, &[]), &paused);
    rein_in(&scratch, &["runs", "prune", "--older-than", "0s"])
        .expect_code(0)
        .stdout_has(&["nothing to prune"]);
    assert_eq!(artifact_files(&scratch), left);
}

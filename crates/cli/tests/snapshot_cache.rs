//! The run snapshot is a cache, the ledger the durability point (DESIGN.md §7): a paused
//! run whose snapshot a power cut took, left behind its ledger or damaged resumes from its
//! ledger, and the resumed ledger says what was rebuilt.

mod support;

use serde_json::Value;
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

/// A scratch directory with one run paused on its question; its id.
fn paused_run() -> (Scratch, String) {
    let scratch = Scratch::new();
    scratch.run("ask-human.json", &[]).expect_code(3);
    let id = scratch.new_run_id(&[]);
    (scratch, id)
}

fn snapshot(scratch: &Scratch, id: &str) -> std::path::PathBuf {
    scratch.data().join("runs").join(format!("{id}.json"))
}

/// The entries of run `id`'s ledger, as JSON.
fn entries(scratch: &Scratch, id: &str) -> Vec<Value> {
    std::fs::read_to_string(scratch.ledger(id))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Resumes the paused run with its answer, expects it to complete and verify, and returns
/// the note of its `run_resumed` entry.
fn resume_and_note(scratch: &Scratch, id: &str) -> String {
    rein_in(scratch, &["resume", id, "--input", "yes"]).expect_code(0);
    rein_in(scratch, &["ledger", "verify", id])
        .expect_code(0)
        .stdout_has(&["verified ✓"]);
    let notes: Vec<String> = entries(scratch, id)
        .iter()
        .filter(|e| e["event"]["type"] == "run_resumed")
        .map(|e| e["event"]["note"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    notes[0].clone()
}

#[test]
fn a_paused_run_whose_snapshot_was_lost_resumes_from_its_ledger_and_says_so() {
    let (scratch, id) = paused_run();
    std::fs::remove_file(snapshot(&scratch, &id)).unwrap();
    let note = resume_and_note(&scratch, &id);
    assert!(
        note.contains("the run snapshot was missing, so the run was rebuilt from its ledger"),
        "{note}"
    );
    // The resume saved a new snapshot.
    assert!(snapshot(&scratch, &id).is_file());
}

#[test]
fn a_paused_run_whose_snapshot_is_behind_its_ledger_resumes_and_says_so() {
    let (scratch, id) = paused_run();
    // The snapshot a power cut left: one saved after entry 2, its later saves lost.
    let second = &entries(&scratch, &id)[1];
    let path = snapshot(&scratch, &id);
    let mut run: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let last = run["ledger_head"]["seq"].as_u64().unwrap();
    assert!(last > 2);
    run["ledger_head"] = serde_json::json!({"seq": 2, "hash": second["hash"]});
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    let note = resume_and_note(&scratch, &id);
    assert!(
        note.contains(&format!(
            "the run snapshot was behind its ledger (saved after entry 2, the ledger ends at \
             entry {last}), so the run was rebuilt from its ledger"
        )),
        "{note}"
    );
}

#[test]
fn a_paused_run_whose_snapshot_is_damaged_resumes_from_its_ledger_and_says_so() {
    let (scratch, id) = paused_run();
    // A rename that reached the disk before the data it names did: an empty file.
    std::fs::write(snapshot(&scratch, &id), b"").unwrap();
    let note = resume_and_note(&scratch, &id);
    assert!(
        note.contains("the run snapshot could not be read")
            && note.contains("rebuilt from its ledger"),
        "{note}"
    );
}

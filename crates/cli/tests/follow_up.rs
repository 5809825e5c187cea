//! `rein run --follow-up RUN_ID --goal TEXT`: a new run continuing a finished one under
//! the scenario its conversation started with; `rein ledger verify` checks the chain of
//! runs back to the first (a tampered earlier run breaks the later one's verification);
//! `rein runs list` shows a conversation as one thread; bad follow-ups are refused with
//! what to fix.

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

/// `rein run --follow-up PREVIOUS --goal GOAL`, expecting `code`; the new run's id.
fn follow_up(scratch: &Scratch, previous: &str, goal: &str, code: i32) -> String {
    let before = scratch.run_ids();
    rein_in(scratch, &["run", "--follow-up", previous, "--goal", goal]).expect_code(code);
    scratch.new_run_id(&before)
}

#[test]
fn a_conversation_of_three_runs_verifies_as_a_chain_and_lists_as_one_thread() {
    let scratch = Scratch::new();
    let before = scratch.run_ids();
    scratch.run("happy-path.json", &[]).expect_code(0);
    let first = scratch.new_run_id(&before);
    let second = follow_up(&scratch, &first, "greet again", 0);
    let third = follow_up(&scratch, &second, "and once more", 0);

    let verified = rein_in(&scratch, &["ledger", "verify", &third]);
    verified.expect_code(0).stdout_has(&[
        "conversation of 3 runs",
        &format!("  {first} ✓"),
        &format!("  {second} ✓"),
    ]);
    // A run that follows up on none says nothing of a conversation.
    let alone = rein_in(&scratch, &["ledger", "verify", &first]);
    assert!(!alone.expect_code(0).stdout.contains("conversation"));

    let listed = rein_in(&scratch, &["runs", "list"]);
    listed.expect_code(0);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    let at = |id: &str| {
        lines
            .iter()
            .position(|l| l.contains(id))
            .unwrap_or_else(|| panic!("{id} listed:\n{}", listed.stdout))
    };
    assert!(lines[at(&first)].starts_with(&first), "{}", listed.stdout);
    assert!(
        lines[at(&second)].starts_with(&format!("↪ {second}")),
        "{}",
        listed.stdout
    );
    assert!(
        lines[at(&third)].starts_with(&format!("↪ {third}")),
        "{}",
        listed.stdout
    );
    assert!(at(&first) < at(&second) && at(&second) < at(&third));

    // Edit the first run's goal: the third run's verification fails, naming the runs.
    let path = scratch.ledger(&first);
    let text = std::fs::read_to_string(&path).unwrap();
    let goal = text
        .lines()
        .next()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["event"]["goal"].as_str().map(str::to_owned))
        .expect("the first entry has a goal");
    std::fs::write(&path, text.replacen(&goal, "a goal never given", 1)).unwrap();
    let broken = rein_in(&scratch, &["ledger", "verify", &third]);
    broken.expect_code(4).stderr_has(&[
        "the conversation is broken",
        &first,
        "failed verification",
    ]);
    // And no follow-up continues it.
    rein_in(&scratch, &["run", "--follow-up", &third, "--goal", "four"])
        .expect_code(4)
        .stderr_has(&["cannot follow up on run", "does not verify"]);
}

#[test]
fn a_follow_up_of_a_paused_or_missing_run_is_refused_with_what_to_do() {
    let scratch = Scratch::new();
    let before = scratch.run_ids();
    scratch.run("ask-human.json", &[]).expect_code(3);
    let paused = scratch.new_run_id(&before);
    rein_in(&scratch, &["run", "--follow-up", &paused, "--goal", "next"])
        .expect_code(2)
        .stderr_has(&["is paused", "a follow-up continues a finished run"]);
    rein_in(
        &scratch,
        &["run", "--follow-up", "no-such-run", "--goal", "next"],
    )
    .expect_code(2)
    .stderr_has(&["no run no-such-run"]);
    // --follow-up needs --goal, and takes no scenario.
    rein_in(&scratch, &["run", "--follow-up", &paused]).expect_code(2);
    let scenario = scratch.scenario("happy-path.json");
    rein_in(
        &scratch,
        &[
            "run",
            scenario.to_str().unwrap(),
            "--follow-up",
            &paused,
            "--goal",
            "x",
        ],
    )
    .expect_code(2);
}

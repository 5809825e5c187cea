//! Every example scenario runs through the real binary with its expected exit code and
//! outcome; pausing, answering and resuming; retries and breakers seen from outside.

mod support;

use support::{Scratch, example_names, rein};

/// Runs example `name` in a scratch copy and checks its exit code and summary lines.
fn check(name: &str, code: i32, expect: &[&str]) {
    let scratch = Scratch::new();
    let outcome = scratch.run(name, &[]);
    outcome.expect_code(code).stdout_has(expect);
    // Whatever happened, the ledger on disk verifies.
    let id = scratch.new_run_id(&[]);
    rein()
        .args(["ledger", "verify", &id, "--data-dir"])
        .arg(scratch.data())
        .assert()
        .success();
}

const EXPECTED: &[(&str, i32, &[&str])] = &[
    (
        "batch.json",
        0,
        &[
            "completed ✓",
            "two tickets filed",
            "tool calls 5 (docs.search ×3, ticket.create ×2)",
            "verified ✓",
        ],
    ),
    (
        "happy-path.json",
        0,
        &[
            "completed ✓",
            "summary written to out/summary.md",
            "path       intake → explore → decide → act → validate → done",
            "tool calls 4 (fs.list ×1, fs.read ×2, fs.write ×1)",
            "approvals  1 requested, 1 granted, 0 denied",
            "budgets    steps 9/20, tool_calls 4/10",
            "verified ✓",
        ],
    ),
    (
        "approval-denied.json",
        1,
        &[
            "failed ✗",
            "not approved by scenario: production is frozen until Monday",
            "(policy_violation)",
            "approvals  2 requested, 0 granted, 2 denied",
            "verified ✓",
        ],
    ),
    (
        "budget-exhausted.json",
        1,
        &[
            "failed ✗",
            "budget `tool_calls` exhausted",
            "(budget_exhausted)",
            "tool_calls 2/2",
        ],
    ),
    (
        "ask-human.json",
        3,
        &[
            "paused",
            "question   \"Publish the week 47 release notes now?\"",
            "options    yes, no",
            "resume     rein resume ",
        ],
    ),
    (
        "flaky-retry.json",
        0,
        &[
            "completed ✓",
            "2 retries",
            "1 failed",
            "\"needs_review\":true",
        ],
    ),
    (
        "hang-timeout.json",
        1,
        &[
            "failed ✗",
            "tool `legacy.inventory` timed out after 150 ms",
            "(tool_failed)",
        ],
    ),
    (
        "circuit-breaker.json",
        0,
        &[
            "completed ✓",
            "pricing unavailable: used list prices",
            "tool calls 3 (pricing.quote ×3), 3 failed",
        ],
    ),
    (
        "violation-handback.json",
        0,
        &[
            "completed ✓",
            "worker restarted",
            "violations 1",
            "violations 1/2",
        ],
    ),
];

#[test]
fn every_example_runs_with_its_expected_outcome() {
    for (name, code, expect) in EXPECTED {
        check(name, *code, expect);
    }
}

#[test]
fn every_example_file_is_covered_and_described() {
    let covered: Vec<&str> = EXPECTED.iter().map(|(name, _, _)| *name).collect();
    for name in example_names() {
        assert!(
            covered.contains(&name.as_str()),
            "examples/scenarios/{name} has no expected outcome in this test"
        );
        let text = std::fs::read_to_string(support::examples_dir().join(&name)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            json["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name} has no description"
        );
    }
}

#[test]
fn happy_path_writes_inside_its_workspace_and_json_prints_the_run() {
    let scratch = Scratch::new();
    let outcome = scratch.run("happy-path.json", &["--json"]);
    outcome.expect_code(0);
    let run: serde_json::Value = serde_json::from_str(&outcome.stdout).unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["result"]["path"], "out/summary.md");
    let written = scratch
        .dir
        .path()
        .join("scenarios/workspace/out/summary.md");
    assert!(
        std::fs::read_to_string(written)
            .unwrap()
            .starts_with("# Week 47")
    );
    // The scenario is stored next to the run, paths resolved, for `rein resume`.
    let id = scratch.new_run_id(&[]);
    let stored =
        std::fs::read_to_string(scratch.data().join("scenarios").join(format!("{id}.json")))
            .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert!(std::path::Path::new(stored["workspace"].as_str().unwrap()).is_absolute());
}

#[test]
fn the_workspace_flag_replaces_the_scenarios_workspace() {
    let scratch = Scratch::new();
    let other = scratch.dir.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "other notes").unwrap();
    let outcome = scratch.run("happy-path.json", &["--workspace", other.to_str().unwrap()]);
    outcome.expect_code(0);
    assert!(other.join("out/summary.md").is_file());
    assert!(!scratch.dir.path().join("scenarios/workspace/out").exists());
}

#[test]
fn a_paused_run_resumes_with_a_valid_answer_only() {
    let scratch = Scratch::new();
    scratch.run("ask-human.json", &[]).expect_code(3);
    let id = scratch.new_run_id(&[]);
    let ledger_before = std::fs::read(scratch.ledger(&id)).unwrap();

    // An answer not among the options: exit 2, nothing written.
    let outcome = support::Outcome::of(
        &rein()
            .args(["resume", &id, "--input", "maybe", "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome
        .expect_code(2)
        .stderr_has(&["\"maybe\" is not among the options", "yes", "no"]);
    assert_eq!(std::fs::read(scratch.ledger(&id)).unwrap(), ledger_before);

    // No answer at all: still paused, exit 3, says how.
    let outcome = support::Outcome::of(
        &rein()
            .args(["resume", &id, "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(3).stderr_has(&["--input yes"]);
    assert_eq!(std::fs::read(scratch.ledger(&id)).unwrap(), ledger_before);

    // The right answer: completes, same ledger continued.
    let outcome = support::Outcome::of(
        &rein()
            .args(["resume", &id, "--input", "yes", "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(0).stdout_has(&[
        "completed ✓",
        "release notes published",
        "tool_calls 1/5",
        "verified ✓",
    ]);
    assert!(
        std::fs::read(scratch.ledger(&id))
            .unwrap()
            .starts_with(&ledger_before)
    );

    // A finished run cannot be resumed.
    let outcome = support::Outcome::of(
        &rein()
            .args(["resume", &id, "--input", "yes", "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome
        .expect_code(2)
        .stderr_has(&["is completed; a finished run cannot be resumed"]);
}

#[test]
fn scripted_answers_are_given_when_the_run_pauses() {
    let scratch = Scratch::new();
    let text = std::fs::read_to_string(scratch.scenario("ask-human.json")).unwrap();
    let text = text.replacen("\"policies\"", "\"answers\": [\"no\"],\n  \"policies\"", 1);
    scratch.write("ask-human-answered.json", &text);
    scratch
        .run("ask-human-answered.json", &[])
        .expect_code(0)
        .stdout_has(&["completed ✓", "not published: the human said no"]);
}

#[test]
fn retries_only_idempotent_tools_and_the_breaker_stops_calls() {
    let scratch = Scratch::new();
    scratch.run("flaky-retry.json", &[]).expect_code(0);
    let lines = |name: &str| {
        std::fs::read_to_string(scratch.data().join("counts").join(name))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(
        lines("rates.fetch.log"),
        3,
        "idempotent: 2 failures, then success"
    );
    assert_eq!(
        lines("payments.charge.log"),
        1,
        "not idempotent: never retried"
    );

    scratch.run("circuit-breaker.json", &[]).expect_code(0);
    assert_eq!(
        lines("pricing.quote.log"),
        2,
        "the third call never reached the tool"
    );
    let ids = scratch.run_ids();
    let ledger = std::fs::read_to_string(scratch.ledger(ids.last().unwrap())).unwrap();
    assert!(ledger.contains("\"kind\":\"circuit_open\""), "{ledger}");
}

#[test]
fn runs_list_shows_every_run_with_its_status() {
    let scratch = Scratch::new();
    scratch.run("happy-path.json", &[]).expect_code(0);
    scratch.run("ask-human.json", &[]).expect_code(3);
    let outcome = support::Outcome::of(
        &rein()
            .args(["runs", "list", "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(0).stdout_has(&[
        "RUN ID",
        // The status column is as wide as its longest status, `WAITING-APPROVAL`.
        "completed         done",
        "paused            explore",
        "Summarise notes.txt",
        "Publish the release notes",
    ]);
}

#[test]
fn a_panicking_fixture_fails_the_run_with_a_typed_error_and_no_noise() {
    let scratch = Scratch::new();
    scratch.write(
        "panic.json",
        r#"{
          "goal": "g",
          "tools": [{"fixture": "boom", "annotations": {"read_only": true}, "behavior": {"panic": "kaboom"}}],
          "planner": {"scripted": [
            {"expect": "intake", "decision": {"type": "transition", "to": "explore"}},
            {"expect": "explore", "decision": {"type": "call_tool", "tool": "boom", "input": {}}}
          ]}
        }"#,
    );
    let outcome = scratch.run("panic.json", &[]);
    outcome
        .expect_code(1)
        .stdout_has(&["failed ✗", "tool panicked", "kaboom", "verified ✓"]);
    assert!(
        !outcome.stderr.contains("panicked at"),
        "{}",
        outcome.stderr
    );
}

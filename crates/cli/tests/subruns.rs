//! Sub-runs from the command line: a scenario that delegates (named planners, `delegate`
//! decisions) validates and runs; the summary shows what each child spent; `rein ledger
//! verify --tree` verifies the whole tree and refuses a child ledger cut after its end;
//! `rein inspect --tree` draws it; `rein runs list` shows a child under its parent; a child
//! waiting for a durable approval is approved by its id, and its parent then resumed; `rein
//! replay` replays the tree and names a child that goes elsewhere.

mod support;

use support::{Outcome, Scratch, rein};

const DELEGATING: &str = r#"{
  "$schema": "../../crates/cli/schema/scenario.schema.json",
  "goal": "Gather the notes through a helper run",
  "policies": {"budgets": {"tool_calls": 5}},
  "tools": [
    {"fixture": "notes.read", "description": "Reads the notes", "annotations": {"read_only": true}, "behavior": {"output": {"notes": 3}}}
  ],
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
    {"expect": "explore", "decision": {"type": "delegate", "goal": "read the notes", "budget": {"tool_calls": 2}, "planner": "reader", "reason": "a helper reads"}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "the helper is back"}},
    {"expect": "decide", "decision": {"type": "finish", "summary": "notes gathered", "result": {"ok": true}}}
  ]},
  "planners": {"reader": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
    {"expect": "explore", "decision": {"type": "call_tool", "tool": "notes.read", "input": {}, "reason": "read"}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "read"}},
    {"expect": "decide", "decision": {"type": "finish", "summary": "read them", "result": {"notes": 3}}}
  ]}
}"#;

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

/// Runs the delegating scenario: the root's id and its child's.
fn delegated() -> (Scratch, String, String) {
    let scratch = Scratch::new();
    scratch.write("delegate.json", DELEGATING);
    let outcome = scratch.run("delegate.json", &[]);
    outcome.expect_code(0).stdout_has(&[
        "completed ✓",
        "child ",
        "completed — read the notes — spent",
    ]);
    let line = outcome
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("child "))
        .expect("a child line")
        .to_owned();
    assert!(line.contains("tool_calls 1"), "{line}");
    let child = line
        .split_whitespace()
        .nth(1)
        .expect("the child id")
        .to_owned();
    let ids = scratch.run_ids();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let root = ids.into_iter().find(|id| *id != child).expect("the root");
    (scratch, root, child)
}

#[test]
fn a_delegating_scenario_validates_runs_and_verifies_as_a_tree() {
    let (scratch, root, child) = delegated();
    rein()
        .args(["validate"])
        .arg(scratch.scenario("delegate.json"))
        .assert()
        .success();
    rein_in(&scratch, &["ledger", "verify", &root, "--tree"])
        .expect_code(0)
        .stdout_has(&["tree of 2 runs", &child, "tool_calls 1) ✓"]);
    rein_in(&scratch, &["inspect", &root, "--tree"])
        .expect_code(0)
        .stdout_has(&["flowchart TD", &root, &child, "tool_calls 1"]);
    // The run's own path notes the child where it ended.
    rein_in(&scratch, &["inspect", &root])
        .expect_code(0)
        .stdout_has(&[
            "stateDiagram-v2",
            &format!("child {} ✓ steps 4, tool_calls 1", &child[..8]),
        ]);
    rein_in(&scratch, &["inspect", &root, "--tree", "--format", "dot"])
        .expect_code(0)
        .stdout_has(&["digraph runs", "run0 -> run1"]);
}

#[test]
fn a_child_ledger_cut_after_its_end_fails_the_tree_but_not_the_parent() {
    let (scratch, root, child) = delegated();
    // Cut the child's last entry and its snapshot's memory of it: the child's own chain
    // still verifies alone, but not against the head its parent recorded.
    let path = scratch.ledger(&child);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let snapshot = scratch.data().join("runs").join(format!("{child}.json"));
    let _ = std::fs::remove_file(snapshot);
    rein_in(&scratch, &["ledger", "verify", &root])
        .expect_code(0)
        .stdout_has(&["verified ✓"]);
    rein_in(&scratch, &["ledger", "verify", &root, "--tree"])
        .expect_code(4)
        .stderr_has(&[&root, &child, "ending at entry"]);
}

#[test]
fn a_child_forged_after_the_parent_ended_fails_the_tree_and_the_replay_says_so() {
    let (scratch, root, _child) = delegated();
    // A child_started entry appended after run_completed, its hash recomputed, naming a
    // child that does not exist: the root's own chain still verifies.
    let path = scratch.ledger(&root);
    let text = std::fs::read_to_string(&path).unwrap();
    let entries: Vec<rein::ledger::Entry> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let last = entries.last().unwrap().clone();
    let ended = last.seq();
    let mut ledger = rein::Ledger::from_entries(root.parse().unwrap(), entries).unwrap();
    let forged = "0193c6a2-0000-7000-8000-00000000f0f0";
    let entry = ledger.append(
        last.at(),
        last.state(),
        rein::ledger::EntryKind::ChildStarted {
            child: forged.parse().unwrap(),
            goal: "a child that never ran".into(),
            carved: rein::subrun::Spend::default(),
            planner: None,
        },
    );
    std::fs::write(&path, text + &entry.to_json_line()).unwrap();
    rein_in(&scratch, &["ledger", "verify", &root])
        .expect_code(0)
        .stdout_has(&["verified ✓"]);
    let after_end = format!(
        "records child_started for it at entry {}, after the parent ended at entry {ended}",
        ended + 1
    );
    rein_in(&scratch, &["ledger", "verify", &root, "--tree"])
        .expect_code(4)
        .stderr_has(&[
            &format!("broken between parent {root} and child {forged}"),
            &after_end,
        ]);
    let replayed = rein_in(&scratch, &["replay", &root]);
    replayed
        .expect_code(4)
        .stderr_has(&[&format!("child {forged}"), &after_end]);
    assert!(
        !replayed.stderr.contains("recorded the child's end"),
        "{}",
        replayed.stderr
    );
}

#[test]
fn a_delegation_to_an_undefined_planner_is_a_warning_that_names_it() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "bad-delegate.json",
        &DELEGATING.replace("\"planner\": \"reader\"", "\"planner\": \"nobody\""),
    );
    let outcome = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    outcome
        .expect_code(0)
        .stderr_has(&["planner.scripted[1].decision", "`nobody`", "`planners`"]);
}

#[test]
fn the_delegating_scenario_validates_against_the_published_schema() {
    let outcome = Outcome::of(&rein().args(["schema", "scenario"]).output().unwrap());
    outcome.expect_code(0);
    let schema: serde_json::Value = serde_json::from_str(&outcome.stdout).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let scenario: serde_json::Value = serde_json::from_str(DELEGATING).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&scenario)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // A delegation without a goal is refused by the schema, as by rein.
    let mut bad = scenario;
    bad["planner"]["scripted"][1]["decision"]
        .as_object_mut()
        .unwrap()
        .remove("goal");
    assert!(!validator.is_valid(&bad));
}

#[test]
fn runs_list_shows_a_child_under_its_parent() {
    let (scratch, root, child) = delegated();
    let listed = rein_in(&scratch, &["runs", "list"]);
    listed.expect_code(0);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", listed.stdout);
    assert!(lines[0].starts_with("RUN ID"), "{}", listed.stdout);
    assert!(
        lines[1].starts_with(&format!("{root} ")),
        "{}",
        listed.stdout
    );
    assert!(
        lines[2].starts_with(&format!("└ {child} ")),
        "{}",
        listed.stdout
    );
    assert!(lines[2].contains("read the notes"), "{}", listed.stdout);
    // The columns stay aligned: the status starts where the header's does.
    let status = lines[0].find("STATUS").expect("a status column");
    for line in &lines[1..] {
        let from: String = line.chars().skip(status).collect();
        assert!(from.starts_with("completed"), "{line}");
    }

    // A child whose ledger is gone stays under the run that started it.
    std::fs::remove_file(scratch.ledger(&child)).unwrap();
    let listed = rein_in(&scratch, &["runs", "list"]);
    listed.expect_code(0);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", listed.stdout);
    assert!(
        lines[2].starts_with(&format!("└ {child} ")) && lines[2].contains("is missing"),
        "{}",
        listed.stdout
    );
}

const CHILD_APPROVAL: &str = r#"{
  "goal": "Drop the stale table through a helper run",
  "policies": {"approvals": {"mode": "durable", "timeout_ms": 86400000}, "budgets": {"tool_calls": 3}},
  "tools": [
    {"fixture": "db.drop_table", "description": "Drops a database table", "annotations": {"destructive": true, "risk_level": "critical"}, "behavior": {"output": {"dropped": true}}}
  ],
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
    {"expect": "explore", "decision": {"type": "delegate", "goal": "drop the table", "budget": {"tool_calls": 1}, "planner": "dropper", "reason": "a helper drops it"}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "the helper is back"}},
    {"expect": "decide", "decision": {"type": "finish", "summary": "table dropped by the helper"}}
  ]},
  "planners": {"dropper": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "nothing to look up"}},
    {"expect": "decide", "decision": {"type": "transition", "to": "act", "reason": "drop it"}},
    {"expect": "act", "decision": {"type": "call_tool", "tool": "db.drop_table", "input": {"table": "orders_2019"}, "reason": "stale"}},
    {"expect": "act", "decision": {"type": "transition", "to": "validate", "reason": "dropped"}},
    {"expect": "validate", "decision": {"type": "finish", "summary": "dropped"}}
  ]}
}"#;

#[test]
fn a_child_waiting_for_approval_is_approved_by_id_and_its_parent_then_resumed() {
    let scratch = Scratch::new();
    scratch.write("tree.json", CHILD_APPROVAL);
    let paused = scratch.run("tree.json", &[]);
    paused.expect_code(3);
    let ids = scratch.run_ids();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let listed = rein_in(&scratch, &["runs", "list"]);
    listed.expect_code(0);
    let child_line = listed
        .stdout
        .lines()
        .find(|l| l.starts_with("└ "))
        .expect("the child under its parent");
    assert!(child_line.contains("WAITING-APPROVAL"), "{child_line}");
    let child = child_line
        .split_whitespace()
        .nth(1)
        .expect("an id")
        .to_owned();
    let root = ids.into_iter().find(|id| *id != child).expect("the root");
    // The root's question names the child, the call and how to go on.
    paused.stdout_has(&[
        &format!("child run {child} waits for approval of call `db.drop_table`"),
        &format!("rein approve {child}"),
        "options    resume",
    ]);
    // The summary points to the child's approval first, and to resuming the root after.
    let approve_at = paused
        .stdout
        .find(&format!(
            "  approve    rein approve {child} --reason TEXT --by NAME"
        ))
        .expect("the child's approve line");
    let resume_at = paused
        .stdout
        .find(&format!("  then       rein resume {root} --input resume"))
        .expect("the root's resume line, after it");
    assert!(approve_at < resume_at, "{}", paused.stdout);
    paused.stdout_has(&[&format!(
        "  approval   child run {child} waits for db.drop_table (risk critical"
    )]);
    // Approving the root names the child that waits, and records nothing.
    let root_ledger = std::fs::read(scratch.ledger(&root)).unwrap();
    rein_in(
        &scratch,
        &["approve", &root, "--by", "alice", "--reason", "ticket 9"],
    )
    .expect_code(2)
    .stderr_has(&[
        &format!("run {root} waits for no approval itself, but 1 below it does"),
        &format!("child run {child} waits for `db.drop_table`"),
        &format!("rein approve {child} --reason TEXT --by NAME"),
        &format!("rein resume {root} --input resume"),
    ]);
    assert_eq!(std::fs::read(scratch.ledger(&root)).unwrap(), root_ledger);
    // An answer is no verdict: refused while the child waits.
    rein_in(&scratch, &["resume", &root, "--input", "sure, drop it"])
        .expect_code(3)
        .stderr_has(&[&format!("run {child} is paused waiting for approval")]);
    // The child, approved by its id, is rebuilt from its root's scenario and completes.
    rein_in(
        &scratch,
        &["approve", &child, "--by", "alice", "--reason", "ticket 9"],
    )
    .expect_code(0)
    .stdout_has(&["completed ✓", "1 requested, 1 granted"]);
    rein_in(&scratch, &["resume", &root, "--input", "resume"])
        .expect_code(0)
        .stdout_has(&["completed ✓", "completed — drop the table"]);
    rein_in(&scratch, &["ledger", "verify", &root, "--tree"])
        .expect_code(0)
        .stdout_has(&["tree of 2 runs"]);
}

#[test]
fn rein_replay_replays_the_tree_and_names_a_child_that_diverges() {
    let (scratch, root, child) = delegated();
    let replayed = rein_in(&scratch, &["replay", &root]);
    replayed.expect_code(0).stdout_has(&[
        &format!("replay of run {root} (a tree of 2 runs): matches ✓"),
        &format!("    {child}  completed, 4 decisions, 4 states ✓"),
    ]);
    // Rebuilt without the tool the child called, the replay cannot follow the child.
    let stored = scratch
        .data()
        .join("scenarios")
        .join(format!("{root}.json"));
    let mut scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stored).unwrap()).unwrap();
    scenario["tools"][0]["fixture"] = serde_json::json!("notes.write");
    std::fs::write(&stored, scenario.to_string()).unwrap();
    let diverged = rein_in(&scratch, &["replay", &root]);
    diverged.expect_code(1).stdout_has(&[
        &format!("replay of run {root} (a tree of 2 runs): diverges ✗ — child run {child}:"),
        "replayed failed",
    ]);
    let child_line = diverged
        .stdout
        .lines()
        .find(|l| l.contains(child.as_str()) && l.ends_with('✗'))
        .expect("the child's line");
    assert!(child_line.starts_with("    "), "{child_line}");
}

/// A scenario whose runs delegate `depth` levels below the root (each level to planner
/// `level{k}`), the deepest asking a question, under a `max_depth` of `max_depth`.
fn chain(depth: u32, max_depth: u32) -> String {
    use serde_json::json;
    let steps = |middle: serde_json::Value, summary: &str| {
        json!([
            {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
            {"expect": "explore", "decision": middle},
            {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "back"}},
            {"expect": "decide", "decision": {"type": "finish", "summary": summary, "result": {}}},
        ])
    };
    let down = |k: u32| json!({"type": "delegate", "goal": format!("level {k}"), "planner": format!("level{k}"), "reason": "one level down"});
    let mut planners = serde_json::Map::new();
    for k in 1..depth {
        planners.insert(
            format!("level{k}"),
            steps(down(k + 1), &format!("level {k}")),
        );
    }
    let ask = json!({"type": "ask_human", "question": "ship it?", "options": ["ship"]});
    planners.insert(format!("level{depth}"), steps(ask, "the bottom"));
    json!({
        "goal": "all the way down",
        "max_depth": max_depth,
        "planner": {"scripted": steps(down(1), "root")},
        "planners": planners,
    })
    .to_string()
}

#[test]
fn a_tree_as_deep_as_max_depth_allows_runs_pauses_and_resumes() {
    // 32 levels below the root, the ceiling: each level's drive nested in its parent's
    // overflowed the stack after a dozen levels.
    let scratch = Scratch::new();
    scratch.write("deep.json", &chain(32, 32));
    rein()
        .arg("validate")
        .arg(scratch.scenario("deep.json"))
        .assert()
        .success();
    scratch
        .run("deep.json", &[])
        .expect_code(3)
        .stdout_has(&["ship it?"]);
    let ids = scratch.run_ids();
    assert_eq!(ids.len(), 33, "{ids:?}");
    let root = ids
        .iter()
        .find(|id| {
            let ledger = std::fs::read_to_string(scratch.ledger(id)).unwrap();
            !ledger.contains("\"child_of\"")
        })
        .expect("the root")
        .clone();
    rein_in(&scratch, &["resume", &root, "--input", "ship"])
        .expect_code(0)
        .stdout_has(&["completed ✓"]);
    rein_in(&scratch, &["ledger", "verify", &root, "--tree"])
        .expect_code(0)
        .stdout_has(&["tree of 33 runs"]);

    // One level more than rein allows is refused when the file is checked.
    scratch.write("deeper.json", &chain(2, 33));
    let validated = rein()
        .arg("validate")
        .arg(scratch.scenario("deeper.json"))
        .output()
        .unwrap();
    for outcome in [Outcome::of(&validated), scratch.run("deeper.json", &[])] {
        outcome
            .expect_code(2)
            .stderr_has(&["max_depth of 33", "at most 32", "at: max_depth"]);
    }
}

#[test]
fn runs_naming_each_other_as_children_are_refused_at_the_depth_ceiling() {
    // Two ledgers assembled by hand, each naming the other as its child and linked to the
    // other's `child_started` entry: reading the tree followed the loop until the stack
    // overflowed.
    let (scratch, root, _child) = delegated();
    let text = std::fs::read_to_string(scratch.ledger(&root)).unwrap();
    let first: rein::ledger::Entry = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let ids: [rein::RunId; 2] = [
        "0193c6a2-0000-7000-8000-00000000a00a".parse().unwrap(),
        "0193c6a2-0000-7000-8000-00000000b00b".parse().unwrap(),
    ];
    let mut ledgers = [
        rein::Ledger::new(ids[0].clone()),
        rein::Ledger::new(ids[1].clone()),
    ];
    let mut heads = Vec::new();
    for (ledger, child) in ledgers.iter_mut().zip([&ids[1], &ids[0]]) {
        ledger.append(first.at(), first.state(), first.event().clone());
        let started = rein::ledger::EntryKind::ChildStarted {
            child: child.clone(),
            goal: "the other".into(),
            carved: rein::subrun::Spend::default(),
            planner: None,
        };
        heads.push(ledger.append(first.at(), first.state(), started).head());
    }
    for (ledger, (parent, head)) in ledgers
        .iter_mut()
        .zip([(&ids[1], heads[1]), (&ids[0], heads[0])])
    {
        let link = rein::ledger::EntryKind::ChildOf {
            parent: parent.clone(),
            parent_head: head,
            depth: 1,
            planner: None,
        };
        ledger.append(first.at(), first.state(), link);
        let lines: String = ledger
            .entries()
            .iter()
            .map(rein::ledger::Entry::to_json_line)
            .collect();
        std::fs::write(scratch.ledger(ledger.run_id().as_ref()), lines).unwrap();
    }
    rein_in(&scratch, &["ledger", "verify", ids[0].as_ref(), "--tree"])
        .expect_code(4)
        .stderr_has(&["levels below the run verified", "a loop of runs"]);
}

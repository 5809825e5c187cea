//! Bad scenario files: each gets exit 2 and an error that names the file, the line and
//! column (or the JSON path) of the problem, what is wrong and what is allowed — and
//! nothing is written.

mod support;

use support::{Outcome, Scratch, rein};

/// A scenario that is fine, one field per line so positions are predictable; cases edit it.
const BASE: &str = r#"{
  "goal": "g",
  "workspace": "workspace",
  "tools": [
    {"builtin": "fs.read"},
    {"fixture": "deploy", "behavior": "echo"}
  ],
  "policies": {
    "budgets": {"tool_calls": 3}
  },
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore"}}
  ]}
}"#;

/// Runs `rein validate` and `rein run` on `text` (saved as `NAME.json`) and checks that
/// both exit with 2, that stderr holds every `expect` fragment, and that `run` wrote
/// nothing in its data directory. Returns what is wrong, if anything.
fn check(name: &str, text: &str, expect: &[&str]) -> Vec<String> {
    let scratch = Scratch::new();
    let file = scratch.write(&format!("{name}.json"), text);
    let mut problems = Vec::new();
    for command in ["validate", "run"] {
        let output = rein()
            .arg(command)
            .arg(&file)
            .arg("--workspace")
            .arg(scratch.dir.path().join("scenarios/workspace"))
            .args(if command == "run" {
                vec![
                    "--data-dir".to_owned(),
                    scratch.data().display().to_string(),
                ]
            } else {
                vec![]
            })
            .output()
            .unwrap();
        let outcome = Outcome::of(&output);
        let mut wrong = Vec::new();
        if outcome.code != 2 {
            wrong.push(format!("exit code {}", outcome.code));
        }
        if !outcome.stderr.starts_with("error: ") {
            wrong.push("stderr does not start with `error: `".to_owned());
        }
        if !outcome.stderr.contains(&format!("{name}.json")) {
            wrong.push("the file is not named".to_owned());
        }
        for part in expect {
            if !outcome.stderr.contains(part) {
                wrong.push(format!("no {part:?}"));
            }
        }
        if scratch.data().exists() {
            wrong.push("`run` wrote to the data directory".to_owned());
        }
        if !wrong.is_empty() {
            problems.push(format!(
                "{name} ({command}): {}\n{}",
                wrong.join("; "),
                outcome.stderr
            ));
        }
    }
    problems
}

/// `BASE` with `from` replaced by `to` (which must be there).
fn edit(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from:?} is not in BASE");
    BASE.replacen(from, to, 1)
}

#[test]
fn the_base_scenario_is_valid() {
    let scratch = Scratch::new();
    let file = scratch.write("base.json", BASE);
    rein().arg("validate").arg(file).assert().success();
}

#[test]
fn bad_files_get_located_helpful_errors() {
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("malformed", edit(r#""goal": "g","#, r#""goal": "g""#), vec!["malformed.json:3:", "expected `,` or `}`", "help:"]),
        ("trailing-comma", edit("  ]}\n}", "  ]},\n}"), vec!["trailing-comma.json:14:", "trailing comma", "help:"]),
        ("truncated", BASE[..120].to_owned(), vec!["truncated.json:", "EOF while parsing", "help:"]),
        ("not-an-object", "[1, 2]".to_owned(), vec!["not-an-object.json:1:", "a scenario file holds one JSON object"]),
        ("unknown-field", edit(r#""goal": "g","#, r#""goal": "g", "goals": "h","#), vec!["unknown-field.json:2:", "unknown field `goals`", "expected one of", "at: goals"]),
        ("missing-goal", edit(r#""goal": "g","#, ""), vec!["missing field `goal`", "help: every scenario needs a \"goal\""]),
        ("missing-planner", edit("\"planner\"", "\"planer\""), vec!["unknown field `planer`", "`planner`"]),
        ("missing-planner-field", BASE.replacen(",\n  \"planner\": {\"scripted\": [\n    {\"expect\": \"intake\", \"decision\": {\"type\": \"transition\", \"to\": \"explore\"}}\n  ]}", "", 1), vec!["missing field `planner`", "help: every scenario needs a \"planner\""]),
        ("wrong-type", edit(r#""goal": "g","#, r#""goal": "g", "max_steps": "ten","#), vec!["wrong-type.json:2:", "invalid type: string \"ten\", expected u32", "at: max_steps"]),
        ("negative-budget", edit(r#""tool_calls": 3"#, r#""tool_calls": -1"#), vec!["negative-budget.json:9:", "invalid value: integer `-1`", "at: policies.budgets.tool_calls", "whole numbers"]),
        ("bad-budget-name", edit(r#""tool_calls": 3"#, r#""Tool Calls": 3"#), vec!["bad-budget-name.json:9:", "at: policies.budgets[\"Tool Calls\"]"]),
        ("unknown-policy-field", edit(r#""budgets""#, r#""budget""#), vec!["unknown-policy-field.json:9:", "unknown field `budget`", "`budgets`", "at: policies.budget"]),
        ("unknown-tool-in-eligibility", edit(r#""budgets": {"tool_calls": 3}"#, r#""eligibility": {"mode": "explicit", "allow": {"explore": ["fs.read", "search"]}}"#), vec!["unknown-tool-in-eligibility.json:9:", "unknown tool `search`", "at: policies.eligibility.allow.explore[1]", "help: declare the tool"]),
        ("side-effect-in-explore", edit(r#""budgets": {"tool_calls": 3}"#, r#""eligibility": {"mode": "explicit", "allow": {"explore": ["deploy"]}}"#), vec!["side-effect-in-explore.json:9:", "lets `deploy` run in explore", "side effects run only in act", "at: policies.eligibility.allow.explore[0]"]),
        ("bad-state-in-transitions", edit(r#""budgets": {"tool_calls": 3}"#, r#""transitions": {"intake": ["finished"]}"#), vec!["bad-state-in-transitions.json:9:", "unknown variant `finished`", "`intake`, `explore`", "policies.transitions"]),
        ("transition-out-of-done", edit(r#""budgets": {"tool_calls": 3}"#, r#""transitions": {"intake": ["done"], "done": ["explore"]}"#), vec!["transition-out-of-done.json:9:", "leaves a terminal state", "at: policies.transitions", "help: transitions map"]),
        ("bad-state-in-script", edit(r#""expect": "intake""#, r#""expect": "start""#), vec!["bad-state-in-script.json:12:", "unknown variant `start`", "planner.scripted[0]"]),
        ("unknown-decision", edit(r#""type": "transition""#, r#""type": "jump""#), vec!["unknown-decision.json:12:", "unknown variant `jump`", "`call_tool`", "at: planner.scripted[0].decision"]),
        ("when-without-otherwise", edit(r#""to": "explore"}}"#, r#""to": "explore"}, "when": "last_tool_failed"}"#), vec!["when-without-otherwise.json:12:", "`when` but no `otherwise`", "at: planner.scripted[0]"]),
        ("unknown-approver", edit(r#""goal": "g","#, r#""goal": "g", "approver": "maybe","#), vec!["unknown-approver.json:2:", "unknown variant `maybe`", "`auto`, `deny`, `scripted`", "help: approver is"]),
        ("bad-approver-answer", edit(r#""goal": "g","#, r#""goal": "g", "approver": {"scripted": [{"answer": "yes"}]},"#), vec!["bad-approver-answer.json:2:", "unknown variant `yes`", "expected `grant` or `deny`"]),
        ("unknown-builtin", edit(r#"{"builtin": "fs.read"}"#, r#"{"builtin": "fs.remove"}"#), vec!["unknown-builtin.json:5:", "unknown variant `fs.remove`", "`fs.read`, `fs.list`, `fs.glob`", "at: tools[0].builtin"]),
        ("builtin-and-fixture", edit(r#"{"builtin": "fs.read"}"#, r#"{"builtin": "fs.read", "fixture": "x"}"#), vec!["builtin-and-fixture.json:5:", "either built-in", "not both", "at: tools[0]"]),
        ("builtin-with-fixture-field", edit(r#"{"builtin": "fs.read"}"#, r#"{"builtin": "fs.read", "delay_ms": 5}"#), vec!["builtin-with-fixture-field.json:5:", "`delay_ms` applies to fixture tools only", "at: tools[0].delay_ms"]),
        ("fixture-without-behavior", edit(r#""behavior": "echo""#, r#""description": "d""#), vec!["fixture-without-behavior.json:6:", "fixture `deploy` needs a \"behavior\"", "at: tools[1]", "help: behavior is"]),
        ("unknown-behavior", edit(r#""behavior": "echo""#, r#""behavior": "explode""#), vec!["unknown-behavior.json:6:", "unknown variant `explode`", "`output`, `sequence`, `echo`, `hang`, `panic`, `fail`", "at: tools[1].behavior"]),
        ("empty-sequence", edit(r#""behavior": "echo""#, r#""behavior": {"sequence": []}"#), vec!["empty-sequence.json:6:", "a sequence needs at least one value", "at: tools[1].behavior.sequence"]),
        ("bad-tool-name", edit(r#""fixture": "deploy""#, r#""fixture": "deploy now!""#), vec!["bad-tool-name.json:6:", "deploy now!", "at: tools[1].fixture"]),
        ("duplicate-tool", edit(r#""fixture": "deploy""#, r#""fixture": "fs.read""#), vec!["duplicate-tool.json:6:", "a tool named `fs.read` is declared twice (first at tools[0])", "at: tools[1].fixture"]),
        ("invalid-input-schema", edit(r#""behavior": "echo""#, r#""behavior": "echo", "input_schema": {"type": 5}"#), vec!["invalid-input-schema.json:6:", "not a valid JSON Schema", "at: tools[1].input_schema"]),
        ("read-only-and-destructive", edit(r#""behavior": "echo""#, r#""behavior": "echo", "annotations": {"read_only": true, "destructive": true}"#), vec!["read-only-and-destructive.json:6:", "both read_only and destructive", "at: tools[1].annotations"]),
        ("unknown-annotation", edit(r#""behavior": "echo""#, r#""behavior": "echo", "annotations": {"readonly": true}"#), vec!["unknown-annotation.json:6:", "unknown field `readonly`", "`read_only`", "at: tools[1].annotations.readonly"]),
        ("path-escaping-workspace", edit(r#"{"type": "transition", "to": "explore"}"#, r#"{"type": "call_tool", "tool": "fs.read", "input": {"path": "../secrets.txt"}}"#), vec!["path-escaping-workspace.json:12:", "contains `..`", "at: planner.scripted[0].decision.input.path", "can never leave it"]),
        ("absolute-path", edit(r#"{"type": "transition", "to": "explore"}"#, r#"{"type": "call_tool", "tool": "fs.read", "input": {"path": "/etc/passwd"}}"#), vec!["absolute-path.json:12:", "is absolute", "at: planner.scripted[0].decision.input.path"]),
        ("hand-back-without-limit", edit(r#""budgets": {"tool_calls": 3}"#, r#""on_violation": {"hand_back": {}}"#), vec!["hand-back-without-limit.json:9:", "missing field `limit`", "help: on_violation is"]),
        ("deep-nesting", format!("{}{}", "[".repeat(130), "]".repeat(130)), vec!["deep-nesting.json:1:101:", "nested more than 100 levels deep"]),
        ("deep-in-vars", edit(r#""goal": "g","#, &format!(r#""goal": "g", "vars": {{"v": {}{}}},"#, "[".repeat(200), "]".repeat(200))), vec!["deep-in-vars.json:2:", "nested more than 100 levels deep"]),
        ("float-out-of-range", edit(r#""goal": "g","#, r#""goal": "g", "max_steps": 1e400,"#), vec!["float-out-of-range.json:2:", "the number 1e400 is out of range", "at: max_steps"]),
        ("integer-too-large", edit(r#""goal": "g","#, r#""goal": "g", "max_steps": 99999999999999999999999,"#), vec!["integer-too-large.json:2:", "the number 99999999999999999999999 is out of range, expected u32 (a whole number from 0 to 4294967295)", "at: max_steps"]),
        ("carve-out-of-range", edit(r#"{"type": "transition", "to": "explore"}"#, r#"{"type": "delegate", "goal": "look", "budget": {"tool_calls": 18446744073709551616}}"#), vec!["carve-out-of-range.json:12:", "the number 18446744073709551616 is out of range, expected u64 (a whole number from 0 to 18446744073709551615)", "at: planner.scripted[0].decision.budget.tool_calls"]),
        ("budget-out-of-range", edit(r#""tool_calls": 3"#, r#""tool_calls": 1e400"#), vec!["budget-out-of-range.json:9:", "the number 1e400 is out of range", "at: policies.budgets.tool_calls"]),
        ("vars-not-an-object", edit(r#""goal": "g","#, r#""goal": "g", "vars": [1,2],"#), vec!["vars-not-an-object.json:2:", "invalid type: sequence, expected a map", "at: vars"]),
        ("vars-not-an-object-tight", edit(r#""goal": "g","#, r#""goal": "g", "vars":[1,2],"#), vec!["vars-not-an-object-tight.json:2:", "at: vars"]),
        ("script-not-a-list", edit("{\"scripted\": [\n    {\"expect\": \"intake\", \"decision\": {\"type\": \"transition\", \"to\": \"explore\"}}\n  ]}", r#"{"scripted": {}}"#), vec!["script-not-a-list.json:11:", "expected a sequence", "at: planner.scripted"]),
        ("approver-a-number", edit(r#""goal": "g","#, r#""goal": "g", "approver": 5,"#), vec!["approver-a-number.json:2:", "invalid type: `5`, expected a name (a string) or an object", "at: approver", "help: approver is"]),
        ("expect-a-number", edit(r#""expect": "intake""#, r#""expect": 5"#), vec!["expect-a-number.json:12:", "invalid type: `5`", "at: planner.scripted[0].expect"]),
        ("zero-retries", edit(r#""goal": "g","#, r#""goal": "g", "resilience": {"retry": {"max_attempts": 0}},"#), vec!["zero-retries.json:2:", "expected a nonzero u32", "at: resilience.retry.max_attempts"]),
    ];
    assert!(cases.len() >= 20);
    let problems: Vec<String> = cases
        .iter()
        .flat_map(|(name, text, expect)| check(name, text, expect))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_missing_workspace_is_located() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "no-workspace.json",
        &edit(r#""workspace": "workspace""#, r#""workspace": "nowhere""#),
    );
    let outcome = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    outcome.expect_code(2).stderr_has(&[
        "no-workspace.json:3:",
        "nowhere",
        "at: workspace",
        "relative to the scenario file",
    ]);
    // File tools without any workspace.
    let file = scratch.write(
        "unconfined.json",
        &edit("  \"workspace\": \"workspace\",\n", ""),
    );
    let outcome = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    outcome.expect_code(2).stderr_has(&[
        "unconfined.json:4:",
        "built-in `fs.read` needs a workspace",
        "at: tools[0].builtin",
        "--workspace DIR",
    ]);
}

#[test]
fn a_file_that_cannot_be_read_is_named() {
    let outcome = Outcome::of(
        &rein()
            .args(["validate", "no/such/scenario.json"])
            .output()
            .unwrap(),
    );
    outcome
        .expect_code(2)
        .stderr_has(&["no/such/scenario.json: cannot read the scenario: no such file"]);
}

#[test]
fn calling_an_undeclared_tool_is_a_warning_not_an_error() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "warn.json",
        &edit(
            r#"{"type": "transition", "to": "explore"}"#,
            r#"{"type": "call_tool", "tool": "ghost", "input": {}}"#,
        ),
    );
    let outcome = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    outcome
        .expect_code(0)
        .stderr_has(&["warning: planner.scripted[0].decision calls `ghost`"]);
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let scratch = Scratch::new();
    let file = scratch.write("bom.json", &format!("\u{feff}{BASE}"));
    let outcome = Outcome::of(
        &rein()
            .arg("validate")
            .arg(&file)
            .arg("--workspace")
            .arg(scratch.dir.path().join("scenarios/workspace"))
            .output()
            .unwrap(),
    );
    outcome.expect_code(0).stdout_has(&["bom.json: valid ✓"]);
}

/// Issue 10 item 2: 50 000 `[` used to overflow the stack of a debug build (and take 24 GB
/// in release); a 20 MB file of `[` must be refused without being built.
#[test]
fn hostile_nesting_and_size_are_refused_before_anything_is_built() {
    let scratch = Scratch::new();
    let deep = scratch.write("deep.json", &"[".repeat(50_000));
    let outcome = Outcome::of(&rein().arg("validate").arg(&deep).output().unwrap());
    outcome.expect_code(2).stderr_has(&[
        "deep.json:1:101: arrays and objects are nested more than 100 levels deep here",
    ]);
    let huge = scratch.write("huge.json", &"[".repeat(20 * 1024 * 1024));
    let outcome = Outcome::of(&rein().arg("validate").arg(&huge).output().unwrap());
    outcome
        .expect_code(2)
        .stderr_has(&["huge.json: the file is larger than 4 MiB, the most a scenario file may be"]);
    // Just under the cap, nested all the way: the depth bound answers, in this process
    // too (the library entry point the fuzz target uses; a test thread has a small stack).
    let text = "{".repeat(4 * 1024 * 1024 - 1);
    let error = rein_cli::check_scenario(&text, std::path::Path::new(".")).unwrap_err();
    assert_eq!(error.line_column(), Some((1, 101)));
    let error = rein_cli::check_scenario(&text.repeat(2), std::path::Path::new(".")).unwrap_err();
    assert!(error.message().starts_with("the file is larger than 4 MiB"));
    let flat = format!("[{}1]", "1,".repeat(1_000_000));
    let error = rein_cli::check_scenario(&flat, std::path::Path::new(".")).unwrap_err();
    assert_eq!(error.message(), "a scenario file holds one JSON object");
}

#[test]
fn validate_checks_each_call_of_a_batch() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "batch.json",
        r#"{
  "goal": "look twice",
  "tools": [{"fixture": "search", "annotations": {"read_only": true}, "behavior": "echo"}],
  "planner": {"scripted": [
    {"decision": {"type": "transition", "to": "explore"}},
    {"decision": {"type": "call_tools", "calls": [
      {"tool": "search", "input": {"q": "a"}},
      {"tool": "serach", "input": {"q": "b"}}
    ]}},
    {"decision": {"type": "fail", "reason": "stop"}}
  ]}
}"#,
    );
    let outcome = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    outcome.expect_code(0).stderr_has(&[
        "planner.scripted[1].decision.calls[1] calls `serach`, which no tool in the scenario provides",
    ]);
}

#[test]
fn validate_checks_each_member_of_a_sequence() {
    let scratch = Scratch::new();
    let file = scratch.write(
        "sequence.json",
        r#"{
  "goal": "look, then stop",
  "tools": [{"fixture": "search", "annotations": {"read_only": true}, "behavior": "echo"}],
  "planner": {"scripted": [
    {"decision": {"type": "sequence", "decisions": [
      {"type": "transition", "to": "explore"},
      {"type": "call_tools", "calls": [{"tool": "search", "input": {"q": "a"}}, {"tool": "serach", "input": {"q": "b"}}]},
      {"type": "fail", "reason": "stop"}
    ]}}
  ]}
}"#,
    );
    let outcome = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    outcome.expect_code(0).stderr_has(&[
        "planner.scripted[0].decision.decisions[1].calls[1] calls `serach`, which no tool in the scenario provides",
    ]);
}

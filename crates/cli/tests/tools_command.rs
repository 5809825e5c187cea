//! `rein tools`: every built-in tool with its annotations, the states the default policy
//! lets it run in, and whether it needs approval.

mod support;

use serde_json::Value;
use support::{Outcome, rein};

#[test]
fn every_builtin_is_listed_with_where_it_runs_and_whether_it_asks() {
    let outcome = Outcome::of(&rein().args(["tools", "--json"]).output().unwrap());
    outcome.expect_code(0);
    let rows: Vec<Value> = serde_json::from_str(&outcome.stdout).unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .clone()
    };
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "fs.read",
            "fs.list",
            "fs.glob",
            "fs.grep",
            "fs.write",
            "fs.edit",
            "fs.delete",
            "shell.run",
            "http.fetch",
            "skill.load"
        ]
    );
    for name in [
        "fs.read",
        "fs.list",
        "fs.glob",
        "fs.grep",
        "skill.load",
        "http.fetch",
    ] {
        let r = row(name);
        assert_eq!(r["read_only"], true, "{name}");
        assert_eq!(
            r["states"],
            serde_json::json!(["explore", "act", "validate"]),
            "{name}"
        );
        assert_eq!(r["approval"], Value::Null, "{name}");
    }
    for name in ["fs.write", "fs.edit", "fs.delete", "shell.run"] {
        let r = row(name);
        assert_eq!(r["states"], serde_json::json!(["act"]), "{name}");
        assert!(r["approval"].is_string(), "{name} asks");
    }
    assert_eq!(row("fs.delete")["destructive"], true);
    // Both are declarable in scenario files, with the configuration they need.
    let shell = row("shell.run");
    assert!(
        shell["scenarios"]
            .as_str()
            .unwrap()
            .contains("\"shell\": {\"allow\"")
    );
    let http = row("http.fetch");
    assert!(
        http["scenarios"]
            .as_str()
            .unwrap()
            .contains("\"http\": {\"allow_hosts\"")
    );
    assert!(
        http["scenarios"]
            .as_str()
            .unwrap()
            .contains("allows nothing")
    );

    let text = Outcome::of(&rein().arg("tools").output().unwrap());
    text.expect_code(0).stdout_has(&[
        "fs.grep",
        "runs in      explore, act, validate",
        "approval     yes (the tool is destructive)",
    ]);
}

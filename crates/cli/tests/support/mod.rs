//! Helpers shared by the CLI's integration tests: the `rein` binary, a scratch copy of the
//! example scenarios, and a run's outcome.

// Each test file uses a different subset of these helpers; `pub` is for readability.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub mod mcp;
pub mod pg;

/// The `rein` binary under test.
pub fn rein() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_remove("RUST_LOG");
    cmd
}

/// The repository's `examples/scenarios` folder.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios")
}

/// A scratch directory holding a copy of the example scenarios (so runs never write into
/// the source tree) and room for a data directory.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    /// Copies `examples/scenarios` into a fresh temporary directory.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&examples_dir(), &dir.path().join("scenarios"));
        Self { dir }
    }

    /// The copy of example scenario `name` (e.g. `"happy-path.json"`).
    pub fn scenario(&self, name: &str) -> PathBuf {
        self.dir.path().join("scenarios").join(name)
    }

    /// Writes a scenario file named `name` next to the copied examples.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.scenario(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The data directory the tests use.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// `rein run SCENARIO --data-dir DATA` for example `name`, with `extra` arguments.
    pub fn run(&self, name: &str, extra: &[&str]) -> Outcome {
        let output = rein()
            .arg("run")
            .arg(self.scenario(name))
            .arg("--data-dir")
            .arg(self.data())
            .args(extra)
            .output()
            .unwrap();
        Outcome::of(&output)
    }

    /// The only run id in the data directory that was not in `before`.
    pub fn new_run_id(&self, before: &[String]) -> String {
        let ids = self.run_ids();
        let new: Vec<_> = ids.into_iter().filter(|id| !before.contains(id)).collect();
        assert_eq!(new.len(), 1, "expected exactly one new run, found {new:?}");
        new[0].clone()
    }

    /// The run ids in the data directory.
    pub fn run_ids(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.data().join("ledgers")) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|n| n.strip_suffix(".jsonl").map(str::to_owned))
            .collect();
        ids.sort();
        ids
    }

    /// The ledger file of run `id`.
    pub fn ledger(&self, id: &str) -> PathBuf {
        self.data().join("ledgers").join(format!("{id}.jsonl"))
    }
}

/// What a command did.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn of(output: &std::process::Output) -> Self {
        Self {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Asserts the exit code, showing both streams when it is wrong.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Asserts that stdout contains every one of `parts`.
    pub fn stdout_has(&self, parts: &[&str]) -> &Self {
        for part in parts {
            assert!(
                self.stdout.contains(part),
                "stdout lacks {part:?}\n--- stdout\n{}\n--- stderr\n{}",
                self.stdout,
                self.stderr
            );
        }
        self
    }

    /// Asserts that stderr contains every one of `parts`.
    pub fn stderr_has(&self, parts: &[&str]) -> &Self {
        for part in parts {
            assert!(
                self.stderr.contains(part),
                "stderr lacks {part:?}\n--- stdout\n{}\n--- stderr\n{}",
                self.stdout,
                self.stderr
            );
        }
        self
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() == "out" {
                continue;
            }
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every example scenario file name.
pub fn example_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            std::path::Path::new(n)
                .extension()
                .is_some_and(|e| e == "json")
        })
        .collect();
    names.sort();
    names
}

/// A scenario whose one destructive call (`db.drop_table`, critical) waits under a durable
/// approval policy (a day's timeout); `goal` is the run's goal. `rein approve`'s and
/// `rein serve`'s tests share it.
pub fn durable_drop_table(goal: &str) -> String {
    let goal = serde_json::to_string(goal).expect("a string serialises");
    r#"{
  "description": "A destructive call under a durable approval policy: the run pauses until `rein approve`",
  "goal": "GOAL",
  "policies": {"approvals": {"mode": "durable", "timeout_ms": 86400000}},
  "tools": [
    {
      "fixture": "db.drop_table",
      "description": "Drops a database table",
      "annotations": {"destructive": true, "risk_level": "critical"},
      "input_schema": {"type": "object", "properties": {"table": {"type": "string"}}, "required": ["table"]},
      "behavior": {"output": {"dropped": true}}
    }
  ],
  "planner": {
    "scripted": [
      {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}},
      {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "nothing to look up"}},
      {"expect": "decide", "decision": {"type": "transition", "to": "act", "reason": "drop it"}},
      {"expect": "act", "decision": {"type": "call_tool", "tool": "db.drop_table", "input": {"table": "orders_2019"}, "reason": "the table is stale"}},
      {"expect": "act", "decision": {"type": "transition", "to": "validate", "reason": "dropped"}},
      {"expect": "validate", "decision": {"type": "finish", "summary": "table dropped"}}
    ]
  }
}"#.replace("\"GOAL\"", &goal)
}

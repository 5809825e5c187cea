//! What a shell command hook costs a tool call (docs/BENCHMARKS.md, "a shell hook"): `rein
//! run` of a scripted scenario making `CALLS` tool calls, with a `before_tool` command hook
//! running a few lines of `sh` and without, next to spawning the same `sh` script `CALLS`
//! times with the same payload on its stdin (what any hook runner pays at least). The
//! difference between the two runs, per call, is the hook's cost inside rein.
//!
//! Run with: `cargo bench -p rein-cli --bench shell_hook` (about a minute).

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;

/// Tool calls a run makes, each with the hook asked before it.
const CALLS: usize = 40;
/// Repetitions of every timed batch; figures are the median with the min–max.
const REPS: usize = 7;

/// The hook: reads its payload, allows unless the tool is `forbidden`.
const SCRIPT: &str = "payload=$(cat)\ncase \"$payload\" in\n  *'\"tool\":\"forbidden\"'*) echo no >&2; exit 2 ;;\nesac\nexit 0\n";

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("allow.sh"), SCRIPT).expect("the script is written");
    let scenario = |hooked: bool| {
        let file = dir
            .path()
            .join(if hooked { "hooked.json" } else { "bare.json" });
        std::fs::write(&file, scenario_text(hooked)).expect("the scenario is written");
        file
    };
    let (hooked, bare) = (scenario(true), scenario(false));
    let data = dir.path().join("data");
    let payload = serde_json::to_vec(&json!({
        "point": "before_tool", "run": "r", "step": 1, "state": "explore",
        "tool": "look", "input": {"q": 1}, "used": {"steps": 1, "tool_calls": 0}
    }))
    .expect("a payload");

    let mut rein_hooked = Vec::new();
    let mut rein_bare = Vec::new();
    let mut spawned = Vec::new();
    // Alternated, so that load from elsewhere on the machine falls on all three.
    for _ in 0..REPS {
        rein_hooked.push(rein_run(&hooked, &data));
        rein_bare.push(rein_run(&bare, &data));
        spawned.push(spawn_all(dir.path(), &payload));
    }
    let per_call = |hooked: &[f64], bare: &[f64]| {
        Figure::of(
            hooked
                .iter()
                .zip(bare)
                .map(|(h, b)| (h - b) / CALLS as f64 * 1e3)
                .collect(),
        )
    };
    let hook = per_call(&rein_hooked, &rein_bare);
    let spawn = Figure::of(spawned.iter().map(|s| s / CALLS as f64 * 1e3).collect());
    println!(
        "shell hook: `rein run` of {CALLS} tool calls with a before_tool `sh` hook and without, \
         against {CALLS} bare spawns of the same script ({REPS} repetitions, alternating)"
    );
    println!(
        "    rein run, hooked   {}",
        Figure::of(rein_hooked).scaled(1e3).show("ms")
    );
    println!(
        "    rein run, no hook  {}",
        Figure::of(rein_bare).scaled(1e3).show("ms")
    );
    println!("    hook, per call     {}", hook.show("ms"));
    println!("    bare spawn         {}", spawn.show("ms"));
    println!("    hook / spawn       {:.2}x", hook.median / spawn.median);
}

/// A scripted scenario making `CALLS` calls of the read-only fixture `look`, with a
/// `before_tool` hook running `sh allow.sh` when `hooked`.
fn scenario_text(hooked: bool) -> String {
    let mut script = vec![json!({"expect": "intake", "decision":
        {"type": "transition", "to": "explore", "reason": "start"}})];
    script.extend((0..CALLS).map(|i| {
        json!({"expect": "explore", "decision":
            {"type": "call_tool", "tool": "look", "input": {"q": i}, "reason": "look"}})
    }));
    script.push(json!({"expect": "explore", "decision":
        {"type": "transition", "to": "decide", "reason": "seen"}}));
    script.push(json!({"expect": "decide", "decision":
        {"type": "finish", "summary": "looked", "result": 1}}));
    let mut scenario = json!({
        "goal": "Look often",
        "tools": [{"fixture": "look", "annotations": {"read_only": true}, "behavior": "echo"}],
        "max_steps": 1000,
        "policies": {"budgets": {"tool_calls": 1000, "steps": 1000}},
        "planner": {"scripted": script}
    });
    if hooked {
        scenario["hooks"] = json!([{"name": "guard", "point": "before_tool", "match": "look",
            "command": ["sh", "allow.sh"]}]);
    }
    scenario.to_string()
}

/// `rein run SCENARIO --data-dir DATA --quiet`: its wall time in seconds.
fn rein_run(scenario: &Path, data: &Path) -> f64 {
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_rein"))
        .arg("run")
        .arg(scenario)
        .arg("--data-dir")
        .arg(data)
        .arg("--quiet")
        .stdout(Stdio::null())
        .env_remove("RUST_LOG")
        .status()
        .expect("rein runs");
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        status.success(),
        "rein run {} failed: {status}",
        scenario.display()
    );
    seconds
}

/// `sh allow.sh` spawned `CALLS` times in `dir` with a cleared environment, `payload` on
/// its stdin, its output read: the seconds it took.
fn spawn_all(dir: &Path, payload: &[u8]) -> f64 {
    let start = Instant::now();
    for _ in 0..CALLS {
        let mut child = Command::new("sh")
            .arg("allow.sh")
            .current_dir(dir)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh starts");
        child
            .stdin
            .take()
            .expect("a stdin")
            .write_all(payload)
            .expect("the payload is written");
        let output = child.wait_with_output().expect("sh ends");
        assert!(output.status.success(), "the script allows");
    }
    start.elapsed().as_secs_f64()
}

/// A median and its range.
#[derive(Debug, Clone, Copy)]
struct Figure {
    median: f64,
    min: f64,
    max: f64,
}

impl Figure {
    fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        Self {
            median: samples[samples.len() / 2],
            min: samples[0],
            max: samples[samples.len() - 1],
        }
    }

    fn scaled(self, k: f64) -> Self {
        Self {
            median: self.median * k,
            min: self.min * k,
            max: self.max * k,
        }
    }

    fn show(self, unit: &str) -> String {
        format!(
            "{:.3} {unit} ({:.3} – {:.3})",
            self.median, self.min, self.max
        )
    }
}

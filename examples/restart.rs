//! Run with: cargo run -p rein-examples --example restart
//!
//! Durability across processes. The example runs itself twice as child processes over one
//! data directory: the first process starts a run that reads a page, asks a question and
//! pauses, then exits; the second process is a fresh engine over the same directory that
//! answers and resumes the run. The budget and the ledger continue where the first left off.

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rein::RunId;
use rein::prelude::*;
use rein::run::BudgetName;

type Error = Box<dyn std::error::Error>;

/// The same engine in both processes: same tools, planner and policies, on `dir`.
fn engine(dir: &Path) -> Result<Engine, Error> {
    let read = FnTool::builder("read_page")
        .annotations(Annotations::read_only())
        .handler(|input: Value| async move {
            println!(
                "    [pid {}] reading page {}",
                std::process::id(),
                input["page"]
            );
            Ok(json!({"page": input["page"], "words": 250}))
        })
        .build()?;
    let engine = Engine::builder()
        .tool(read)
        .filesystem(dir)
        .budget("tool_calls", 5)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("read_page", json!({"page": 1}), "first page"),
            ),
            ScriptStep::expect(
                State::Explore,
                Decision::ask_human("Read page 2 as well?", ["yes", "no"]),
            ),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("read_page", json!({"page": 2}), "second page"),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "read")),
            ScriptStep::expect(
                State::Decide,
                Decision::finish("read two pages", json!({"pages": 2})),
            ),
        ]))
        .build()?;
    Ok(engine)
}

/// First process: start the run, stop at the question, print the run id for the parent.
async fn first(dir: &Path) -> Result<(), Error> {
    let engine = engine(dir)?;
    let run = engine.run("Read the report").await?;
    println!(
        "    [pid {}] run is {} asking {:?}; tool calls used: {}",
        std::process::id(),
        run.status(),
        run.pending_question().map(|q| q.question.as_str()),
        run.usage().used(&BudgetName::TOOL_CALLS)
    );
    println!("RUN_ID={}", run.id());
    Ok(())
}

/// Second process: a fresh engine on the same directory answers and resumes.
async fn second(dir: &Path, id: &RunId) -> Result<(), Error> {
    let engine = engine(dir)?;
    let run = engine.resume_with_input(id, "yes").await?;
    let ledger = engine.ledger(id).await?;
    ledger.verify()?;
    println!(
        "    [pid {}] run is {}: {}; tool calls used: {}; ledger has {} entries, verified",
        std::process::id(),
        run.status(),
        run.summary().unwrap_or("-"),
        run.usage().used(&BudgetName::TOOL_CALLS),
        ledger.len()
    );
    Ok(())
}

/// Runs this example again as a child process with `args`; returns what it printed.
fn child(args: &[&str]) -> Result<String, Error> {
    let output = Command::new(std::env::current_exe()?).args(args).output()?;
    let stdout = String::from_utf8(output.stdout)?;
    print!("{stdout}");
    if !output.status.success() {
        return Err(format!(
            "child {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(stdout)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["first", dir] => first(Path::new(dir)).await,
        ["second", dir, id] => second(Path::new(dir), &id.parse()?).await,
        [] => {
            let dir: PathBuf =
                std::env::temp_dir().join(format!("rein-restart-example-{}", std::process::id()));
            let dir_arg = dir.to_str().ok_or("the temp dir is not UTF-8")?;
            println!("data directory: {}", dir.display());
            println!("process 1:");
            let out = child(&["first", dir_arg])?;
            let id = out
                .lines()
                .find_map(|l| l.strip_prefix("RUN_ID="))
                .ok_or("the first process printed no run id")?;
            println!("process 1 exited; process 2:");
            let result = child(&["second", dir_arg, id]);
            std::fs::remove_dir_all(&dir)?;
            result.map(|_| ())
        }
        _ => Err("usage: restart [first DIR | second DIR RUN_ID]".into()),
    }
}

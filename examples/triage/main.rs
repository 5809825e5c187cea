//! Run with: `OPENAI_API_KEY`=… REIN_LLM_MODEL=gpt-4o-mini cargo run -p rein-examples --example triage -- REPORTS [`RUN_ID`]
//!
//! The triage agent of `agent.rs`, driven by a model from the environment (`OPENAI_API_KEY`
//! or `ANTHROPIC_API_KEY`, or `OPENAI_BASE_URL` for a local server, and `REIN_LLM_MODEL`):
//! it reads the bug reports in the folder REPORTS, scores them, and writes `REPORTS/triage.md`
//! once you answer `y` on the terminal. Every entry prints as the run records it. The run and
//! its ledger are kept in `REPORTS/../.triage`: after a crash (even `kill -9`), run it again
//! with the run id it printed and it continues where the ledger stops. Its tests, with a
//! scripted planner and against the fake model server, are in `tests/triage.rs`.

#![allow(clippy::print_stdout)]

mod agent;

use std::path::PathBuf;

use rein::llm::{HttpProvider, LlmConfig, LlmPlanner};
use rein::{ApprovalRequest, ApprovalResponse, ApproverError, RunEvent, RunId};

/// Asks on the terminal whether a call that needs approval may run: `y` grants it.
#[derive(Debug)]
struct Terminal;

impl rein::Approver for Terminal {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        println!(
            "may `{}` run with {}? [y/N]",
            request.tool(),
            request.input()
        );
        let mut line = String::new();
        let read = tokio::task::spawn_blocking(move || {
            std::io::stdin().read_line(&mut line).map(|_| line)
        });
        Ok(match read.await {
            Ok(Ok(answer)) if answer.trim() == "y" => {
                ApprovalResponse::grant(request, "terminal", "answered y")
            }
            _ => ApprovalResponse::deny(request, "terminal", "not answered y"),
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(reports) = args.next().map(PathBuf::from) else {
        println!("usage: triage REPORTS [RUN_ID]  (REPORTS: a folder of bug reports)");
        return Ok(());
    };
    let provider = match HttpProvider::from_env() {
        Ok(provider) => provider,
        Err(e) => {
            println!("{e}");
            return Ok(());
        }
    };
    let planner = LlmPlanner::new(provider, LlmConfig::default()).with_instructions(
        "You triage bug reports: read each report in the folder, score it with triage.score, \
         then write triage.md, a table of the reports by priority, and finish.",
    );
    let data = reports.join("../.triage");
    let engine = agent::engine(&reports, &data, planner, Terminal)?;
    let handle = match args.next() {
        Some(id) => engine.start_resume(&id.parse::<RunId>()?, None).await?,
        None => {
            engine
                .start("Triage the bug reports in this folder")
                .await?
        }
    };
    println!(
        "run {} (to resume it: triage REPORTS {})",
        handle.id(),
        handle.id()
    );
    let mut events = handle.subscribe();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            match event {
                RunEvent::Recorded(entry) => println!("{entry}"),
                RunEvent::Missed(n) => println!("(missed {n} events; the ledger has them all)"),
                _ => {}
            }
        }
    });
    let run = handle.await?;
    printer.await?;
    println!("{}: {}", run.status(), run.summary().unwrap_or("-"));
    engine.ledger(run.id()).await?.verify()?;
    Ok(())
}

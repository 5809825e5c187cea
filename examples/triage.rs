//! Run with: `OPENAI_API_KEY`=… REIN_LLM_MODEL=gpt-4o-mini cargo run -p rein-examples --example triage
//!
//! A downstream team's first governed agent: one typed tool (its schema derived from the
//! Rust types), a model from the environment (`OPENAI_API_KEY` or `ANTHROPIC_API_KEY`, or
//! `OPENAI_BASE_URL` for a local server, and `REIN_LLM_MODEL`), budgets, and a verified
//! ledger. The model's mistakes and tool errors go back to it (at most 3 refusals).

#![allow(clippy::print_stdout)]

use rein::llm::{HttpProvider, LlmConfig, LlmPlanner};
use rein::prelude::*;
use rein::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

/// A support ticket.
#[derive(Deserialize, JsonSchema)]
struct Ticket {
    /// What the customer wrote.
    title: String,
    /// How bad the customer says it is, 1 (mild) to 5 (down).
    severity: u8,
}

/// Where the ticket goes.
#[derive(Serialize, JsonSchema)]
struct Score {
    /// 1 is the most urgent.
    priority: u8,
    queue: &'static str,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = match HttpProvider::from_env() {
        Ok(provider) => provider,
        Err(e) => {
            println!("{e}");
            return Ok(());
        }
    };
    let score = FnTool::builder("triage.score")
        .description("Scores a support ticket: its priority and queue")
        .annotations(Annotations::read_only())
        .typed_handler(|t: Ticket| async move {
            let outage = t.title.to_lowercase().contains("down") || t.severity >= 5;
            let queue = if outage { "oncall" } else { "support" };
            let priority = if outage { 1 } else { 6 - t.severity.min(5) };
            Ok(Score { priority, queue })
        })
        .build()?;
    let planner = LlmPlanner::new(provider, LlmConfig::default()).with_system_prompt(
        "You triage support tickets: score each with triage.score, then finish.",
    );
    let engine = Engine::builder()
        .tool(score)
        .planner(planner)
        .budget("tokens", 20_000)
        .budget("tool_calls", 5)
        .max_steps(12)
        .build()?;
    let run = engine
        .run("Triage: \"Checkout is down for every EU customer\" (severity 4)")
        .await?;
    println!("{:?}: {:?}", run.status(), run.result());
    let ledger = engine.ledger(run.id()).await?;
    ledger.verify()?;
    for entry in ledger.entries() {
        println!("{entry}");
    }
    Ok(())
}

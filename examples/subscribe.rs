//! Run with: cargo run -p rein-examples --example subscribe
//!
//! Watch a run live: start it on its own task, subscribe to its events, steer it while it
//! goes, and print each entry as the run records it and, beside them, the typed events a UI
//! follows (a step started, a tool started and finished, a transition, the run's end).
//! Events are a lossy live view (a slow subscriber is told how many it missed); the ledger
//! is the lossless record.

#![allow(clippy::print_stdout)]

use std::time::Duration;

use rein::RunEvent;
use rein::planner::Condition;
use rein::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let search = FnTool::builder("search")
        .annotations(Annotations::read_only())
        .handler(|input: Value| async move {
            // A slow service, so steering arrives while the call is in flight.
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(json!({"hits": 3, "query": input["q"]}))
        })
        .build()?;
    let engine = Engine::builder()
        .tool(search)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("search", json!({"q": "rust agents"}), "look"),
            ),
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Decide, "steered to stop"),
            )
            .when(
                Condition::EvidenceContains("enough".into()),
                Decision::fail("no steering arrived"),
            ),
            ScriptStep::expect(
                State::Decide,
                Decision::finish("found it", json!({"hits": 3})),
            ),
        ]))
        .build()?;

    let handle = engine.start("Find articles").await?;
    let mut events = handle.subscribe();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            match event {
                // Every entry, one line each: `#3 explore: tool call search {"q":…} (attempt 1)`.
                RunEvent::Recorded(entry) => println!("    {entry}"),
                RunEvent::Missed(n) => println!("(missed {n} events; read the ledger for all)"),
                // A model's reply streaming in (an LLM planner with a streaming provider).
                RunEvent::ModelDelta(piece) => print!("{}", piece.delta),
                // The typed events: `step 1 in explore`, `tool search started (attempt 1)`, …
                typed => println!("» {typed}"),
            }
        }
    });

    handle.steer("that is enough searching");
    let run = handle.await?;
    printer.await?;
    println!(
        "run {} is {}: {}",
        run.id(),
        run.status(),
        run.summary().unwrap_or("-")
    );
    Ok(())
}

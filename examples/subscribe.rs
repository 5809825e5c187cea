//! Run with: cargo run -p rein-examples --example subscribe
//!
//! Watch a run live: start it on its own task, subscribe to its events, steer it while it
//! goes, and print each entry as the run records it. Events are a lossy live view (a slow
//! subscriber is told how many it missed); the ledger is the lossless record.

#![allow(clippy::print_stdout)]

use std::time::Duration;

use rein::RunEvent;
use rein::ledger::EntryKind;
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
                RunEvent::Recorded(entry) => {
                    let detail = match entry.event() {
                        EntryKind::Decision { decision, .. } => decision.kind().to_owned(),
                        EntryKind::Transition { from, to, .. } => format!("{from} → {to}"),
                        EntryKind::ToolResult { tool, .. } => tool.to_string(),
                        EntryKind::Steering { note } => format!("{note:?}"),
                        _ => String::new(),
                    };
                    let (seq, state, kind) =
                        (entry.seq(), entry.state().as_str(), entry.event().name());
                    println!("#{seq:<2} {state:<8} {kind:<16} {detail}");
                }
                RunEvent::Missed(n) => println!("(missed {n} events; read the ledger for all)"),
                _ => {}
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

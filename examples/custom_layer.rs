//! Run with: cargo run -p rein-examples --example `custom_layer`
//!
//! A tower layer of your own around every tool call — here, one that logs each call's input
//! and how long the tool took. It runs inside the policy layers: a call the policies refuse
//! never reaches it.

use std::time::Instant;

use rein::layer::{MapRequestLayer, ToolCall};
use rein::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let greet = FnTool::builder("greet")
        .description("Greets a person by name")
        .annotations(Annotations::read_only())
        .handler(|input: Value| async move {
            Ok(json!({"message": format!("Hello, {}!", input["name"])}))
        })
        .build()?;
    let started = Instant::now();
    let engine = Engine::builder()
        .tool(greet)
        .layer(MapRequestLayer::new(move |call: ToolCall| {
            eprintln!(
                "[{:>5} µs] tool call, attempt {}: {}",
                started.elapsed().as_micros(),
                call.attempt(),
                call.input()
            );
            call
        }))
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("greet", json!({"name": "World"}), "greet"),
            ),
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Decide, "have it"),
            ),
            ScriptStep::expect(State::Decide, Decision::finish("greeted", json!("ok"))),
        ]))
        .build()?;
    let run = engine.run("Say hello, with a log").await?;
    eprintln!("run {} is {}", run.id(), run.status());
    Ok(())
}

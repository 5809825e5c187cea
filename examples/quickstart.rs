//! Run with: cargo run -p rein-examples --example quickstart
//!
//! The smallest governed run: one read-only tool, a scripted planner, a budget. The engine
//! checks every decision, runs the tool, and records each step in a hash-chained ledger.

// An example's job is to print what happened.
#![allow(clippy::print_stdout)]

use rein::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let greet = FnTool::builder("greet")
        .description("Greets a person by name")
        .annotations(Annotations::read_only())
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
        .handler(|input: Value| async move {
            let name = input["name"].as_str().unwrap_or("stranger");
            Ok(json!({"message": format!("Hello, {name}!")}))
        })
        .build()?;

    let engine = Engine::builder()
        .tool(greet)
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
            ScriptStep::expect(
                State::Decide,
                Decision::finish("greeted", json!({"status": "done"})),
            ),
        ]))
        .budget("tool_calls", 10)
        .max_steps(20)
        .build()?;

    let run = engine.run("Say hello").await?;
    println!("run {} is {} in {}", run.id(), run.status(), run.state());
    println!("  summary:  {}", run.summary().unwrap_or("-"));
    println!("  result:   {}", run.result().unwrap_or(&Value::Null));
    println!("  steps:    {}", run.steps());
    for evidence in run.evidence() {
        println!("  evidence: {}", serde_json::to_string(&evidence.kind)?);
    }

    let ledger = engine.ledger(&run.id).await?;
    for entry in ledger.entries() {
        println!(
            "  #{:<2} {:<8} {}",
            entry.seq(),
            entry.state().as_str(),
            entry.event().name()
        );
    }
    ledger.verify()?;
    println!("ledger verified ({} entries)", ledger.len());
    Ok(())
}

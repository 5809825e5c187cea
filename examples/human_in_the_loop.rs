//! Run with: cargo run -p rein-examples --example `human_in_the_loop` [yes|no]
//!
//! A run that pauses to ask a person, then continues with the answer: the question is
//! persisted with the run, the answer is checked against the options offered, and the run
//! continues with the same budget and the same ledger.

#![allow(clippy::print_stdout)]

use rein::EngineError;
use rein::planner::Condition;
use rein::prelude::*;
use rein::run::BudgetName;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let answer = std::env::args().nth(1).unwrap_or_else(|| "yes".to_owned());
    let deploy = FnTool::builder("deploy")
        .annotations(Annotations::side_effecting())
        .handler(|input: Value| async move { Ok(json!({"deployed": input["version"]})) })
        .build()?;
    let engine = Engine::builder()
        .tool(deploy)
        .budget("tool_calls", 3)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            ScriptStep::expect(
                State::Explore,
                Decision::ask_human("Deploy v2 to production?", ["yes", "no"]),
            ),
            ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "asked")),
            ScriptStep::expect(State::Decide, Decision::transition(State::Act, "approved")).when(
                Condition::LastAnswerIs("yes".into()),
                Decision::finish("not deployed", json!(null)),
            ),
            ScriptStep::expect(
                State::Act,
                Decision::call_tool("deploy", json!({"version": "v2"}), "ship"),
            ),
            ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
            ScriptStep::expect(State::Validate, Decision::finish("deployed", json!("v2"))),
        ]))
        .build()?;

    let paused = engine.run("Ship v2").await?;
    let question = paused
        .pending_question()
        .ok_or("the run should be waiting for an answer")?;
    println!(
        "run {} is {}: {:?} {:?}",
        paused.id(),
        paused.status(),
        question.question,
        question.options
    );

    // A wrong answer is refused and changes nothing.
    if let Err(EngineError::InvalidAnswer { source, .. }) =
        engine.resume_with_input(&paused.id, "maybe").await
    {
        println!("answer \"maybe\" refused: {source}");
    }

    println!("answering {answer:?}");
    let run = engine.resume_with_input(&paused.id, &answer).await?;
    println!(
        "run {} is {}: {} (tool calls used: {})",
        run.id(),
        run.status(),
        run.summary().unwrap_or("-"),
        run.usage().used(&BudgetName::TOOL_CALLS)
    );
    let ledger = engine.ledger(&run.id).await?;
    ledger.verify()?;
    println!("one ledger, {} entries, verified", ledger.len());
    Ok(())
}

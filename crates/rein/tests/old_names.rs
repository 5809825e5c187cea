//! Code written against an earlier README still compiles through the prelude: the closure
//! tool's old names (`Tool`, `ToolBuilder`) are deprecated aliases of `FnTool` for one release.

// A user keeping the old names silences the warning exactly like this.
#![allow(deprecated)]

use rein::prelude::*;

/// The README's example as it was written before the closure tool became `FnTool`.
#[tokio::test]
async fn the_old_readme_example_compiles_and_runs_through_the_prelude()
-> Result<(), Box<dyn std::error::Error>> {
    let greet: Tool = Tool::builder("greet")
        .description("Greets a person by name")
        .annotations(Annotations::read_only())
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
        .handler(|input: Value| async move { Ok(json!({"message": format!("Hello, {}!", input["name"])})) })
        .build()?;
    let _builder: fn(&str) -> ToolBuilder = |name| Tool::builder(name);

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
    engine.ledger(&run.id).await?.verify()?;
    assert_eq!(run.status(), RunStatus::Completed);
    Ok(())
}

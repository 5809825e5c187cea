//! Run with: `OPENAI_BASE_URL=http://127.0.0.1:8080/v1` `REIN_LLM_MODEL=local` cargo run -p rein-examples --example `llm_agent`
//!
//! A model drives a governed run: it may list and read files in `examples/scenarios/workspace`
//! (read-only tools, eligible in explore), must move through the states the transition table
//! allows, and is charged against a `tokens` budget from the usage its server reports. Any
//! OpenAI-compatible server works: llama.cpp (`llama-server -m model.gguf --jinja`), Ollama
//! (`http://127.0.0.1:11434/v1`), vLLM; or a hosted one (`OPENAI_API_KEY` or
//! `ANTHROPIC_API_KEY` instead of the base URL). The variables are read by
//! `ProviderConfig::from_env`; the key itself stays in the environment.

#![allow(clippy::print_stdout)]

use rein::ledger::EntryKind;
use rein::llm::{HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::prelude::*;
use rein::run::BudgetName;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = match ProviderConfig::from_env() {
        Ok(config) => config.with_stream(true).with_max_output_tokens(512),
        Err(e) => {
            println!("{e}");
            return Ok(());
        }
    };
    let provider = HttpProvider::new(config)?;

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/workspace");
    let list_root = root.clone();
    let list = FnTool::builder("fs.list")
        .description("Lists the files of the workspace")
        .annotations(Annotations::read_only())
        .input_schema(json!({"type": "object", "properties": {}}))
        .handler(move |_input: Value| {
            let root = list_root.clone();
            async move {
                let names: Vec<String> = std::fs::read_dir(&root)
                    .map_err(|e| ToolError::failed(e.to_string()))?
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect();
                Ok(json!({ "files": names }))
            }
        })
        .build()?;
    let read = FnTool::builder("fs.read")
        .description("Reads a text file of the workspace by name")
        .annotations(Annotations::read_only())
        .input_schema(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .handler(move |input: Value| {
            let root = root.clone();
            async move {
                let name = input["path"].as_str().unwrap_or_default();
                if name.contains('/') || name.contains("..") {
                    return Err(ToolError::failed("only file names of the workspace"));
                }
                let text = std::fs::read_to_string(root.join(name))
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                Ok(json!({ "text": text }))
            }
        })
        .build()?;

    let planner = LlmPlanner::new(provider, LlmConfig::default());
    let engine = Engine::builder()
        .tool(list)
        .tool(read)
        // A model corrects itself: refusals and tool errors go back to it (at most 3
        // refusals, the default), as each run's policy records.
        .planner(planner)
        .budget("tokens", 40_000)
        .max_steps(20)
        .build()?;
    let run = engine
        .run("Find the notes file in the workspace and report its first line")
        .await?;
    println!("status: {:?}", run.status());
    println!("result: {}", run.result().cloned().unwrap_or(Value::Null));
    if let Some(failure) = run.failure() {
        println!("failure: {}", failure.message);
    }
    let ledger = engine.ledger(run.id()).await?;
    ledger.verify()?;
    let calls = ledger
        .entries()
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::PlannerCall { .. }))
        .count();
    println!(
        "{calls} model calls, {} tokens charged; ledger verified",
        run.usage().used(&BudgetName::TOKENS)
    );
    Ok(())
}

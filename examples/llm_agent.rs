//! Run with: REIN_LLM_BASE_URL=http://127.0.0.1:8080/v1 REIN_LLM_MODEL=local cargo run -p rein-examples --example llm_agent
//!
//! A model drives a governed run: it may list and read files in `examples/scenarios/workspace`
//! (read-only tools, eligible in explore), must move through the states the transition table
//! allows, and is charged against a `tokens` budget from the usage its server reports. Any
//! OpenAI-compatible server works: llama.cpp (`llama-server -m model.gguf --jinja`), Ollama
//! (`http://127.0.0.1:11434/v1`), vLLM. Set `REIN_LLM_KEY_ENV` to the *name* of the variable
//! holding an API key when the server needs one.

#![allow(clippy::print_stdout)]

use rein::llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::prelude::*;
use rein::{BudgetName, EntryKind};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (Ok(base_url), Ok(model)) = (
        std::env::var("REIN_LLM_BASE_URL"),
        std::env::var("REIN_LLM_MODEL"),
    ) else {
        println!(
            "set REIN_LLM_BASE_URL (e.g. http://127.0.0.1:8080/v1) and REIN_LLM_MODEL to run \
             this example against an OpenAI-compatible server"
        );
        return Ok(());
    };
    let mut config = ProviderConfig::new(Api::OpenAi, base_url, model)
        .with_stream(true)
        .with_max_output_tokens(512);
    if let Ok(var) = std::env::var("REIN_LLM_KEY_ENV") {
        config = config.with_api_key_env(var);
    }
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

//! The provider recipes of docs/SCENARIOS.md ("Provider recipes"), read from the page and
//! each run against the strict fake server speaking its API: what the page tells users to
//! write is a configuration that parses, sends a request the real API accepts, carries the
//! key only where the recipe names one, and reads the reply back.

use rein_llm::fake::{Call, FakeServer, Reply};
use rein_llm::{Api, ChatRequest, FunctionDef, HttpProvider, Message, Provider, ProviderConfig};
use serde_json::json;

/// The recipes of the page, by their heading, in order.
fn recipes() -> Vec<(String, String)> {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../docs/SCENARIOS.md"),
    )
    .expect("docs/SCENARIOS.md");
    let section = page
        .split("\n### Provider recipes\n")
        .nth(1)
        .expect("a \"Provider recipes\" section")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    section
        .split("\n#### ")
        .skip(1)
        .map(|recipe| {
            let name = recipe.lines().next().unwrap_or_default().trim().to_owned();
            let block = recipe
                .split("```json\n")
                .nth(1)
                .and_then(|rest| rest.split("\n```").next())
                .unwrap_or_else(|| panic!("recipe {name} has a json block"));
            (name, block.to_owned())
        })
        .collect()
}

fn request() -> ChatRequest {
    ChatRequest {
        system: "you are terse".into(),
        messages: vec![Message::User {
            text: "read the notes".into(),
        }],
        functions: vec![FunctionDef {
            name: "fs_read".into(),
            description: "reads a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
    }
}

/// A reply calling `fs_read`, as `config`'s API sends it, streamed or not.
fn reply(config: &ProviderConfig) -> Reply {
    let calls = [Call::new("fs_read", &json!({"path": "notes.txt"}))];
    match (config.api, config.stream) {
        (Api::OpenAi, false) => Reply::openai_calls(&calls, (20, 5)),
        (Api::OpenAi, true) => Reply::openai_sse("", &calls, (20, 5), 7),
        (Api::Anthropic, false) => Reply::anthropic("", &calls, (20, 5)),
        (Api::Anthropic, true) => Reply::anthropic_sse("", &calls, (20, 5), 7),
    }
}

#[test]
fn the_page_has_the_five_recipes() {
    let names: Vec<String> = recipes().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        ["OpenAI", "Anthropic", "OpenRouter", "Ollama", "vLLM"]
    );
}

#[tokio::test]
async fn every_recipe_calls_its_api_as_the_real_server_wants_it() {
    for (name, block) in recipes() {
        let written: ProviderConfig = serde_json::from_str(&block)
            .unwrap_or_else(|e| panic!("recipe {name} is not a provider: {e}\n{block}"));
        let server = FakeServer::start([reply(&written)]).await.unwrap();
        let config = ProviderConfig {
            base_url: server.base_url(),
            ..written.clone()
        };
        // The key the recipe's variable would hold; none where it names no variable.
        let key = written.api_key_env.as_ref().map(|_| "sk-recipe-key");
        let provider = HttpProvider::with_key(config, key)
            .unwrap_or_else(|e| panic!("recipe {name} builds no provider: {e}"));
        let completion = provider
            .complete(&request())
            .await
            .unwrap_or_else(|e| panic!("recipe {name}: {e}"));
        assert_eq!(completion.response.calls.len(), 1, "{name}");
        assert_eq!(completion.response.calls[0].name, "fs_read", "{name}");

        let received = server.requests();
        assert_eq!(received.len(), 1, "{name}");
        let sent = &received[0];
        let endpoint = match written.api {
            Api::OpenAi => "/v1/chat/completions",
            Api::Anthropic => "/v1/messages",
        };
        assert_eq!(sent.path, endpoint, "{name}");
        assert_eq!(sent.authorized, key.is_some(), "{name}");
        let body = sent.json();
        assert_eq!(body["model"], json!(written.model), "{name}");
        assert_eq!(body["stream"], json!(written.stream), "{name}");
        assert_eq!(
            body["max_tokens"],
            json!(written.max_output_tokens),
            "{name}"
        );
    }
}

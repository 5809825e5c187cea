//! A server's elicitation and sampling requests, answered through the ports the operator
//! gives, against the reference server `server-everything` (installed by `make
//! mcp-servers`): it offers its elicitation and sampling tools only to a client that
//! declares them, so rein declares them only with a port.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_mcp::{McpServer, ServerConfig};
use rein_tool::{
    BoxFuture, ElicitAnswer, Elicitation, Elicitor, SampleError, SampleReply, SampleRequest,
    SampleRole, Sampler, Tool,
};
use serde_json::{Value, json};

fn everything() -> ServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../target/mcp/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "{} is missing: run `make mcp-servers`",
        script.display()
    );
    ServerConfig::stdio(
        "every".parse().unwrap(),
        [
            "node".to_owned(),
            script.display().to_string(),
            "stdio".to_owned(),
        ],
    )
    .with_handshake_timeout(Duration::from_secs(60))
}

/// Answers every question with `answer` (or never, when `None`), keeping the questions.
struct Person {
    answer: Option<ElicitAnswer>,
    asked: Mutex<Vec<Elicitation>>,
}

impl Elicitor for Person {
    fn elicit(&self, question: Elicitation) -> BoxFuture<'_, ElicitAnswer> {
        self.asked.lock().unwrap().push(question);
        let answer = self.answer.clone();
        Box::pin(async move {
            match answer {
                Some(answer) => answer,
                None => std::future::pending().await,
            }
        })
    }
}

/// A model that answers "forty-two", or a budget that has no room.
struct Model {
    broke: bool,
    asked: Mutex<Vec<SampleRequest>>,
}

impl Sampler for Model {
    fn sample(&self, request: SampleRequest) -> BoxFuture<'_, Result<SampleReply, SampleError>> {
        self.asked.lock().unwrap().push(request);
        let broke = self.broke;
        Box::pin(async move {
            if broke {
                return Err(SampleError::Budget {
                    budget: "tokens".to_owned(),
                });
            }
            Ok(SampleReply {
                model: "test-model".to_owned(),
                text: "forty-two".to_owned(),
                stop_reason: Some("endTurn".to_owned()),
            })
        })
    }
}

async fn call(server: &McpServer, remote: &str, input: Value) -> Result<String, String> {
    let tool = server
        .tools()
        .into_iter()
        .find(|t| t.remote_name() == remote)
        .unwrap_or_else(|| panic!("{remote} is offered"));
    match tool.call(input).await {
        Ok(out) => Ok(out.value()["content"].to_string()),
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test]
async fn without_ports_the_server_offers_neither_elicitation_nor_sampling_tools() {
    let server = McpServer::connect(everything()).await.unwrap();
    let remote: Vec<String> = server
        .imported()
        .iter()
        .map(|t| t.remote_name().to_owned())
        .collect();
    for absent in ["trigger-elicitation-request", "trigger-sampling-request"] {
        assert!(!remote.iter().any(|r| r == absent), "{remote:?}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn elicitation_waits_for_the_elicitor_and_fails_closed_without_an_answer() {
    let person = Arc::new(Person {
        answer: Some(ElicitAnswer::Accept(
            json!({"name": "Ada Lovelace", "check": true}),
        )),
        asked: Mutex::new(Vec::new()),
    });
    let server = McpServer::connect(everything().with_elicitor(person.clone()))
        .await
        .unwrap();
    let text = call(&server, "trigger-elicitation-request", json!({}))
        .await
        .expect("answered");
    assert!(text.contains("Name: Ada Lovelace"), "{text}");
    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].asker, "mcp server `every`");
    assert!(asked[0].message.contains("provide inputs"), "{asked:?}");
    assert!(asked[0].schema["properties"]["name"].is_object());
    server.shutdown().await;

    // Nobody answers: after the timeout the server is told `cancel`, nothing is given.
    let silent = Arc::new(Person {
        answer: None,
        asked: Mutex::new(Vec::new()),
    });
    let server = McpServer::connect(
        everything()
            .with_elicitor(silent)
            .with_ask_timeout(Duration::from_millis(100)),
    )
    .await
    .unwrap();
    let text = call(&server, "trigger-elicitation-request", json!({}))
        .await
        .expect("answered");
    assert!(text.contains("cancelled"), "{text}");
    assert!(!text.contains("Name:"), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn sampling_goes_to_the_sampler_and_a_spent_budget_refuses_it() {
    let model = Arc::new(Model {
        broke: false,
        asked: Mutex::new(Vec::new()),
    });
    let server = McpServer::connect(everything().with_sampler(model.clone()))
        .await
        .unwrap();
    let text = call(
        &server,
        "trigger-sampling-request",
        json!({"prompt": "the answer?", "maxTokens": 50}),
    )
    .await
    .expect("sampled");
    assert!(
        text.contains("forty-two") && text.contains("test-model"),
        "{text}"
    );
    let asked = model.asked.lock().unwrap().clone();
    assert_eq!(asked[0].max_tokens, 50);
    assert_eq!(
        asked[0].system.as_deref(),
        Some("You are a helpful test server.")
    );
    assert_eq!(asked[0].messages[0].0, SampleRole::User);
    assert!(asked[0].messages[0].1.contains("the answer?"));
    server.shutdown().await;

    let broke = Arc::new(Model {
        broke: true,
        asked: Mutex::new(Vec::new()),
    });
    let server = McpServer::connect(everything().with_sampler(broke))
        .await
        .unwrap();
    let error = call(
        &server,
        "trigger-sampling-request",
        json!({"prompt": "the answer?", "maxTokens": 50}),
    )
    .await
    .expect_err("refused");
    assert!(error.contains("budget"), "{error}");
    server.shutdown().await;
}

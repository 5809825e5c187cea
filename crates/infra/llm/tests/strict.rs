//! The fake server is as strict as the real APIs (a request they refuse gets their `400`),
//! and what the planner sends passes it: a call that never got a result is answered as not
//! completed, an empty turn is left out.

use std::collections::BTreeMap;
use std::sync::Arc;

use rein_llm::fake::{Call, FakeServer, Reply};
use rein_llm::{
    Api, ChatRequest, FunctionCall, HttpProvider, LlmConfig, LlmError, LlmPlanner, Message,
    Provider, ProviderConfig,
};
use rein_run::{
    BudgetSnapshot, BudgetUsage, ModelCall, ModelReply, PlanRequest, Planner, Run, State,
    Timestamp, Turn,
};
use serde_json::json;

fn assistant(calls: &[(&str, &str)]) -> Message {
    Message::Assistant {
        text: String::new(),
        calls: calls
            .iter()
            .map(|(id, name)| FunctionCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: "{}".into(),
            })
            .collect(),
    }
}

fn user(text: &str) -> Message {
    Message::User { text: text.into() }
}

fn result(id: &str) -> Message {
    Message::ToolResult {
        call_id: id.into(),
        content: "ok".into(),
        is_error: false,
    }
}

/// Sends `messages` to a strict fake speaking `api`; the server's refusal, if any.
async fn send(api: Api, messages: Vec<Message>) -> Result<(), String> {
    let server = FakeServer::start([match api {
        Api::OpenAi => Reply::openai_text("fine"),
        Api::Anthropic => Reply::anthropic("fine", &[], (1, 1)),
    }])
    .await
    .unwrap();
    let config = ProviderConfig::new(api, server.base_url(), "m").with_retries(0);
    let provider = HttpProvider::with_key(config, None).unwrap();
    let request = ChatRequest {
        system: "s".into(),
        messages,
        functions: vec![],
    };
    match provider.complete(&request).await {
        Ok(_) => Ok(()),
        Err(e @ LlmError::Rejected { status: 400, .. }) => Err(e.to_string()),
        Err(e) => panic!("not a refusal: {e}"),
    }
}

#[tokio::test]
async fn the_fake_refuses_what_the_real_apis_refuse() {
    for api in [Api::OpenAi, Api::Anthropic] {
        // Well formed: a call answered by its result, then more text.
        let good = vec![
            user("go"),
            assistant(&[("c1", "f")]),
            result("c1"),
            user("next"),
        ];
        assert_eq!(send(api, good).await, Ok(()), "{api:?}");
        // A call left unanswered.
        let e = send(
            api,
            vec![user("go"), assistant(&[("c1", "f")]), user("next")],
        )
        .await
        .unwrap_err();
        assert!(e.contains("c1"), "{api:?}: {e}");
        // A result answering no call.
        let e = send(api, vec![user("go"), result("c9")]).await.unwrap_err();
        assert!(e.contains("c9") || e.contains("tool"), "{api:?}: {e}");
        // A call of a function name no provider accepts.
        let e = send(
            api,
            vec![user("go"), assistant(&[("c1", "fs.read")]), result("c1")],
        )
        .await
        .unwrap_err();
        assert!(e.contains("fs.read"), "{api:?}: {e}");
    }
    // OpenAI: an assistant turn with neither text nor calls.
    let e = send(Api::OpenAi, vec![user("go"), assistant(&[]), user("again")])
        .await
        .unwrap_err();
    assert!(e.contains("content"), "{e}");
}

#[tokio::test]
async fn a_call_that_never_got_a_result_is_answered_as_not_completed() {
    let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
    let mut run = Run::new(
        "run-1".parse().unwrap(),
        "g",
        Default::default(),
        json!({}),
        t0,
    );
    run.enter(State::Explore, t0).unwrap();
    run.count_step(t0).unwrap();
    // Step 0's reply called a tool; the process stopped before it ran.
    let dialogue = [Turn {
        step: 0,
        state: State::Explore,
        after: 0,
        reply: Arc::new(ModelReply {
            text: "Reading.".into(),
            calls: vec![ModelCall {
                id: "toolu_7".into(),
                name: "fs_read".into(),
                arguments: r#"{"path":"a"}"#.into(),
            }],
        }),
    }];
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = FakeServer::start([match api {
            Api::OpenAi => {
                Reply::openai_calls(&[Call::new("fail", &json!({"reason": "r"}))], (1, 1))
            }
            Api::Anthropic => {
                Reply::anthropic("", &[Call::new("fail", &json!({"reason": "r"}))], (1, 1))
            }
        }])
        .await
        .unwrap();
        let provider =
            HttpProvider::with_key(ProviderConfig::new(api, server.base_url(), "m"), None).unwrap();
        let planner = LlmPlanner::new(provider, LlmConfig::default());
        let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
        let next = [State::Decide, State::Failed];
        let request = PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage))
            .with_next_states(&next)
            .with_dialogue(&dialogue);
        // The strict server took it.
        assert!(planner.plan(request).await.is_ok(), "{api:?}");
        let body = server.requests()[0].json();
        let text = body.to_string();
        assert!(
            text.contains("toolu_7"),
            "{api:?}: the id is echoed: {text}"
        );
        assert!(
            text.contains("not completed: rein did not run this call"),
            "{api:?}: {text}"
        );
    }
}

#[tokio::test]
async fn compaction_drops_a_reply_with_its_results_and_the_dialogue_stays_valid() {
    let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
    let mut run = Run::new(
        "run-1".parse().unwrap(),
        "g",
        Default::default(),
        json!({}),
        t0,
    );
    run.enter(State::Explore, t0).unwrap();
    // Six steps, each a read whose result follows it.
    let mut dialogue = Vec::new();
    for step in 0..6 {
        dialogue.push(Turn {
            step,
            state: State::Explore,
            after: run.evidence().len(),
            reply: Arc::new(ModelReply {
                text: String::new(),
                calls: vec![ModelCall {
                    id: format!("call_{step}"),
                    name: "fs_read".into(),
                    arguments: format!(r#"{{"path":"file{step}.txt"}}"#),
                }],
            }),
        });
        run.count_step(t0).unwrap();
        run.add_evidence(
            rein_run::EvidenceKind::ToolResult {
                tool: rein_run::ToolName::new("fs.read").unwrap(),
                input: json!({"path": format!("file{step}.txt")}).into(),
                output: rein_run::Payload::Inline(json!({"text": "x".repeat(400)})),
                cached: false,
            },
            t0,
        )
        .unwrap();
    }
    let config = LlmConfig {
        prompt: rein_llm::PromptConfig {
            max_prompt_tokens: Some(800),
            keep_last: 2,
            ..Default::default()
        },
        ..LlmConfig::default()
    };
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = FakeServer::start([match api {
            Api::OpenAi => {
                Reply::openai_calls(&[Call::new("fail", &json!({"reason": "r"}))], (1, 1))
            }
            Api::Anthropic => {
                Reply::anthropic("", &[Call::new("fail", &json!({"reason": "r"}))], (1, 1))
            }
        }])
        .await
        .unwrap();
        let provider =
            HttpProvider::with_key(ProviderConfig::new(api, server.base_url(), "m"), None).unwrap();
        let planner = LlmPlanner::new(provider, config.clone());
        let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
        let next = [State::Decide, State::Failed];
        let request = PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage))
            .with_next_states(&next)
            .with_dialogue(&dialogue);
        // The strict server took the compacted dialogue.
        assert!(planner.plan(request).await.is_ok(), "{api:?}");
        let received = &server.requests()[0];
        let told = received.told();
        assert!(
            told.contains("[compacted] earlier tool results omitted to fit the context: fs.read ×4; 4 of your earlier replies with them"),
            "{api:?}: {told}"
        );
        let text = received.json().to_string();
        for kept in ["call_4", "call_5", "file4.txt", "file5.txt"] {
            assert!(text.contains(kept), "{api:?}: {kept} is kept");
        }
        assert!(
            !text.contains("call_3"),
            "{api:?}: the older replies are gone"
        );
        assert!(told.contains("Goal: g"), "{api:?}: the goal stays");
    }
}

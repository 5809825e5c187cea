//! The LLM planner's requests are the model's own dialogue, projected from the ledger:
//! earlier steps as assistant turns with their results paired by call id, a prefix that
//! only grows at its end (so providers can cache it), cached tokens counted in the ledger
//! and the budgets, and every request accepted by a fake server as strict as the real
//! APIs — for both APIs, streamed and not.

mod support;

use rein::ledger::{EntryKind, Violation};
use rein::llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::planner::PlannerCall;
use rein::policy::OnViolation;
use rein::run::BudgetName;
use rein::tool::Digest;
use rein::{Annotations, Engine, RunStatus, json};
use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::Value;
use support::dialogue::turns_with_results;
use support::echo;

const MODES: [(Api, bool); 4] = [
    (Api::OpenAi, false),
    (Api::OpenAi, true),
    (Api::Anthropic, false),
    (Api::Anthropic, true),
];

fn reply(api: Api, stream: bool, calls: &[Call]) -> Reply {
    let usage = (100, 20);
    match (api, stream) {
        (Api::OpenAi, false) => Reply::openai_calls(calls, usage),
        (Api::OpenAi, true) => Reply::openai_sse("", calls, usage, 64),
        (_, false) => Reply::anthropic("", calls, usage),
        (_, true) => Reply::anthropic_sse("", calls, usage, 64),
    }
}

fn config(api: Api, stream: bool, server: &FakeServer) -> ProviderConfig {
    ProviderConfig::new(api, server.base_url(), "fake-model")
        .with_max_output_tokens(256)
        .with_stream(stream)
}

fn engine(provider: ProviderConfig) -> Engine {
    let provider = HttpProvider::with_key(provider, None).expect("provider");
    let planner = LlmPlanner::new(provider, LlmConfig::default());
    let (list, _) = echo("fs.list", Annotations::read_only());
    let (read, _) = echo("fs.read", Annotations::read_only());
    let (write, _) = echo("fs.write", Annotations::side_effecting());
    Engine::builder()
        .tool(list)
        .tool(read)
        .tool(write)
        .planner(planner)
        .budget("tokens", 1_000_000)
        .on_violation(OnViolation::HandBack { limit: 3 })
        .build()
        .expect("engine builds")
}

fn planner_calls(ledger: &rein::Ledger) -> Vec<PlannerCall> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerCall { call, .. } => Some(call.clone()),
            _ => None,
        })
        .collect()
}

/// `value` without Anthropic's `cache_control` breakpoints, which move to the end of each
/// request and are no part of what a provider caches.
fn without_breakpoints(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_breakpoints(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_breakpoints).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn each_step_is_the_dialogue_so_far_plus_what_happened_since() {
    for (api, stream) in MODES {
        let mode = format!("{api:?} stream={stream}");
        let script = [
            vec![Call::new(
                "transition",
                &json!({"to": "explore", "reason": "look"}),
            )],
            vec![Call::new("fs_list", &json!({"path": "."}))],
            vec![
                Call::new("fs_read", &json!({"path": "a.txt"})),
                Call::new("fs_read", &json!({"path": "b.txt"})),
            ],
            vec![Call::new(
                "transition",
                &json!({"to": "decide", "reason": "read them"}),
            )],
            vec![Call::new("finish", &json!({"summary": "read both"}))],
        ];
        let server = FakeServer::start_caching(script.iter().map(|c| reply(api, stream, c)))
            .await
            .unwrap();
        let provider = config(api, stream, &server);
        let engine = engine(provider.clone());
        let run = engine.run("read two files").await.expect("run");
        assert_eq!(
            run.status(),
            RunStatus::Completed,
            "{mode}: {:?}",
            run.failure()
        );
        let received = server.requests();
        assert_eq!(received.len(), 5, "{mode}");
        let bodies: Vec<Value> = received
            .iter()
            .map(rein_llm::fake::Received::json)
            .collect();

        // Step 3's request holds steps 1 and 2 as the model's turns, each call answered.
        let turns = turns_with_results(api, &bodies[2]);
        let names: Vec<Vec<&str>> = turns
            .iter()
            .map(|t| t.iter().map(|c| c.1.as_str()).collect())
            .collect();
        assert_eq!(names, [vec!["transition"], vec!["fs_list"]], "{mode}");
        // The batch of two reads is answered by its two results, in order.
        let turns = turns_with_results(api, &bodies[3]);
        assert_eq!(turns[2].len(), 2, "{mode}");
        let told = received[3].told_since_last_turn();
        assert!(
            told.contains("a.txt") && told.contains("b.txt"),
            "{mode}: {told}"
        );

        // Each request extends the one before: the tools and the system prompt do not
        // change, and the messages sent before come back unchanged, first.
        for n in 1..bodies.len() {
            let (before, now) = (
                without_breakpoints(&bodies[n - 1]),
                without_breakpoints(&bodies[n]),
            );
            assert_eq!(before["tools"], now["tools"], "{mode}: step {n}");
            assert_eq!(before["system"], now["system"], "{mode}: step {n}");
            let (old, new) = (
                before["messages"].as_array().unwrap(),
                now["messages"].as_array().unwrap(),
            );
            assert!(new.len() > old.len(), "{mode}: step {n}");
            for (i, m) in old.iter().enumerate() {
                assert_eq!(
                    m.to_string(),
                    new[i].to_string(),
                    "{mode}: step {n}, message {i}"
                );
            }
        }

        // The cached prefix the server reported is in the ledger and in `tokens`.
        let ledger = engine.ledger(run.id()).await.unwrap();
        ledger.verify().unwrap();
        let calls = planner_calls(&ledger);
        assert_eq!(calls.len(), 5, "{mode}");
        assert_eq!(calls[0].cache_read_tokens, 0, "{mode}");
        for call in &calls[1..] {
            assert!(call.cache_read_tokens > 0, "{mode}: {call:?}");
            assert!(call.input_tokens >= call.cache_read_tokens, "{mode}");
        }
        // The fake's 100 prompt tokens are the uncached ones (Anthropic reports cache reads
        // apart from `input_tokens`, OpenAI within `prompt_tokens`): rein counts them in.
        assert_eq!(
            calls[1].input_tokens,
            100 + calls[1].cache_read_tokens,
            "{mode}"
        );
        let total: u64 = calls.iter().map(PlannerCall::tokens).sum();
        assert_eq!(run.usage().used(&BudgetName::TOKENS), total, "{mode}");

        // And every request is rebuilt from the ledger, byte for byte.
        for (step, call) in calls.iter().enumerate() {
            let chat = engine
                .plan_request_at(&ledger, u32::try_from(step).unwrap(), |request| {
                    rein::llm::build_request(
                        &Default::default(),
                        &request,
                        rein::llm::Compaction::WhenOverLimit,
                    )
                })
                .unwrap()
                .expect("the step was planned");
            let body = rein::llm::request_body(&provider, &chat);
            assert_eq!(
                Digest::of_bytes(&body),
                call.request_hash,
                "{mode}: step {step}"
            );
            assert_eq!(body, received[step].body, "{mode}: step {step}");
        }
    }
}

#[tokio::test]
async fn an_anthropic_correction_after_an_empty_reply_is_accepted() {
    for stream in [false, true] {
        let empty = if stream {
            Reply::anthropic_sse("", &[], (100, 0), 64)
        } else {
            Reply::anthropic("", &[], (100, 0))
        };
        let server = FakeServer::start([
            empty,
            reply(
                Api::Anthropic,
                stream,
                &[Call::new("fail", &json!({"reason": "nothing to do"}))],
            ),
        ])
        .await
        .unwrap();
        let engine = engine(config(Api::Anthropic, stream, &server));
        let run = engine.run("anything").await.expect("run");
        // The strict server took the correction: the run ended as the model said.
        assert_eq!(
            run.failure().map(|f| f.message.as_str()),
            Some("nothing to do"),
            "stream={stream}: {run:?}"
        );
        let received = server.requests();
        assert_eq!(received.len(), 2);
        let told = received[1].told_since_last_turn();
        assert!(told.contains("called no function"), "{told}");
    }
}

#[tokio::test]
async fn an_anthropic_call_cut_at_max_tokens_is_corrected_not_run() {
    let cut = Reply::Json(json!({
        "id": "msg", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_cut", "name": "fs_write", "input": {}}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 100, "output_tokens": 256}
    }));
    let server = FakeServer::start([
        reply(
            Api::Anthropic,
            false,
            &[Call::new("transition", &json!({"to": "explore"}))],
        ),
        cut,
        reply(
            Api::Anthropic,
            false,
            &[Call::new("fail", &json!({"reason": "stop"}))],
        ),
    ])
    .await
    .unwrap();
    let engine = engine(config(Api::Anthropic, false, &server));
    let run = engine.run("write the notes").await.expect("run");
    assert_eq!(run.failure().map(|f| f.message.as_str()), Some("stop"));
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert!(
        !ledger
            .entries()
            .iter()
            .any(|e| matches!(e.event(), EntryKind::ToolCall { .. })),
        "the cut call never ran"
    );
    assert!(ledger.entries().iter().any(|e| matches!(
        e.event(),
        EntryKind::PolicyViolation { violation: Violation::InvalidReply, message, .. }
            if message.contains("cut at the output limit")
    )));
    // The model is told, as the result of its cut call.
    let body = server.requests()[2].json();
    let results: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["tool_use_id"] == "toolu_cut")
        .collect();
    assert_eq!(results.len(), 1, "{body}");
    assert_eq!(results[0]["is_error"], true);
}

#[tokio::test]
async fn anthropic_cache_tokens_are_counted_in_the_ledger_and_the_budget() {
    // The server counted 520 prompt tokens: 1 new, 519 read from its cache.
    let server = FakeServer::start([Reply::Json(json!({
        "id": "msg", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_0", "name": "fail", "input": {"reason": "r"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "cache_read_input_tokens": 519,
                  "cache_creation_input_tokens": 0, "output_tokens": 9}
    }))])
    .await
    .unwrap();
    let engine = engine(config(Api::Anthropic, false, &server));
    let run = engine.run("anything").await.expect("run");
    let ledger = engine.ledger(run.id()).await.unwrap();
    let calls = planner_calls(&ledger);
    assert_eq!(
        (
            calls[0].input_tokens,
            calls[0].cache_read_tokens,
            calls[0].output_tokens
        ),
        (520, 519, 9)
    );
    assert_eq!(run.usage().used(&BudgetName::TOKENS), 529);
}

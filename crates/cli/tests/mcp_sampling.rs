//! An MCP server's sampling request answered by the run's model where the scenario allows
//! it (`"sampling": {"from": "run"}`), against the reference server `server-everything`
//! (installed by `make mcp-servers`) and the fake model server: the run's `llm` planner's
//! provider answers, under the run's `tokens` budget, recorded as a `planner_call` within
//! the tool call and charged; a request whose worst case does not fit is refused and not
//! sent; a scripted planner has no model and refuses.

mod support;

use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::{Value, json};
use support::mcp::installed;
use support::{Outcome, Scratch, rein};

fn every() -> Value {
    let server =
        installed("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    json!({"kind": "mcp", "server": "every", "command": ["node", server, "stdio"],
           "handshake_timeout_ms": 60000, "sampling": {"from": "run"}})
}

fn llm_scenario(base_url: &str, tokens: u64) -> String {
    let provider = json!({"api": "open_ai", "base_url": base_url, "model": "fake",
                          "retries": 0, "stream": true, "max_output_tokens": 200});
    json!({
        "goal": "ask the server to sample",
        "approver": "auto",
        "tools": [every()],
        "policies": {"budgets": {"tokens": tokens}},
        "planner": {"llm": {"provider": provider}}
    })
    .to_string()
}

fn call(name: &str, args: &Value, usage: (u64, u64)) -> Reply {
    Reply::openai_sse("", &[Call::new(name, args)], usage, 5)
}

/// Walks to act and calls the sampling tool in one reply.
fn to_the_call(usage: (u64, u64)) -> Reply {
    Reply::openai_sse(
        "",
        &[
            Call::new("transition", &json!({"to": "explore", "reason": "go"})),
            Call::new("transition", &json!({"to": "decide", "reason": "go"})),
            Call::new("transition", &json!({"to": "act", "reason": "go"})),
            Call::new(
                "every_trigger-sampling-request",
                &json!({"prompt": "the capital of France?", "maxTokens": 50}),
            ),
        ],
        usage,
        5,
    )
}

async fn run(scratch: &Scratch, text: &str) -> Outcome {
    let file = scratch.write("sampling.json", text);
    let data = scratch.data();
    tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .arg("run")
                .arg(file)
                .arg("--data-dir")
                .arg(data)
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap()
}

fn kinds(ledger: &str) -> Vec<String> {
    ledger
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| e["event"]["type"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_servers_sampling_request_is_answered_by_the_runs_model_and_charged() {
    let server = FakeServer::start([
        to_the_call((90, 10)),
        Reply::openai_sse("Paris.", &[], (30, 2), 5),
        call(
            "transition",
            &json!({"to": "validate", "reason": "asked"}),
            (90, 10),
        ),
        call(
            "finish",
            &json!({"summary": "sampled", "result": {}}),
            (90, 10),
        ),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    run(&scratch, &llm_scenario(&server.base_url(), 100_000))
        .await
        .expect_code(0)
        .stdout_has(&["model      4 calls, 300 tokens in, 32 out"]);
    // The sampling request went to the run's model: the server's prompt and system prompt,
    // no functions.
    let sampled: Value = serde_json::from_slice(&server.requests()[1].body).unwrap();
    let text = sampled.to_string();
    assert!(
        text.contains("the capital of France?") && text.contains("You are a helpful test server."),
        "{text}"
    );
    assert!(sampled.get("tools").is_none(), "{text}");
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    let kinds = kinds(&ledger);
    let call = kinds.iter().position(|k| k == "tool_call").unwrap();
    let result = kinds.iter().position(|k| k == "tool_result").unwrap();
    assert_eq!(
        kinds[call + 1..result],
        ["planner_attempt", "planner_call", "budget_consumed"],
        "{kinds:?}"
    );
    assert!(ledger.contains("Paris."), "the tool got the model's reply");
    rein()
        .args(["ledger", "verify", &id, "--data-dir"])
        .arg(scratch.data())
        .assert()
        .success();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sampling_request_the_budget_cannot_cover_is_refused_and_not_sent() {
    // The first reply uses nearly all of the budget: the request's worst case (its prompt
    // and 200 tokens out) no longer fits.
    let server = FakeServer::start([
        to_the_call((9_800, 10)),
        Reply::openai_sse("never sent", &[], (30, 2), 5),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    run(&scratch, &llm_scenario(&server.base_url(), 10_000)).await;
    // Only the planner's call reached the model.
    assert_eq!(server.requests().len(), 1);
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(
        ledger.contains("the run's tokens budget has no room for this sampling request"),
        "{ledger}"
    );
    assert_eq!(
        kinds(&ledger)
            .iter()
            .filter(|k| *k == "planner_call")
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scripted_run_has_no_model_to_sample_with() {
    let scratch = Scratch::new();
    let text = json!({
        "goal": "ask the server to sample",
        "approver": "auto",
        "tools": [every()],
        "planner": {"scripted": [
            {"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "go"}},
            {"expect": "explore", "decision": {"type": "transition", "to": "decide", "reason": "go"}},
            {"expect": "decide", "decision": {"type": "transition", "to": "act", "reason": "go"}},
            {"expect": "act", "decision": {"type": "call_tool", "tool": "every.trigger-sampling-request", "input": {"prompt": "hi"}, "reason": "ask"}},
            {"expect": "act", "decision": {"type": "transition", "to": "validate", "reason": "asked"}},
            {"expect": "validate", "decision": {"type": "finish", "summary": "asked", "result": {}}}
        ]}
    })
    .to_string();
    run(&scratch, &text).await;
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(
        ledger.contains("the run's planner has no model to sample with"),
        "{ledger}"
    );
}

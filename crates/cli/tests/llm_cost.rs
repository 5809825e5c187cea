//! What model calls cost, as a user of `rein` meets it: prices per model in a named
//! currency, the cost printed as money (or "unknown" for a model without a price, never 0),
//! and a `cost` budget over an unpriced model refused when the file is validated.

mod support;

use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Scratch, rein};

/// A scenario whose model is `fake` (with a fallback `spare`), with these budgets and
/// planner settings.
fn scenario(base_url: &str, budgets: &Value, planner: &Value) -> String {
    let provider = |model: &str| json!({"api": "open_ai", "base_url": base_url, "model": model, "retries": 0, "stream": true});
    json!({
        "goal": "Read notes.txt and report its first line",
        "workspace": "workspace",
        "tools": [{"builtin": "fs.read"}],
        "policies": {"budgets": budgets},
        "planner": {"llm": {"provider": provider("fake"), "fallbacks": [provider("spare")], "planner": planner}}
    })
    .to_string()
}

async fn rein_with(scratch: &Scratch, command: &'static str, text: &str) -> Outcome {
    let file = scratch.write("llm.json", text);
    let data = scratch.data();
    tokio::task::spawn_blocking(move || {
        let mut cmd = rein();
        cmd.arg(command).arg(file);
        if command == "run" {
            cmd.arg("--data-dir").arg(data);
        }
        Outcome::of(&cmd.output().unwrap())
    })
    .await
    .unwrap()
}

fn call(name: &str, args: &Value) -> Reply {
    Reply::openai_sse("", &[Call::new(name, args)], (90, 10), 5)
}

fn script() -> Vec<Reply> {
    vec![
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_read", &json!({"path": "notes.txt"})),
        call("fail", &json!({"reason": "enough"})),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cost_budget_with_an_unpriced_model_is_refused_when_validated() {
    let scratch = Scratch::new();
    let budgets = json!({"cost": 1_000_000});
    let base = "http://127.0.0.1:9/v1";
    // No prices at all: the primary model is named, with how to price it.
    rein_with(&scratch, "validate", &scenario(base, &budgets, &json!({})))
        .await
        .expect_code(2)
        .stderr_has(&[
            "policies.budgets.cost",
            "model `fake` has no price",
            "\"prices\": {\"currency\": \"USD\", \"models\": {\"fake\":",
        ]);
    // The primary priced, the fallback not: the fallback is named.
    let priced =
        json!({"prices": {"currency": "USD", "models": {"fake": {"input": "1", "output": "2"}}}});
    rein_with(&scratch, "validate", &scenario(base, &budgets, &priced))
        .await
        .expect_code(2)
        .stderr_has(&["model `spare` has no price"]);
    // "*" prices every other model; without a cost budget nothing needs a price.
    let all = json!({"prices": {"currency": "USD", "models": {
        "fake": {"input": "1", "output": "2"}, "*": {"input": 3, "output": 4.5}}}});
    rein_with(&scratch, "validate", &scenario(base, &budgets, &all))
        .await
        .expect_code(0);
    rein_with(
        &scratch,
        "validate",
        &scenario(base, &json!({}), &json!({})),
    )
    .await
    .expect_code(0);
    // A price that is not an exact decimal is refused with how to write one.
    let odd = json!({"prices": {"currency": "USD", "models": {"fake": {"input": "1.0000001", "output": "2"}}}});
    rein_with(&scratch, "validate", &scenario(base, &json!({}), &odd))
        .await
        .expect_code(2)
        .stderr_has(&["is not an amount", "at most six decimals"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_shows_what_its_model_calls_cost_as_money() {
    let server = FakeServer::start(script()).await.unwrap();
    let scratch = Scratch::new();
    // 1.00 per million input tokens, 2.00 per million output: 90 + 20 micro-dollars a call.
    let priced = json!({"prices": {"currency": "USD", "models": {
        "fake": {"input": "1", "output": "2.00"}, "spare": {"input": "9", "output": "9"}}}});
    let text = scenario(
        &server.base_url(),
        &json!({"cost": 1_000_000, "tokens": 100_000}),
        &priced,
    );
    rein_with(&scratch, "run", &text)
        .await
        .expect_code(1)
        .stdout_has(&["model      3 calls, 270 tokens in, 30 out, cost $0.00033"]);
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(
        ledger.contains(r#""cost":110,"currency":"USD""#),
        "{ledger}"
    );

    // Without prices the cost is unknown, not free.
    let server = FakeServer::start(script()).await.unwrap();
    let scratch = Scratch::new();
    let text = scenario(&server.base_url(), &json!({"tokens": 100_000}), &json!({}));
    rein_with(&scratch, "run", &text)
        .await
        .expect_code(1)
        .stdout_has(&["model      3 calls, 270 tokens in, 30 out, cost unknown"]);
}

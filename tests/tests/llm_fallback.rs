//! Fallback models in the engine, against two loopback fake servers: a primary that keeps
//! failing in a way another model may answer hands the call to the fallback, every attempt
//! on the record names the model it was sent to, and the `planner_call` the one that
//! answered; a request the primary rejects (400) is not sent to the fallback.

mod support;

use std::time::Duration;

use rein::ledger::EntryKind;
use rein::llm::{Api, FallbackProvider, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::policy::OnViolation;
use rein::{Annotations, Engine, RunStatus, json};
use rein_llm::fake::{Call, FakeServer, Reply};
use support::echo;

fn http(server: &FakeServer, api: Api, model: &str) -> HttpProvider {
    let mut config = ProviderConfig::new(api, server.base_url(), model)
        .with_retries(1)
        .with_max_output_tokens(256);
    // No wait between retries: the test is about which model answers, not when.
    config.backoff = Duration::ZERO;
    HttpProvider::with_key(config, None).expect("provider")
}

fn engine(provider: FallbackProvider) -> Engine {
    let (read, _) = echo("fs.read", Annotations::read_only());
    Engine::builder()
        .tool(read)
        .planner(LlmPlanner::new(provider, LlmConfig::default()))
        .on_violation(OnViolation::HandBack { limit: 3 })
        .budget("tokens", 100_000)
        .build()
        .expect("engine builds")
}

/// `(event, model)` of every planner entry naming a model, in ledger order.
fn models(ledger: &rein::Ledger) -> Vec<(&'static str, String)> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerAttempt { attempt, .. } => Some((
                "planner_attempt",
                format!("{}/{}", attempt.provider, attempt.model),
            )),
            EntryKind::PlannerCall { call, .. } => {
                Some(("planner_call", format!("{}/{}", call.provider, call.model)))
            }
            _ => None,
        })
        .collect()
}

/// The model's reply: it gives up, with a reason the run's failure quotes.
fn give_up() -> Reply {
    Reply::openai_calls(
        &[Call::new("fail", &json!({"reason": "nothing to do here"}))],
        (100, 20),
    )
}

#[tokio::test]
async fn a_primary_that_is_overloaded_or_rate_limited_hands_the_call_to_the_fallback() {
    let primary = FakeServer::start([
        Reply::status(529, "overloaded"),
        Reply::status(503, "unavailable"),
    ])
    .await
    .unwrap();
    let second = FakeServer::start([Reply::rate_limited(0), Reply::rate_limited(0)])
        .await
        .unwrap();
    let spare = FakeServer::start([give_up()]).await.unwrap();
    let provider = FallbackProvider::new(http(&primary, Api::Anthropic, "big"))
        .with_fallback(http(&second, Api::OpenAi, "medium"))
        .with_fallback(http(&spare, Api::OpenAi, "spare"));
    let engine = engine(provider);
    let run = engine.run("answer").await.unwrap();
    // The fallback's answer decided the run: it gave up, with its reason.
    let failure = format!("{:?}", run.failure());
    assert!(failure.contains("nothing to do here"), "{failure}");
    // Each model had its own retries before the next was asked.
    assert_eq!(primary.requests().len(), 2);
    assert_eq!(second.requests().len(), 2);
    assert_eq!(spare.requests().len(), 1);
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert_eq!(
        models(&ledger),
        [
            ("planner_attempt", "anthropic/big".to_owned()),
            ("planner_attempt", "anthropic/big".to_owned()),
            ("planner_attempt", "openai/medium".to_owned()),
            ("planner_attempt", "openai/medium".to_owned()),
            ("planner_attempt", "openai/spare".to_owned()),
            ("planner_call", "openai/spare".to_owned()),
        ]
    );
    // Attempts are numbered on across models, and each one's hash is of the body that
    // model was sent (the model's name is in it).
    let attempts: Vec<(u32, rein::tool::Digest)> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerAttempt { attempt, .. } => {
                Some((attempt.attempt, attempt.request_hash))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        attempts.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    let sent = [&primary, &primary, &second, &second, &spare]
        .iter()
        .zip([0, 1, 0, 1, 0])
        .map(|(server, i)| rein::tool::Digest::of_bytes(&server.requests()[i].body))
        .collect::<Vec<_>>();
    assert_eq!(attempts.iter().map(|(_, h)| *h).collect::<Vec<_>>(), sent);
}

#[tokio::test]
async fn a_request_the_primary_rejects_is_not_sent_to_the_fallback() {
    let primary = FakeServer::start([
        Reply::status(400, "bad temperature"),
        Reply::status(400, "bad temperature"),
    ])
    .await
    .unwrap();
    let spare = FakeServer::start([give_up()]).await.unwrap();
    let provider = FallbackProvider::new(http(&primary, Api::OpenAi, "big")).with_fallback(http(
        &spare,
        Api::OpenAi,
        "spare",
    ));
    let engine = engine(provider);
    let run = engine.run("answer").await.unwrap();
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(primary.requests().len(), 1, "a 400 is not retried");
    assert!(spare.requests().is_empty(), "nor sent to the fallback");
    let failure = format!("{:?}", run.failure());
    assert!(failure.contains("HTTP 400"), "{failure}");
}

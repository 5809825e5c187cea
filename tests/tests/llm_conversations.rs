//! A conversation of three runs with the LLM planner against the fake server, which is as
//! strict as the real APIs (pairing, alternation, non-empty content): each follow-up's
//! requests carry the earlier runs as real chat history — their goals, the model's turns
//! with every call answered (a call that never got a result answered as not completed),
//! and how each run ended — for both APIs. And steering: a note reaches the model at the
//! safe point, after all results of a batch and before the next request.

mod support;

use rein::llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::policy::OnViolation;
use rein::{Annotations, Engine, RunStatus, json};
use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::Value;
use support::dialogue::turns_with_results;
use support::{echo, gated};

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

fn engine(api: Api, stream: bool, server: &FakeServer, tool: rein::FnTool) -> Engine {
    let provider = ProviderConfig::new(api, server.base_url(), "fake-model")
        .with_max_output_tokens(256)
        .with_stream(stream);
    let provider = HttpProvider::with_key(provider, None).expect("provider");
    Engine::builder()
        .tool(tool)
        .planner(LlmPlanner::new(provider, LlmConfig::default()))
        .budget("tokens", 1_000_000)
        .on_violation(OnViolation::HandBack { limit: 3 })
        .build()
        .expect("engine builds")
}

/// The function names of each assistant turn of a request, each turn checked to be
/// answered, id for id and in order, by the results right after it.
fn answered_turns(api: Api, body: &Value) -> Vec<Vec<String>> {
    turns_with_results(api, body)
        .into_iter()
        .map(|turn| turn.into_iter().map(|(_, name)| name).collect())
        .collect()
}

#[tokio::test]
async fn the_third_runs_requests_carry_the_first_two_runs_as_valid_chat_history() {
    for (api, stream) in MODES {
        let mode = format!("{api:?} stream={stream}");
        let script = [
            // Run 1: explore, list, finish.
            vec![
                Call::new("transition", &json!({"to": "explore", "reason": "look"})),
                Call::new("fs_list", &json!({"path": "."})),
            ],
            vec![
                Call::new("transition", &json!({"to": "decide", "reason": "seen"})),
                Call::new("finish", &json!({"summary": "listed the folder"})),
            ],
            // Run 2: a reply whose second call never runs (`fail` must come last), then fail.
            vec![
                Call::new("fail", &json!({"reason": "too early"})),
                Call::new("fs_list", &json!({"path": "src"})),
            ],
            vec![Call::new("fail", &json!({"reason": "cannot go on"}))],
            // Run 3.
            vec![Call::new(
                "transition",
                &json!({"to": "explore", "reason": "again"}),
            )],
            vec![
                Call::new("transition", &json!({"to": "decide", "reason": "done"})),
                Call::new("finish", &json!({"summary": "answered"})),
            ],
        ];
        let server = FakeServer::start(script.iter().map(|c| reply(api, stream, c)))
            .await
            .unwrap();
        let (list, _) = echo("fs.list", Annotations::read_only());
        let engine = engine(api, stream, &server, list);

        let first = engine.run("list the folder").await.expect("run");
        assert_eq!(first.status(), RunStatus::Completed, "{mode}: {first:?}");
        let second = engine
            .follow_up(first.id(), "now read src")
            .await
            .expect("starts")
            .await
            .expect("runs");
        assert_eq!(
            second.failure().map(|f| f.message.as_str()),
            Some("cannot go on"),
            "{mode}: {second:?}"
        );
        let third = engine
            .follow_up(second.id(), "what did you find?")
            .await
            .expect("starts")
            .await
            .expect("runs");
        // The strict server took every request: the third run ended as its model said.
        assert_eq!(third.status(), RunStatus::Completed, "{mode}: {third:?}");

        let received = server.requests();
        assert_eq!(received.len(), 6, "{mode}");
        // The third run's first request: both earlier runs' turns, every call answered.
        let body = received[4].json();
        let turns = answered_turns(api, &body);
        assert_eq!(
            turns,
            [
                vec!["transition", "fs_list"],
                vec!["transition", "finish"],
                vec!["fail", "fs_list"],
                vec!["fail"],
            ],
            "{mode}: {body}"
        );
        let told = received[4].told();
        for expected in [
            format!(
                "Earlier in this conversation (run {}). Goal: list the folder",
                first.id()
            ),
            format!(
                "Earlier in this conversation (run {}). Goal: now read src",
                second.id()
            ),
            "That run completed: listed the folder".to_owned(),
            "That run failed: cannot go on".to_owned(),
            "not completed".to_owned(),
            "Goal: what did you find?".to_owned(),
        ] {
            assert!(told.contains(&expected), "{mode}: {expected:?} in {told}");
        }
        // The earlier runs come first, in order, and the goal being worked on after them.
        let at = |s: &str| told.find(s).expect(s);
        assert!(
            at("Goal: list the folder") < at("Goal: now read src"),
            "{mode}"
        );
        assert!(
            at("Goal: now read src") < at("Goal: what did you find?"),
            "{mode}"
        );
        // The second run's first request already carried the first run.
        let turns = answered_turns(api, &received[2].json());
        assert_eq!(
            turns,
            [vec!["transition", "fs_list"], vec!["transition", "finish"]],
            "{mode}"
        );
        assert_eq!(
            engine
                .verify_conversation(third.id())
                .await
                .expect("verifies"),
            [first.id().clone(), second.id().clone(), third.id().clone()]
        );
    }
}

#[tokio::test]
async fn a_steering_note_reaches_the_model_after_the_batchs_results_before_its_next_request() {
    for (api, stream) in [(Api::OpenAi, false), (Api::Anthropic, false)] {
        let server = FakeServer::start([
            reply(
                api,
                stream,
                &[
                    Call::new("transition", &json!({"to": "explore", "reason": "look"})),
                    Call::new("fs_list", &json!({"path": "."})),
                ],
            ),
            reply(
                api,
                stream,
                &[
                    Call::new("transition", &json!({"to": "decide", "reason": "seen"})),
                    Call::new("finish", &json!({"summary": "done"})),
                ],
            ),
        ])
        .await
        .unwrap();
        let (list, gate, _) = gated("fs.list", Annotations::read_only());
        let engine = engine(api, stream, &server, list);
        let handle = engine.start("list the folder").await.expect("starts");
        gate.entered().await;
        // While the call is in flight: the model must not be asked before its result is in.
        handle.steer("look in src instead");
        gate.release();
        let run = handle.await.expect("runs");
        assert_eq!(run.status(), RunStatus::Completed, "{api:?}: {run:?}");

        let received = server.requests();
        assert_eq!(received.len(), 2, "{api:?}");
        let told = received[1].told_since_last_turn();
        let (result, note) = (
            told.find("done").expect("the call's result"),
            told.find("look in src instead").expect("the note"),
        );
        assert!(
            result < note,
            "{api:?}: the note follows the result: {told}"
        );
        // In the ledger: the batch's result, then the note, then the next model call.
        let ledger = engine.ledger(run.id()).await.unwrap();
        let kinds: Vec<&str> = ledger.entries().iter().map(|e| e.event().name()).collect();
        let pos = |k: &str| kinds.iter().position(|n| *n == k).expect(k);
        let second_attempt = kinds
            .iter()
            .enumerate()
            .filter(|(_, n)| **n == "planner_attempt")
            .nth(1)
            .map(|(i, _)| i)
            .expect("a second model call");
        assert!(pos("tool_result") < pos("steering"), "{kinds:?}");
        assert!(pos("steering") < second_attempt, "{kinds:?}");
    }
}

//! `LlmPlanner` streaming against the fake server: the pieces of the reply it publishes
//! through the step's meter arrive in order and complete — their concatenation is the reply
//! the meter records — for both APIs, whatever size the server's writes are cut to.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rein_llm::fake::{Call, FakeServer, Reply};
use rein_llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein_run::{
    BudgetSnapshot, BudgetUsage, DeltaSink, ModelDelta, ModelReply, PlanMeter, PlanRequest,
    Planner, Run, State, Timestamp, ToolName, ToolSpec,
};
use serde_json::json;

/// Keeps every piece published, in order.
#[derive(Debug, Default)]
struct Screen {
    pieces: Mutex<Vec<ModelDelta>>,
    watching: bool,
}

impl DeltaSink for Screen {
    fn wanted(&self) -> bool {
        self.watching
    }
    fn delta(&self, delta: ModelDelta) {
        self.pieces.lock().unwrap().push(delta);
    }
}

const PROSE: &str = "Reading the notes — ré/sumé ✓ first.";

fn calls() -> Vec<Call> {
    vec![
        Call::new("fs_read", &json!({"path": "ré/sumé ✓.txt"})),
        Call::new("fs_list", &json!({"path": "."})),
    ]
}

/// Plans one step in `explore` against `reply`, streamed, with a meter publishing to
/// `screen`; the reply the meter recorded.
async fn plan(api: Api, reply: Reply, screen: &Arc<Screen>) -> ModelReply {
    let server = FakeServer::start([reply]).await.unwrap();
    let config = ProviderConfig::new(api, server.base_url(), "m").with_stream(true);
    let provider = HttpProvider::with_key(config, Some("k")).unwrap();
    let planner = LlmPlanner::new(provider, LlmConfig::default());
    let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
    let mut run = Run::new(
        "run-1".parse().unwrap(),
        "read",
        Default::default(),
        json!({}),
        t0,
    );
    run.enter(State::Explore, t0).unwrap();
    let specs: Vec<ToolSpec> = ["fs.list", "fs.read"]
        .iter()
        .map(|n| ToolSpec::new(ToolName::new(*n).unwrap(), "a tool"))
        .collect();
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let meter = PlanMeter::unlimited().with_deltas(Arc::clone(screen) as Arc<dyn DeltaSink>);
    let request = PlanRequest::new(&run, &specs, BudgetSnapshot::new(&limits, &usage))
        .with_next_states(&[State::Decide, State::Failed])
        .with_meter(&meter);
    planner.plan(request).await.unwrap();
    let calls = meter.calls();
    assert_eq!(calls.len(), 1);
    calls[0].reply.clone().unwrap()
}

/// The reply the pieces add up to: prose, and each call's arguments by its index.
fn assembled(pieces: &[ModelDelta]) -> (String, BTreeMap<u32, (String, String)>) {
    let mut text = String::new();
    let mut calls: BTreeMap<u32, (String, String)> = BTreeMap::new();
    for piece in pieces {
        match piece {
            ModelDelta::Text(t) => text.push_str(t),
            ModelDelta::ToolArguments { index, name, piece } => {
                let call = calls.entry(*index).or_default();
                call.0.clone_from(name);
                call.1.push_str(piece);
            }
            other => panic!("a piece this test does not know: {other:?}"),
        }
    }
    (text, calls)
}

fn check(recorded: &ModelReply, pieces: &[ModelDelta], what: &str) {
    assert!(
        pieces.len() > 3,
        "{what}: the reply came in pieces: {pieces:?}"
    );
    let (text, calls) = assembled(pieces);
    assert_eq!(text, recorded.text, "{what}");
    assert_eq!(calls.len(), recorded.calls.len(), "{what}");
    for (i, call) in recorded.calls.iter().enumerate() {
        let (name, arguments) = &calls[&u32::try_from(i).unwrap()];
        assert_eq!((name, arguments), (&call.name, &call.arguments), "{what}");
    }
    // Each call's pieces follow the prose and come call by call, in the reply's order.
    let order: Vec<Option<u32>> = pieces
        .iter()
        .map(|p| match p {
            ModelDelta::ToolArguments { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "{what}: pieces in order");
}

#[tokio::test]
async fn the_published_pieces_add_up_to_the_recorded_reply_for_both_apis() {
    for piece in [1, 7, 64] {
        let screen = Arc::new(Screen {
            watching: true,
            ..Screen::default()
        });
        let reply = Reply::openai_sse(PROSE, &calls(), (21, 8), piece);
        let recorded = plan(Api::OpenAi, reply, &screen).await;
        assert_eq!(recorded.text, PROSE);
        check(
            &recorded,
            &screen.pieces.lock().unwrap(),
            &format!("openai, piece {piece}"),
        );

        let screen = Arc::new(Screen {
            watching: true,
            ..Screen::default()
        });
        let reply = Reply::anthropic_sse(PROSE, &calls(), (33, 4), piece);
        let recorded = plan(Api::Anthropic, reply, &screen).await;
        assert_eq!(recorded.calls.len(), 2);
        check(
            &recorded,
            &screen.pieces.lock().unwrap(),
            &format!("anthropic, piece {piece}"),
        );
    }
}

#[tokio::test]
async fn an_anthropic_call_without_input_deltas_publishes_its_start_input() {
    // A tool_use block whose input is all in its start block (some servers send no delta).
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "fs_list", "input": {"path": "."}}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    let screen = Arc::new(Screen {
        watching: true,
        ..Screen::default()
    });
    let recorded = plan(
        Api::Anthropic,
        Reply::sse_pieces(body.as_bytes(), 9),
        &screen,
    )
    .await;
    let pieces = screen.pieces.lock().unwrap();
    let (text, calls) = assembled(&pieces);
    assert_eq!(text, "");
    assert_eq!(calls[&0].1, recorded.calls[0].arguments);
    assert_eq!(recorded.calls[0].arguments, r#"{"path":"."}"#);
}

#[tokio::test]
async fn nothing_is_published_when_nobody_watches() {
    let screen = Arc::new(Screen::default());
    let reply = Reply::openai_sse(PROSE, &calls(), (21, 8), 7);
    let recorded = plan(Api::OpenAi, reply, &screen).await;
    assert_eq!(recorded.text, PROSE);
    assert!(screen.pieces.lock().unwrap().is_empty());
}

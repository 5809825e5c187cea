//! Compaction of a long run's prompt: whether a request is over its limit is decided
//! exactly at its estimate, yet without measuring more of the history than the limit; the
//! cut moves in blocks, so between two moves each request extends the one before; and what
//! a compaction records stays the same size however long the run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rein_llm::fake::{Call, FakeServer, Reply};
use rein_llm::{
    Api, ChatRequest, Compaction, HttpProvider, LlmConfig, LlmPlanner, PromptConfig,
    ProviderConfig, build_request, estimate_tokens, rebuild_request,
};
use rein_run::{
    BoxFuture, BudgetSnapshot, BudgetUsage, EvidenceKind, ModelCall, ModelReply, Payload,
    PlanEvent, PlanMeter, PlanRequest, PlanSink, PlanSinkClosed, Planner, PromptCompaction, Run,
    State, Timestamp, ToolName, Turn,
};
use serde_json::json;

/// The size of each tool result, as in the long-run benchmark.
const RESULT_BYTES: usize = 2048;

/// A run in `explore` whose every step is one read answered by its 2 KB result, with the
/// model's turns that made them.
fn long_run(steps: u32) -> (Run, Vec<Turn>) {
    let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
    let mut run = Run::new(
        "run-1".parse().unwrap(),
        "read every blob",
        Default::default(),
        json!({}),
        t0,
    );
    run.enter(State::Explore, t0).unwrap();
    let mut turns = Vec::new();
    for step in 0..steps {
        turns.push(Turn {
            step,
            state: State::Explore,
            after: run.evidence().len(),
            reply: Arc::new(ModelReply {
                text: String::new(),
                calls: vec![ModelCall {
                    id: format!("call_{step}"),
                    name: "blob_read".into(),
                    arguments: "{}".into(),
                }],
            }),
        });
        run.count_step(t0).unwrap();
        run.add_evidence(
            EvidenceKind::ToolResult {
                tool: ToolName::new("blob.read").unwrap(),
                input: json!({}).into(),
                output: Payload::Inline(json!({"text": "x".repeat(RESULT_BYTES - 12)})),
                cached: false,
            },
            t0,
        )
        .unwrap();
    }
    (run, turns)
}

/// The request built for the step after `steps` steps.
fn request_after(steps: u32, config: &PromptConfig) -> ChatRequest {
    let (run, turns) = long_run(steps);
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let request =
        PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage)).with_dialogue(&turns);
    build_request(config, &request, Compaction::WhenOverLimit)
}

fn compacting(max_prompt_tokens: u64, keep_last: usize) -> PromptConfig {
    PromptConfig {
        max_prompt_tokens: Some(max_prompt_tokens),
        keep_last,
        ..PromptConfig::default()
    }
}

#[test]
fn a_request_is_over_its_limit_exactly_when_its_estimate_is() {
    let full = request_after(30, &PromptConfig::default());
    let estimate = estimate_tokens(&full);
    // At its estimate: sent whole.
    assert_eq!(request_after(30, &compacting(estimate, 4)), full);
    // One token less: compacted, the last items kept.
    let compacted = request_after(30, &compacting(estimate - 1, 4));
    assert!(estimate_tokens(&compacted) < estimate);
    let text = serde_json::to_string(&compacted).unwrap();
    assert!(
        text.contains("[compacted] earlier tool results omitted to fit the context: blob.read ×"),
        "{text}"
    );
    assert!(text.contains("call_29") && !text.contains("call_0\""));
}

#[test]
fn the_cut_moves_in_blocks_and_between_two_moves_each_request_extends_the_last() {
    let config = compacting(1, 8);
    let requests: Vec<ChatRequest> = (16..=25).map(|n| request_after(n, &config)).collect();
    // 16 items: the cut at 8. 17 to 23: still at 8, each request the one before and what
    // came since. 24: the cut moves to 16.
    for (n, pair) in (16..).zip(requests.windows(2)) {
        let (before, after) = (&pair[0], &pair[1]);
        let extends = after.messages.starts_with(&before.messages);
        assert_eq!(extends, n + 1 != 24, "from {n} to {} items", n + 1);
    }
    let kept = |r: &ChatRequest| {
        (0..30)
            .filter(|step| {
                serde_json::to_string(r)
                    .unwrap()
                    .contains(&format!("\"call_{step}\""))
            })
            .count()
    };
    // Between 8 and 15 of the latest steps kept verbatim.
    assert_eq!(kept(&requests[0]), 8, "16 items");
    assert_eq!(kept(&requests[7]), 15, "23 items");
    assert_eq!(kept(&requests[8]), 8, "24 items");
}

/// Keeps what a planner records.
#[derive(Debug, Default)]
struct Kept(Mutex<Vec<PlanEvent>>);

impl PlanSink for Kept {
    fn record(&self, event: PlanEvent) -> BoxFuture<'_, Result<(), PlanSinkClosed>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// What the planner records when it plans the step after `steps` steps with `config`, and
/// the request it sent.
async fn planned_after(steps: u32, config: &PromptConfig) -> (PromptCompaction, serde_json::Value) {
    let server = FakeServer::start([Reply::openai_calls(
        &[Call::new("fail", &json!({"reason": "enough"}))],
        (1, 1),
    )])
    .await
    .unwrap();
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake").with_retries(0),
        None,
    )
    .unwrap();
    let planner = LlmPlanner::new(
        provider,
        LlmConfig {
            prompt: config.clone(),
            ..LlmConfig::default()
        },
    );
    let (run, turns) = long_run(steps);
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let kept = Arc::new(Kept::default());
    let meter = PlanMeter::new(BudgetSnapshot::new(&limits, &usage)).with_sink(kept.clone());
    let next = [State::Decide, State::Failed];
    let request = PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage))
        .with_dialogue(&turns)
        .with_next_states(&next)
        .with_meter(&meter);
    planner.plan(request).await.unwrap();
    let events = kept.0.lock().unwrap_or_else(PoisonError::into_inner);
    let compactions: Vec<&PromptCompaction> = events
        .iter()
        .filter_map(|e| match e {
            PlanEvent::Compacted(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(compactions.len(), 1, "{steps} steps");
    (compactions[0].clone(), server.requests()[0].json())
}

#[tokio::test]
async fn what_a_compaction_records_stays_the_same_size_however_long_the_run() {
    let limit = 16_000;
    let config = compacting(limit, 8);
    let (at_100, _) = planned_after(100, &config).await;
    let (at_1000, sent) = planned_after(1_000, &config).await;
    for (steps, c) in [(100, &at_100), (1_000, &at_1000)] {
        // The cut, not a hash for each message left out: the record names a range of the
        // run's own evidence.
        assert_eq!(c.dropped, None, "{steps}");
        assert_eq!(
            c.kept_from,
            Some(steps / 8 * 8 - 8),
            "{steps}: a multiple of 8"
        );
        assert_eq!(u64::from(c.results), steps / 8 * 8 - 8, "{steps}");
        // Measured until past the limit, not through the whole history (1,000 results of
        // 2 KB would be some 700,000 tokens): just past the limit, by at most one step's
        // messages.
        assert!(
            c.tokens_before > limit && c.tokens_before < limit + 2_000,
            "{steps}: {c:?}"
        );
    }
    let size = |c: &PromptCompaction| serde_json::to_vec(c).unwrap().len();
    assert!(size(&at_1000) < 400, "{at_1000:?}");
    assert!(size(&at_1000) <= size(&at_100) + 4, "only wider numbers");

    // The record rebuilds the request that was sent, byte for byte.
    let (run, turns) = long_run(1_000);
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let next = [State::Decide, State::Failed];
    let request = PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage))
        .with_dialogue(&turns)
        .with_next_states(&next);
    let rebuilt = rebuild_request(&config, &request, Some(&at_1000));
    let body = rein_llm::request_body(
        &ProviderConfig::new(Api::OpenAi, "http://x", "fake"),
        &rebuilt,
    );
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["messages"], sent["messages"]);
}

#[test]
fn an_entry_written_before_the_cut_was_recorded_rebuilds_with_the_cut_it_was_made_with() {
    // As an earlier version recorded it: a hash for each message left out, no cut. It cut
    // before the last `keep_last` items, wherever that fell.
    let old: PromptCompaction = serde_json::from_value(json!({
        "reason": "over_limit",
        "keep_last": 8,
        "max_item_chars": 4000,
        "replies": 12,
        "results": 12,
        "dropped": ["aa".repeat(32)],
        "summary": "bb".repeat(32),
        "tokens_before": 9000,
        "tokens_after": 7000
    }))
    .unwrap();
    assert_eq!(old.kept_from, None);
    assert_eq!(old.dropped.as_ref().map(Vec::len), Some(1));
    let (run, turns) = long_run(20);
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let request =
        PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage)).with_dialogue(&turns);
    let text = serde_json::to_string(&rebuild_request(
        &PromptConfig::default(),
        &request,
        Some(&old),
    ))
    .unwrap();
    // The last 8 of 20 kept: calls 12 to 19.
    assert!(
        text.contains("\"call_12\"") && !text.contains("\"call_11\""),
        "{text}"
    );
    assert!(
        text.contains("blob.read ×12; 12 of your earlier replies"),
        "{text}"
    );
}

#[test]
fn a_request_compacted_before_compactions_were_recorded_rebuilds_as_it_was_cut_then() {
    // Over its limit with no prompt_compacted entry: this version would have recorded the
    // compaction, so an earlier one made it, cutting before the last `keep_last` items.
    let config = compacting(1, 8);
    let (run, turns) = long_run(20);
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let request =
        PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage)).with_dialogue(&turns);
    let text = |r: &ChatRequest| serde_json::to_string(r).unwrap();
    let rebuilt = text(&rebuild_request(&config, &request, None));
    assert!(
        rebuilt.contains("\"call_12\"") && !rebuilt.contains("\"call_11\""),
        "{rebuilt}"
    );
    // This version cuts at a multiple of 8.
    let built = text(&build_request(&config, &request, Compaction::WhenOverLimit));
    assert!(
        built.contains("\"call_8\"") && !built.contains("\"call_7\""),
        "{built}"
    );
}

//! W7 of docs/BENCHMARKS.md, a long LLM run: the LLM planner against the loopback fake
//! server for 1,000 steps, each a tool call whose result is 2 KB. At steps 10, 100 and
//! 1,000: the time rein spends building the step's request from the run's history (the
//! prompt projected from the ledger, then the provider's body), against a baseline measured
//! in the same run — encoding those same bytes once with `serde_json` — with the request's
//! size; how much of the previous step's request the step's request keeps as its prefix;
//! and the share of input tokens a prefix-caching server served from its cache. Once
//! without compaction, once with it (`max_prompt_tokens`): with it, size and build time
//! stay bounded.
//!
//! Run with: `cargo bench -p rein-cli --bench long_llm` (about a minute), or `-- --short`
//! (100 steps, seconds); `-- with` or `-- without` runs only the run with compaction, or
//! only the one without.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a benchmark reports figures to its terminal"
)]

use std::hint::black_box;
use std::time::Instant;

use rein::ledger::EntryKind;
use rein::llm::{
    Api, ChatRequest, Compaction, HttpProvider, LlmConfig, LlmPlanner, PromptConfig,
    ProviderConfig, build_request, request_body,
};
use rein::prelude::*;
use rein::{Ledger, PlanRequest};
use rein_llm::fake::{Call, FakeServer, Reply};

/// Repetitions of each timed figure; the median is shown.
const REPS: usize = 7;

/// The size of each tool result.
const RESULT_BYTES: usize = 2048;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let short = args.iter().any(|a| a == "--short");
    let only = |which: &str| {
        let named = args.iter().any(|a| a == "with" || a == "without");
        !named || args.iter().any(|a| a == which)
    };
    let steps: u32 = if short { 100 } else { 1_000 };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    println!(
        "W7 a long LLM run: {steps} steps against the loopback fake server (prefix caching modelled), \
         each a tool call with a {RESULT_BYTES}-byte result; medians of {REPS}"
    );
    let full = PromptConfig::default();
    let compacting = PromptConfig {
        max_prompt_tokens: Some(16_000),
        keep_last: 8,
        ..PromptConfig::default()
    };
    for (which, label, prompt) in [
        ("without", "without compaction", full),
        (
            "with",
            "with compaction (max_prompt_tokens 16000, keep_last 8)",
            compacting,
        ),
    ] {
        if only(which) {
            w7(&runtime, steps, label, &prompt);
        }
    }
}

fn blob() -> FnTool {
    FnTool::builder("blob.read")
        .description("Reads the next blob")
        .annotations(Annotations::read_only())
        .input_schema(json!({"type": "object", "properties": {}}))
        .handler(|_input: Value| async { Ok(json!({"text": "x".repeat(RESULT_BYTES - 12)})) })
        .build()
        .expect("a valid tool")
}

fn w7(rt: &tokio::runtime::Runtime, steps: u32, label: &str, prompt: &PromptConfig) {
    let (ledger, provider, seconds) = rt.block_on(async {
        let server = FakeServer::caching_then_repeating(
            [Reply::openai_calls(
                &[Call::new(
                    "transition",
                    &json!({"to": "explore", "reason": "start"}),
                )],
                (100, 10),
            )],
            Reply::openai_calls(&[Call::new("blob_read", &json!({}))], (100, 10)),
        )
        .await
        .expect("the fake server");
        let provider = ProviderConfig::new(Api::OpenAi, server.base_url(), "fake").with_retries(0);
        let config = LlmConfig {
            prompt: prompt.clone(),
            ..LlmConfig::default()
        };
        let planner = LlmPlanner::new(
            HttpProvider::new(provider.clone()).expect("a provider"),
            config,
        );
        let engine = Engine::builder()
            .tool(blob())
            .planner(planner)
            // The run ends when the calls are spent: the budget refuses the next one.
            .budget("tool_calls", u64::from(steps))
            .max_steps(steps + 5)
            .build()
            .expect("a valid engine");
        let start = Instant::now();
        let run = engine.run("read every blob").await.expect("the run");
        let seconds = start.elapsed().as_secs_f64();
        let ledger = engine.ledger(run.id()).await.expect("the ledger");
        (ledger, (engine, provider), seconds)
    });
    let (engine, provider) = provider;
    println!("  {label}: the whole run {seconds:.2} s");
    let mut previous: Option<Vec<u8>> = None;
    for k in [9, 10, 99, 100, 999, 1_000] {
        if k > steps {
            break;
        }
        let built = engine
            .plan_request_at(&ledger, k, |request| measure(prompt, &provider, &request))
            .expect("the ledger projects")
            .expect("the step was planned");
        let Some(before) = previous.replace(built.body.clone()) else {
            continue;
        };
        if k % 10 != 0 {
            continue;
        }
        let shared = before
            .iter()
            .zip(&built.body)
            .take_while(|(a, b)| a == b)
            .count();
        println!(
            "    step {k:>5}: build {:>9.1} µs vs encode {:>8.1} µs = {:>5.2}×; request {:>7.1} KB; \
             keeps {:>5.1}% of step {}'s request as its prefix",
            built.build_us,
            built.encode_us,
            built.build_us / built.encode_us,
            built.body.len() as f64 / 1024.0,
            shared as f64 * 100.0 / before.len() as f64,
            k - 1
        );
    }
    let (input, cached, compactions) = usage(&ledger);
    println!(
        "    input tokens {input}, of which served from the prefix cache {cached} ({:.1}%); \
         prompt_compacted entries {compactions}",
        cached as f64 * 100.0 / input.max(1) as f64
    );
    let (all, compacted, largest) = ledger_bytes(&ledger);
    println!(
        "    ledger {:.1} KB, of which prompt_compacted entries {:.1} KB (the largest {} bytes)",
        all as f64 / 1024.0,
        compacted as f64 / 1024.0,
        largest
    );
}

/// The ledger's bytes (its JSON lines), those of its `prompt_compacted` entries, and the
/// largest of these.
fn ledger_bytes(ledger: &Ledger) -> (usize, usize, usize) {
    ledger
        .entries()
        .iter()
        .fold((0, 0, 0), |(all, compacted, largest), e| {
            let len = e.json_line().len();
            match e.event() {
                EntryKind::PromptCompacted { .. } => (all + len, compacted + len, largest.max(len)),
                _ => (all + len, compacted, largest),
            }
        })
}

/// One step's request, built and encoded.
struct Built {
    body: Vec<u8>,
    /// The median time to build the request and its body from the step's history.
    build_us: f64,
    /// The median time to encode the same request's JSON once (the baseline).
    encode_us: f64,
}

fn measure(prompt: &PromptConfig, provider: &ProviderConfig, request: &PlanRequest<'_>) -> Built {
    let build = || {
        let chat: ChatRequest = build_request(prompt, request, Compaction::WhenOverLimit);
        request_body(provider, &chat)
    };
    let body = build();
    let value: Value = serde_json::from_slice(&body).expect("the body is JSON");
    let median = |f: &dyn Fn() -> usize| {
        let mut samples: Vec<f64> = (0..REPS)
            .map(|_| {
                let start = Instant::now();
                black_box(f());
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[REPS / 2]
    };
    let build_us = median(&|| build().len());
    let encode_us = median(&|| serde_json::to_vec(&value).map_or(0, |b| b.len()));
    Built {
        body,
        build_us,
        encode_us,
    }
}

/// Input tokens, those of them the server's prefix cache served, and the compactions
/// recorded.
fn usage(ledger: &Ledger) -> (u64, u64, usize) {
    ledger
        .entries()
        .iter()
        .fold((0, 0, 0), |(input, cached, compactions), e| {
            match e.event() {
                EntryKind::PlannerCall { call, .. } => (
                    input + call.input_tokens,
                    cached + call.cache_read_tokens,
                    compactions,
                ),
                EntryKind::PromptCompacted { .. } => (input, cached, compactions + 1),
                _ => (input, cached, compactions),
            }
        })
}

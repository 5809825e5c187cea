//! rein's added latency per model call: `HttpProvider::complete` (request body built and
//! hashed, retry and breaker layers, reply parsed into a `ChatResponse`) against a raw
//! `reqwest` POST of the same body whose reply is only read, both to the same loopback fake
//! server, streamed (SSE) and not.
//!
//! Run with: `cargo bench -p rein-llm --bench overhead -- --warm-up-time 1 --measurement-time 3`
//!
//! Each benchmark times a loop of awaited calls inside one `block_on` of a current-thread
//! runtime that also runs the server. At the end the median µs/call of each side and their
//! ratio are printed to stderr.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt as _;
use rein_llm::fake::{Call, FakeServer, Reply};
use rein_llm::{
    Api, ChatRequest, FunctionDef, HttpProvider, Message, Provider, ProviderConfig, request_body,
};
use serde_json::json;
use tokio::runtime::Runtime;

/// Per-sample µs/call, collected from criterion's timed samples.
#[derive(Default, Clone)]
struct Samples(Arc<Mutex<Vec<f64>>>);

impl Samples {
    fn push(&self, iters: u64, elapsed: Duration) {
        self.0
            .lock()
            .unwrap()
            .push(elapsed.as_secs_f64() * 1e6 / iters as f64);
    }

    fn median(&self) -> f64 {
        let mut samples = self.0.lock().unwrap().clone();
        samples.sort_by(f64::total_cmp);
        samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        system: "You are the planner of a governed run.".into(),
        messages: vec![Message::User {
            text: "Goal: read the notes.\nEvidence so far: none.".into(),
        }],
        functions: vec![FunctionDef {
            name: "fs_read".into(),
            description: "reads a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
    }
}

fn one(c: &mut Criterion, runtime: &Runtime, stream: bool) {
    let calls = [Call::new("fs_read", &json!({"path": "notes.txt"}))];
    let reply = if stream {
        Reply::openai_sse("Reading the notes.", &calls, (120, 18), 64)
    } else {
        Reply::openai_calls(&calls, (120, 18))
    };
    let server = runtime.block_on(FakeServer::repeating(reply)).unwrap();
    let config = ProviderConfig::new(Api::OpenAi, server.base_url(), "bench").with_stream(stream);
    let provider = HttpProvider::with_key(config.clone(), None).unwrap();
    let body = request_body(&config, &request());
    let url = format!("{}/chat/completions", server.base_url());
    let raw = reqwest::Client::builder().no_proxy().build().unwrap();
    let (raw_samples, rein_samples) = (Samples::default(), Samples::default());
    let name = if stream { "streamed" } else { "not_streamed" };

    let mut group = c.benchmark_group(format!("model_call_{name}"));
    group.bench_function("raw_reqwest", |b| {
        b.iter_custom(|iters| {
            let elapsed = runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let response = raw
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    let mut bytes = response.bytes_stream();
                    while let Some(chunk) = bytes.next().await {
                        black_box(chunk.unwrap());
                    }
                }
                start.elapsed()
            });
            raw_samples.push(iters, elapsed);
            elapsed
        });
    });
    let chat = request();
    group.bench_function("rein_provider", |b| {
        b.iter_custom(|iters| {
            let elapsed = runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(provider.complete(black_box(&chat)).await.unwrap());
                }
                start.elapsed()
            });
            rein_samples.push(iters, elapsed);
            elapsed
        });
    });
    group.finish();

    let (raw, rein) = (raw_samples.median(), rein_samples.median());
    eprintln!(
        "\nmodel call ({name}), median of criterion's samples: raw reqwest {raw:.1} µs/call, \
         rein {rein:.1} µs/call, rein/raw {:.2}x (+{:.1} µs/call)",
        rein / raw,
        rein - raw
    );
}

fn overhead(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    one(c, &runtime, false);
    one(c, &runtime, true);
}

criterion_group!(benches, overhead);
criterion_main!(benches);

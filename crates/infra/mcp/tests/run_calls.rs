//! A governed call tied to its run through the engine's `CurrentCall`, against the
//! reference server `server-everything` (installed by `make mcp-servers`): its progress
//! reaches the run's subscribers (and not the ledger), and its sampling request is
//! answered by the run's planner's model under the run's budgets, recorded and charged
//! like the planner's own calls — or refused when the worst case does not fit.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rein_engine::{CurrentCall, Engine, RunEvent};
use rein_mcp::{McpServer, ServerConfig};
use rein_planner::{ScriptStep, ScriptedPlanner};
use rein_policy::AutoApprover;
use rein_run::{
    Cost, Decision, Digest, PlanMeter, PlanRequest, Planner, PlannerAttempt, PlannerCall,
    PlannerError, RunStatus, State,
};
use rein_tool::{SampleError, SampleReply, SampleRequest, ToolNotice};
use serde_json::{Value, json};

fn everything() -> ServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../target/mcp/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "{} is missing: run `make mcp-servers`",
        script.display()
    );
    ServerConfig::stdio(
        "every".parse().unwrap(),
        [
            "node".to_owned(),
            script.display().to_string(),
            "stdio".to_owned(),
        ],
    )
    .with_handshake_timeout(Duration::from_secs(60))
    .with_call_scopes(Arc::new(CurrentCall))
}

/// A script whose model answers sampling requests: each declared at a worst case of
/// `worst` tokens, and using 40 in and 8 out.
struct Modelled {
    script: ScriptedPlanner,
    worst: u64,
}

impl Planner for Modelled {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        self.script.plan(request).await
    }

    async fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
        meter: &'a PlanMeter,
    ) -> Result<SampleReply, SampleError> {
        let hash = Digest::of_bytes(request.messages[0].1.as_bytes());
        let attempt = PlannerAttempt {
            attempt: 1,
            provider: "test".into(),
            model: "m".into(),
            request_hash: hash,
            worst_tokens: self.worst,
            worst_cost: Cost::Unknown,
        };
        match meter.begin(attempt).await {
            Ok(()) => {}
            Err(PlannerError::OverBudget(exhausted)) => {
                return Err(SampleError::Budget {
                    budget: exhausted.name.to_string(),
                });
            }
            Err(other) => return Err(SampleError::Failed(other.to_string())),
        }
        meter
            .end(PlannerCall {
                provider: "test".into(),
                model: "m".into(),
                request_hash: hash,
                input_tokens: 40,
                output_tokens: 8,
                cost: Cost::Unknown,
                latency_ms: 0,
                finish_reason: Some("stop".into()),
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                reply: None,
            })
            .await
            .map_err(|e| SampleError::Failed(e.to_string()))?;
        Ok(SampleReply {
            model: "m".into(),
            text: "forty-two".into(),
            stop_reason: Some("endTurn".into()),
        })
    }
}

/// A script that calls `tool` with `input` in act, then finishes.
fn script(tool: &str, input: Value) -> ScriptedPlanner {
    ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "go")),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "go")),
        ScriptStep::expect(State::Act, Decision::call_tool(tool, input, "go")),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "done")),
        ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
    ])
}

async fn engine(server: &McpServer, planner: impl Planner, tokens: u64) -> Engine {
    let mut builder = Engine::builder();
    for t in server.tools() {
        builder = builder.tool(t);
    }
    builder
        .approver(AutoApprover)
        .budget("tokens", tokens)
        .planner(planner)
        .build()
        .expect("engine builds")
}

fn kinds(ledger: &rein_ledger::Ledger) -> Vec<&'static str> {
    ledger.entries().iter().map(|e| e.event().name()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_of_a_governed_call_reaches_the_runs_subscribers_and_not_its_ledger() {
    let server = McpServer::connect(everything()).await.expect("connects");
    let planner = script(
        "every.trigger-long-running-operation",
        json!({"duration": 0.3, "steps": 3}),
    );
    let engine = engine(&server, planner, 1_000).await;
    let handle = engine.start("work a while").await.expect("start");
    let mut events = handle.subscribe();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let mut progress = Vec::new();
    while let Some(event) = events.next().await {
        if let RunEvent::ToolNotice(noticed) = event {
            assert_eq!(noticed.run, *run.id());
            assert_eq!(
                noticed.tool.as_str(),
                "every.trigger-long-running-operation"
            );
            if let ToolNotice::Progress {
                progress: done,
                total,
                ..
            } = noticed.notice
            {
                progress.push((done, total));
            }
        }
    }
    // In order, as the server sent them. FIXME: rmcp hands a notification to the handler
    // concurrently with the response that follows it, so one sent right before the result
    // (here the last) may find the call ended and be dropped; the earlier ones arrive.
    assert!(
        progress.starts_with(&[(1.0, Some(3.0)), (2.0, Some(3.0))]) && progress.len() <= 3,
        "{progress:?}"
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let lines: String = ledger
        .entries()
        .iter()
        .map(|e| String::from_utf8_lossy(e.json_line()).into_owned())
        .collect();
    assert!(!lines.contains("progress"), "{lines}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sampling_request_is_answered_by_the_runs_model_charged_and_recorded() {
    let server = McpServer::connect(everything().with_run_sampling())
        .await
        .expect("connects");
    let planner = Modelled {
        script: script(
            "every.trigger-sampling-request",
            json!({"prompt": "the answer?", "maxTokens": 50}),
        ),
        worst: 500,
    };
    let engine = engine(&server, planner, 1_000).await;
    let run = engine.run("ask the model").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(run.usage().used(&rein_run::BudgetName::TOKENS), 48);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    let kinds = kinds(&ledger);
    // Recorded within the call: the attempt before it goes out, then what it used and
    // its charge, before the call's result.
    let call = kinds.iter().position(|k| *k == "tool_call").unwrap();
    let result = kinds.iter().position(|k| *k == "tool_result").unwrap();
    assert_eq!(
        kinds[call + 1..result],
        ["planner_attempt", "planner_call", "budget_consumed"],
        "{kinds:?}"
    );
    let line = String::from_utf8_lossy(ledger.entries()[result].json_line()).into_owned();
    assert!(line.contains("forty-two"), "{line}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sampling_request_whose_worst_case_does_not_fit_is_refused_and_not_made() {
    let server = McpServer::connect(everything().with_run_sampling())
        .await
        .expect("connects");
    let planner = Modelled {
        script: script(
            "every.trigger-sampling-request",
            json!({"prompt": "the answer?", "maxTokens": 50}),
        ),
        worst: 5_000,
    };
    let engine = engine(&server, planner, 1_000).await;
    let run = engine.run("ask the model").await.expect("run");
    assert_eq!(run.usage().used(&rein_run::BudgetName::TOKENS), 0);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let kinds = kinds(&ledger);
    assert!(!kinds.contains(&"planner_call"), "{kinds:?}");
    let lines: String = ledger
        .entries()
        .iter()
        .map(|e| String::from_utf8_lossy(e.json_line()).into_owned())
        .collect();
    assert!(
        lines.contains("the run's tokens budget has no room for this sampling request"),
        "{lines}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_planner_without_a_model_refuses_to_sample() {
    let server = McpServer::connect(everything().with_run_sampling())
        .await
        .expect("connects");
    let planner = script(
        "every.trigger-sampling-request",
        json!({"prompt": "the answer?", "maxTokens": 50}),
    );
    let engine = engine(&server, planner, 1_000).await;
    let run = engine.run("ask the model").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let lines: String = ledger
        .entries()
        .iter()
        .map(|e| String::from_utf8_lossy(e.json_line()).into_owned())
        .collect();
    assert!(
        lines.contains("the run's planner has no model to sample with"),
        "{lines}"
    );
    server.shutdown().await;
}

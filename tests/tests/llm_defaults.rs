//! Hand-back by default where the planner can correct itself (DESIGN §7): an engine driven
//! by the LLM planner hands tool errors and rejections back to the model unless configured
//! otherwise, a script's engine fails the run, and each run's policy snapshot records which —
//! so a resume keeps the run's own, whatever the resuming engine says.

mod support;

use rein::ledger::EntryKind;
use rein::llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::planner::MockPlanner;
use rein::policy::{DEFAULT_HAND_BACK_LIMIT, OnToolError, OnViolation};
use rein::run::{EvidenceKind, FailureKind};
use rein::{
    Annotations, Decision, Engine, EngineBuilder, PlanRequest, Planner, Run, RunStatus, ScriptStep,
    ScriptedPlanner, State, ToolError, Value, json,
};
use rein_llm::fake::{Call, FakeServer, Reply};
use support::failing;

fn call(name: &str, args: &Value) -> Reply {
    Reply::openai_calls(&[Call::new(name, args)], (100, 20))
}

/// A model that reads a file (which fails), then, told so, finishes anyway.
async fn model() -> (FakeServer, LlmPlanner) {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_read", &json!({"path": "notes.txt"})),
        call(
            "transition",
            &json!({"to": "decide", "reason": "it failed"}),
        ),
        call("finish", &json!({"summary": "no notes", "result": null})),
    ])
    .await
    .expect("fake server");
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model"),
        None,
    )
    .expect("provider");
    (server, LlmPlanner::new(provider, LlmConfig::default()))
}

/// An engine with the failing `fs.read`, driven by `planner`.
fn builder(planner: impl Planner) -> EngineBuilder {
    let (read, _) = failing(
        "fs.read",
        Annotations::read_only(),
        ToolError::failed("disk on fire"),
    );
    Engine::builder().tool(read).planner(planner).max_steps(10)
}

/// The policy the run's ledger says it started under.
async fn recorded_policy(engine: &Engine, run: &Run) -> Value {
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    match ledger.entries().first().map(rein::ledger::Entry::event) {
        Some(EntryKind::RunStarted { policy, .. }) => (**policy).clone(),
        other => panic!("a ledger starts with run_started, not {other:?}"),
    }
}

#[tokio::test]
async fn an_llm_planned_engine_hands_a_tool_error_back_by_default() {
    let (_server, planner) = model().await;
    let engine = builder(planner).build().expect("engine builds");
    assert_eq!(engine.policy().on_tool_error, OnToolError::HandBack);
    assert_eq!(
        engine.policy().on_violation,
        OnViolation::HandBack {
            limit: DEFAULT_HAND_BACK_LIMIT
        }
    );

    let run = engine.run("read the notes").await.expect("the run ends");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert!(
        run.evidence()
            .iter()
            .any(|e| matches!(&e.kind, EvidenceKind::ToolFailure { .. })),
        "the failure went back to the model as evidence"
    );
    let policy = recorded_policy(&engine, &run).await;
    assert_eq!(policy["on_tool_error"], "hand_back");
    assert_eq!(
        policy["on_violation"],
        json!({"hand_back": {"limit": DEFAULT_HAND_BACK_LIMIT}})
    );
    assert_eq!(policy["budget"]["violations"], DEFAULT_HAND_BACK_LIMIT);
}

#[tokio::test]
async fn explicit_configuration_wins_over_the_planners_default() {
    let (_server, planner) = model().await;
    let engine = builder(planner)
        .on_tool_error(OnToolError::FailRun)
        .on_violation(OnViolation::FailRun)
        .build()
        .expect("engine builds");
    let run = engine.run("read the notes").await.expect("the run ends");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::ToolFailed));
    let policy = recorded_policy(&engine, &run).await;
    assert_eq!(
        policy.get("on_tool_error"),
        None,
        "the default is not written"
    );
    assert_eq!(policy.get("on_violation"), None);

    // A `violations` budget the configuration set is the hand-back limit.
    let (_server, planner) = model().await;
    let engine = builder(planner)
        .budget("violations", 7)
        .build()
        .expect("engine builds");
    assert_eq!(
        engine.policy().on_violation,
        OnViolation::HandBack { limit: 7 }
    );
}

#[tokio::test]
async fn a_scripted_engine_still_fails_the_run() {
    let script = ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("fs.read", json!({}), "read"),
        ),
    ]);
    let engine = builder(script).build().expect("engine builds");
    assert_eq!(engine.policy().on_tool_error, OnToolError::FailRun);
    assert_eq!(engine.policy().on_violation, OnViolation::FailRun);
    let run = engine.run("read the notes").await.expect("the run ends");
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::ToolFailed));
}

/// Asks a human first; then reads (which fails) and finishes if the failure came back.
fn asks_then_reads() -> MockPlanner {
    let failed = |r: &PlanRequest<'_>| {
        r.evidence()
            .iter()
            .any(|e| matches!(&e.kind, EvidenceKind::ToolFailure { .. }))
    };
    MockPlanner::new(move |request| {
        Ok(match request.state() {
            State::Intake if request.step() == 0 => {
                Decision::ask_human("go on?", vec!["yes".to_owned()])
            }
            State::Intake => Decision::transition(State::Explore, "go"),
            State::Explore if !failed(request) => Decision::call_tool("fs.read", json!({}), "read"),
            State::Explore => Decision::transition(State::Decide, "it failed"),
            _ => Decision::finish("done", json!(null)),
        })
    })
}

/// Pauses a run on an engine with `first`, resumes it on an engine over the same directory
/// with `second`; how the resumed run ended.
async fn restarted(first: OnToolError, second: OnToolError) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = |on_tool_error| {
        builder(asks_then_reads())
            .filesystem(dir.path())
            .on_tool_error(on_tool_error)
            .build()
            .expect("engine builds")
    };
    let paused = engine(first).run("persist").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    engine(second)
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume")
}

#[tokio::test]
async fn a_resume_keeps_the_tool_error_policy_the_run_recorded() {
    let run = restarted(OnToolError::HandBack, OnToolError::FailRun).await;
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let run = restarted(OnToolError::FailRun, OnToolError::HandBack).await;
    assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::ToolFailed));
}

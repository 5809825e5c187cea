//! The triage agent of `triage/agent.rs`, as its team would test it: with a scripted planner
//! (no model), and with the LLM planner against the loopback fake model server, counting the
//! model calls a run takes when the model answers one function per reply and when it makes
//! the sequences the prompt invites (a transition and the next state's calls in one reply).

#[path = "../triage/agent.rs"]
mod agent;

use rein::llm::fake::{Call, FakeServer, Reply};
use rein::llm::{Api, DEFAULT_SYSTEM_PROMPT, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::prelude::*;
use rein::{AutoApprover, Ledger};
use tempfile::TempDir;

/// A folder with two bug reports, and a data folder beside it.
fn folder() -> (TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let reports = dir.path().join("reports");
    std::fs::create_dir(&reports).expect("reports folder");
    std::fs::write(
        reports.join("bug-1.md"),
        "Checkout is down for every EU customer.\n",
    )
    .expect("report");
    std::fs::write(
        reports.join("bug-2.md"),
        "The footer logo is blurry (severity 1).\n",
    )
    .expect("report");
    let data = dir.path().join("data");
    (dir, reports, data)
}

const TABLE: &str = "| report | priority | queue |\n|---|---|---|\n| bug-1.md | 1 | oncall |\n| bug-2.md | 5 | backlog |\n";

/// What the model (or the script) decides, member by member, in the order a run needs it.
fn list() -> (&'static str, Value) {
    ("fs.list", json!({"path": "."}))
}
fn read(file: &str) -> (&'static str, Value) {
    ("fs.read", json!({"path": file}))
}
fn score(severity: u8, blocking: bool) -> (&'static str, Value) {
    (
        "triage.score",
        json!({"severity": severity, "blocking": blocking}),
    )
}
fn write() -> (&'static str, Value) {
    ("fs.write", json!({"path": "triage.md", "content": TABLE}))
}

/// The names of the ledger's entries, in order.
fn kinds(ledger: &Ledger) -> Vec<&'static str> {
    ledger.entries().iter().map(|e| e.event().name()).collect()
}

/// Runs the agent with `planner` and an approver that grants, and checks what a triage run
/// must leave behind: completed, `triage.md` written after its approval, a verified ledger.
async fn triage(planner: impl Planner) -> Ledger {
    let (_dir, reports, data) = folder();
    let engine = agent::engine(&reports, &data, planner, AutoApprover).expect("the agent builds");
    let run = engine
        .run("Triage the bug reports in this folder")
        .await
        .expect("the run ends");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(
        std::fs::read_to_string(reports.join("triage.md")).expect("triage.md"),
        TABLE
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    let kinds = kinds(&ledger);
    let asked = kinds
        .iter()
        .position(|k| *k == "approval_requested")
        .expect("approval asked");
    assert_eq!(kinds[asked + 1], "approval_granted", "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool_result").count(),
        6,
        "{kinds:?}"
    );
    ledger
}

#[tokio::test]
async fn the_triage_agent_runs_with_a_scripted_planner() {
    let steps = [
        (
            State::Intake,
            Decision::transition(State::Explore, "read the reports"),
        ),
        (State::Explore, call(list())),
        (State::Explore, call(read("bug-1.md"))),
        (State::Explore, call(read("bug-2.md"))),
        (State::Explore, call(score(5, true))),
        (State::Explore, call(score(1, false))),
        (
            State::Explore,
            Decision::transition(State::Decide, "scored"),
        ),
        (
            State::Decide,
            Decision::transition(State::Act, "write the table"),
        ),
        (State::Act, call(write())),
        (State::Act, Decision::transition(State::Validate, "written")),
        (
            State::Validate,
            Decision::finish("2 reports triaged", json!({"oncall": 1})),
        ),
    ];
    triage(ScriptedPlanner::new(
        steps.map(|(state, d)| ScriptStep::expect(state, d)),
    ))
    .await;
}

fn call((tool, input): (&str, Value)) -> Decision {
    Decision::call_tool(tool, input, "triage")
}

#[tokio::test]
async fn the_triage_agent_refuses_the_write_without_approval() {
    let (_dir, reports, data) = folder();
    let steps = [
        (State::Intake, Decision::transition(State::Explore, "read")),
        (
            State::Explore,
            Decision::transition(State::Decide, "nothing to read"),
        ),
        (State::Decide, Decision::transition(State::Act, "write")),
        (State::Act, call(write())),
    ];
    let planner = ScriptedPlanner::new(steps.map(|(state, d)| ScriptStep::expect(state, d)));
    let engine = agent::engine(&reports, &data, planner, DenyApprover).expect("the agent builds");
    let run = engine.run("Triage").await.expect("the run ends");
    assert_eq!(run.status(), RunStatus::Failed);
    assert!(
        !reports.join("triage.md").exists(),
        "a denied write never runs"
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert!(kinds(&ledger).contains(&"approval_denied"));
}

/// One model reply: the functions it calls, in order (tool names as the model sees them).
fn reply(calls: &[(&str, Value)]) -> Reply {
    let calls: Vec<Call> = calls
        .iter()
        .map(|(name, args)| Call::new(name.replace('.', "_"), args))
        .collect();
    Reply::openai_calls(&calls, (400, 40))
}
fn to(state: &str) -> (&'static str, Value) {
    ("transition", json!({"to": state, "reason": "next"}))
}
fn finish() -> (&'static str, Value) {
    (
        "finish",
        json!({"summary": "2 reports triaged", "result": {"oncall": 1}}),
    )
}

const INSTRUCTIONS: &str = "You triage bug reports: score each, then write triage.md.";

/// Runs the agent against the fake server answering `replies`; the model calls it took.
async fn model_calls(replies: Vec<Reply>) -> usize {
    let expected = replies.len();
    let server = FakeServer::start(replies).await.expect("fake server");
    let config = ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model");
    let provider = HttpProvider::with_key(config, None).expect("provider");
    let planner = LlmPlanner::new(provider, LlmConfig::default()).with_instructions(INSTRUCTIONS);
    triage(planner).await;
    let requests = server.requests();
    // The team's instructions come first; rein's own prompt, which invites the sequences,
    // is still sent after them.
    let system = requests[0].json()["messages"][0]["content"].clone();
    let system = system.as_str().expect("a system message");
    assert!(system.starts_with(INSTRUCTIONS), "{system}");
    assert!(system.ends_with(DEFAULT_SYSTEM_PROMPT), "{system}");
    let calls = requests.len();
    assert_eq!(
        calls, expected,
        "every scripted reply used, no request refused"
    );
    calls
}

/// The measurement: 11 model calls when every reply makes one call, 5 of them bare
/// `transition`/`finish` calls; 4 when the model makes the sequences the prompt invites.
#[tokio::test]
async fn sequences_take_the_triage_agent_from_eleven_model_calls_to_four() {
    let one_per_reply = [
        to("explore"),
        list(),
        read("bug-1.md"),
        read("bug-2.md"),
        score(5, true),
        score(1, false),
        to("decide"),
        to("act"),
        write(),
        to("validate"),
        finish(),
    ];
    let before = model_calls(
        one_per_reply
            .iter()
            .map(|c| reply(std::slice::from_ref(c)))
            .collect(),
    )
    .await;
    let sequences = vec![
        reply(&[to("explore"), list()]),
        reply(&[read("bug-1.md"), read("bug-2.md")]),
        reply(&[score(5, true), score(1, false)]),
        reply(&[to("decide"), to("act"), write(), to("validate"), finish()]),
    ];
    let after = model_calls(sequences).await;
    assert_eq!((before, after), (11, 4));
}

//! `LlmPlanner` against the fake server: decisions from function calls, corrections,
//! replies with several calls as one sequence decision, the offered functions, compaction, name mapping.

use std::collections::BTreeMap;

use rein_llm::fake::{Call, FakeServer, Received, Reply};
use rein_llm::{Api, HttpProvider, LlmConfig, LlmPlanner, NameError, ProviderConfig};
use rein_run::ProposedCall;
use rein_run::{
    BudgetSnapshot, BudgetUsage, Decision, EvidenceKind, Payload, PlanRequest, Planner,
    PlannerError, Run, State, Timestamp, ToolName, ToolSpec,
};
use serde_json::{Value, json};

fn t0() -> Timestamp {
    Timestamp::from_unix_millis(1_700_000_000_000)
}

fn run_in(state: State, evidence: usize) -> Run {
    let mut run = Run::new(
        "run-1".parse().unwrap(),
        "read the notes",
        Default::default(),
        json!({}),
        t0(),
    );
    if state != State::Intake {
        run.enter(State::Explore, t0()).unwrap();
    }
    if state == State::Decide {
        run.enter(State::Decide, t0()).unwrap();
    }
    for i in 0..evidence {
        run.add_evidence(
            EvidenceKind::ToolResult {
                tool: ToolName::new("fs.read").unwrap(),
                input: json!({"path": format!("file{i}.txt")}).into(),
                output: Payload::Inline(json!({"text": "x".repeat(400)})),
                cached: false,
            },
            t0(),
        )
        .unwrap();
    }
    run
}

fn specs() -> Vec<ToolSpec> {
    ["fs.list", "fs.read"]
        .iter()
        .map(|n| {
            ToolSpec::new(ToolName::new(*n).unwrap(), format!("{n} tool")).with_input_schema(
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            )
        })
        .collect()
}

struct Outcome {
    decisions: Vec<Result<Decision, PlannerError>>,
    received: Vec<Received>,
}

/// Plans `steps` consecutive steps (same state, step number counting up) for `run` with
/// the server scripted with `replies`.
async fn check(
    run: &Run,
    next: &[State],
    replies: Vec<Reply>,
    steps: u32,
    config: LlmConfig,
) -> Outcome {
    let server = FakeServer::start(replies).await.unwrap();
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "m"),
        None,
    )
    .unwrap();
    // Deprecated, still honoured: an engine's requests name every tool (all_tools).
    #[allow(deprecated)]
    let planner = LlmPlanner::new(provider, config)
        .with_tools(&[
            ToolName::new("fs.list").unwrap(),
            ToolName::new("fs.read").unwrap(),
            ToolName::new("fs.write").unwrap(),
        ])
        .unwrap();
    let specs = specs();
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let mut decisions = Vec::new();
    let mut run = run.clone();
    for _ in 0..steps {
        let request = PlanRequest::new(&run, &specs, BudgetSnapshot::new(&limits, &usage))
            .with_next_states(next);
        decisions.push(planner.plan(request).await);
        run.count_step(t0()).unwrap();
    }
    Outcome {
        decisions,
        received: server.requests(),
    }
}

fn user_text(r: &Received, i: usize) -> String {
    let body = r.json();
    let messages = body["messages"].as_array().unwrap();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .nth(i)
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn function_names(r: &Received) -> Vec<String> {
    r.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_call_becomes_a_decision_with_the_dotted_name() {
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide, State::Failed],
        vec![Reply::openai_calls(
            &[Call::new("fs_read", &json!({"path": "a.txt"}))],
            (10, 3),
        )],
        1,
        LlmConfig::default(),
    )
    .await;
    assert_eq!(
        out.decisions[0].as_ref().unwrap(),
        &Decision::call_tool("fs.read", json!({"path": "a.txt"}), "")
    );
    // Exactly the eligible tools, then the control functions the table allows from here.
    assert_eq!(
        function_names(&out.received[0]),
        ["fs_list", "fs_read", "transition", "fail", "ask_human"]
    );
    let transition =
        &out.received[0].json()["tools"][2]["function"]["parameters"]["properties"]["to"]["enum"];
    assert_eq!(transition, &json!(["decide"]));
    assert!(user_text(&out.received[0], 0).contains("Goal: read the notes"));
}

#[tokio::test]
async fn parallel_calls_become_one_batch_inside_one_sequence_decision() {
    let calls = [
        Call::new("fs_list", &json!({"path": "."})),
        Call::new("fs_read", &json!({"path": "b"})),
        Call::new(
            "transition",
            &json!({"to": "decide", "reason": "read enough"}),
        ),
    ];
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide, State::Failed],
        vec![
            Reply::openai_calls(&calls, (10, 3)),
            Reply::openai_calls(
                &[Call::new("fail", &json!({"reason": "asked again"}))],
                (1, 1),
            ),
        ],
        2,
        LlmConfig::default(),
    )
    .await;
    let got: Vec<Decision> = out.decisions.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        got[0],
        Decision::sequence(
            [
                Decision::call_tools(
                    [
                        ProposedCall::new("fs.list", json!({"path": "."}), ""),
                        ProposedCall::new("fs.read", json!({"path": "b"}), ""),
                    ],
                    ""
                ),
                Decision::transition(State::Decide, "read enough"),
            ],
            ""
        )
        .unwrap()
    );
    // Nothing is kept between steps: the next step asks the model again.
    assert_eq!(got[1], Decision::fail("asked again"));
    assert_eq!(out.received.len(), 2);
}

#[tokio::test]
async fn a_transition_then_a_call_keeps_the_call() {
    // Before sequences, the call after the transition was dropped without a word.
    let calls = [
        Call::new("transition", &json!({"to": "decide", "reason": "on"})),
        Call::new("fs_read", &json!({"path": "c"})),
        Call::new("finish", &json!({"summary": "read c"})),
    ];
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide],
        vec![Reply::openai_calls(&calls, (10, 3))],
        1,
        LlmConfig::default(),
    )
    .await;
    let Decision::Sequence { decisions, .. } = out.decisions[0].as_ref().unwrap() else {
        panic!("a sequence: {:?}", out.decisions[0]);
    };
    let kinds: Vec<&str> = decisions.iter().map(Decision::kind).collect();
    assert_eq!(kinds, ["transition", "call_tool", "finish"]);
    assert_eq!(
        decisions[1],
        Decision::call_tool("fs.read", json!({"path": "c"}), "")
    );
}

#[tokio::test]
async fn a_reply_with_a_bad_or_misplaced_call_is_handed_back_whole() {
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide, State::Failed],
        vec![
            // A good call, then one with arguments that are not JSON.
            Reply::openai_calls(
                &[
                    Call::new("fs_read", &json!({"path": "a"})),
                    Call::raw("fs_read", "{\"path\": "),
                ],
                (1, 1),
            ),
            // `fail` before a call: the call could never run.
            Reply::openai_calls(
                &[
                    Call::new("fail", &json!({"reason": "no"})),
                    Call::new("fs_read", &json!({"path": "a"})),
                ],
                (1, 1),
            ),
            Reply::openai_calls(&[Call::new("fs_read", &json!({"path": "a"}))], (1, 1)),
        ],
        1,
        LlmConfig::default(),
    )
    .await;
    assert_eq!(
        out.decisions[0].as_ref().unwrap(),
        &Decision::call_tool("fs.read", json!({"path": "a"}), "")
    );
    let first = out.received[1].told_since_last_turn();
    assert!(
        first.contains("not valid JSON") && first.contains("None of the calls"),
        "{first}"
    );
    let second = out.received[2].told_since_last_turn();
    assert!(
        second.contains("`fail` before other functions") && second.contains("last call"),
        "{second}"
    );
}

#[tokio::test]
async fn prose_and_invalid_arguments_are_handed_back_as_corrections() {
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide, State::Failed],
        vec![
            Reply::openai_text("I think the answer is 42."),
            Reply::openai_calls(&[Call::raw("fs_read", "{\"path\": ")], (10, 3)),
            Reply::openai_calls(&[Call::new("fs_read", &json!({"path": "a"}))], (10, 3)),
        ],
        1,
        LlmConfig::default(),
    )
    .await;
    assert_eq!(
        out.decisions[0].as_ref().unwrap(),
        &Decision::call_tool("fs.read", json!({"path": "a"}), "")
    );
    assert_eq!(out.received.len(), 3);
    // Prose: the correction follows the model's turn; a bad call: it answers the call.
    let told = |n: usize| out.received[n].told_since_last_turn();
    assert!(told(1).contains("called no function"), "{}", told(1));
    assert!(told(2).contains("not valid JSON"), "{}", told(2));
    let body = out.received[2].json();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "tool", "{last}");
}

#[tokio::test]
async fn corrections_are_bounded_then_a_typed_failure() {
    let config = LlmConfig {
        max_corrections: 1,
        ..LlmConfig::default()
    };
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide],
        vec![
            Reply::openai_text("prose"),
            Reply::openai_text("more prose"),
            Reply::openai_text("unused"),
        ],
        1,
        config,
    )
    .await;
    let e = out.decisions[0].as_ref().unwrap_err();
    assert!(
        e.to_string()
            .contains("no usable function call after 1 corrections"),
        "{e}"
    );
    assert_eq!(out.received.len(), 2);
}

#[tokio::test]
async fn hostile_arguments_are_corrections_not_panics() {
    let deep = format!("{}1{}", "{\"a\":[".repeat(40), "]}".repeat(40));
    let huge = json!({"path": "x".repeat(300_000)}).to_string();
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide],
        vec![
            Reply::openai_calls(&[Call::raw("fs_read", deep)], (1, 1)),
            Reply::openai_calls(&[Call::raw("fs_read", huge)], (1, 1)),
            Reply::openai_calls(
                &[Call::new("transition", &json!({"to": "nowhere"}))],
                (1, 1),
            ),
        ],
        1,
        LlmConfig::default(),
    )
    .await;
    let e = out.decisions[0].as_ref().unwrap_err();
    assert!(e.to_string().contains("no such state"), "{e}");
    assert!(e.to_string().len() < 1000, "bounded: {e}");
    assert!(
        out.received[1]
            .told_since_last_turn()
            .contains("nest deeper")
    );
    assert!(
        out.received[2]
            .told_since_last_turn()
            .contains("over the limit")
    );
    // The over-long arguments are not echoed back to the model.
    assert!(out.received[2].body.len() < 100_000);
}

#[tokio::test]
async fn ineligible_functions_become_decisions_the_engine_refuses() {
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide],
        vec![Reply::openai_calls(
            &[Call::new("fs_write", &json!({"path": "a"}))],
            (1, 1),
        )],
        1,
        LlmConfig::default(),
    )
    .await;
    assert_eq!(
        out.decisions[0].as_ref().unwrap(),
        &Decision::call_tool("fs.write", json!({"path": "a"}), "")
    );
}

#[tokio::test]
async fn an_unknown_function_is_corrected_with_the_function_names_offered() {
    let out = check(
        &run_in(State::Explore, 0),
        &[State::Decide],
        vec![
            Reply::openai_calls(&[Call::new("rm_rf", &json!({}))], (1, 1)),
            Reply::openai_calls(&[Call::new("fs_read", &json!({"path": "a"}))], (1, 1)),
        ],
        1,
        LlmConfig::default(),
    )
    .await;
    assert_eq!(
        out.decisions[0].as_ref().unwrap(),
        &Decision::call_tool("fs.read", json!({"path": "a"}), "")
    );
    // The names the model can call, not rein's dotted ones.
    let told = out.received[1].told_since_last_turn();
    assert!(
        told.contains(
            "There is no function `rm_rf`; the functions offered are: fs_list, fs_read, transition"
        ),
        "{told}"
    );
    assert!(!told.contains("fs.read"), "{told}");
}

#[tokio::test]
async fn context_too_long_compacts_once_and_retries() {
    let config = LlmConfig {
        prompt: rein_llm::PromptConfig {
            keep_last: 2,
            ..Default::default()
        },
        ..LlmConfig::default()
    };
    let out = check(
        &run_in(State::Explore, 6),
        &[State::Decide],
        vec![
            Reply::context_too_long(),
            Reply::openai_calls(
                &[Call::new(
                    "transition",
                    &json!({"to": "decide", "reason": "r"}),
                )],
                (1, 1),
            ),
        ],
        1,
        config.clone(),
    )
    .await;
    assert_eq!(
        out.decisions[0].as_ref().unwrap(),
        &Decision::transition(State::Decide, "r")
    );
    let (first, second) = (
        user_text(&out.received[0], 0),
        user_text(&out.received[1], 0),
    );
    assert!(first.contains("file0.txt") && !first.contains("[compacted]"));
    assert!(
        second.contains("[compacted] earlier tool results omitted to fit the context: fs.read ×4"),
        "{second}"
    );
    assert!(
        !second.contains("file3.txt")
            && second.contains("file4.txt")
            && second.contains("file5.txt")
    );
    assert!(second.len() < first.len());

    // Too long even compacted: a typed failure after exactly one retry.
    let out = check(
        &run_in(State::Explore, 6),
        &[State::Decide],
        vec![Reply::context_too_long(), Reply::context_too_long()],
        1,
        config,
    )
    .await;
    let e = out.decisions[0].as_ref().unwrap_err();
    assert!(e.to_string().contains("context window"), "{e}");
    assert_eq!(out.received.len(), 2);
}

#[test]
fn the_prompt_is_a_pure_function_of_the_run() {
    let specs = specs();
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let config = rein_llm::PromptConfig::default();
    let (run_a, run_b) = (run_in(State::Explore, 3), run_in(State::Explore, 3));
    let build = |run: &Run| {
        let request = PlanRequest::new(run, &specs, BudgetSnapshot::new(&limits, &usage));
        rein_llm::request_body(
            &ProviderConfig::new(Api::Anthropic, "http://x", "m"),
            &rein_llm::build_request(&config, &request, rein_llm::Compaction::WhenOverLimit),
        )
    };
    assert_eq!(
        build(&run_a),
        build(&run_b),
        "the same history, the same bytes"
    );
    let body: Value = serde_json::from_slice(&build(&run_a)).unwrap();
    assert!(
        body["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("file2.txt")
    );
}

#[test]
fn colliding_tool_names_are_refused_when_the_planner_is_built() {
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m"),
        None,
    )
    .unwrap();
    // Deprecated, still honoured: an engine's requests name every tool (all_tools).
    #[allow(deprecated)]
    let e = LlmPlanner::new(provider, LlmConfig::default())
        .with_tools(&[
            ToolName::new("fs.read").unwrap(),
            ToolName::new("fs_read").unwrap(),
        ])
        .unwrap_err();
    assert!(matches!(e, NameError::Collision { .. }), "{e}");
}

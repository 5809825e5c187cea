//! `LlmPlanner` and delegation, against the fake server in both APIs: `delegate` is offered
//! only when the request says the run may delegate (with the engine's planner names as an
//! enum), a good call becomes `Decision::Delegate`, each bad one is handed back as a
//! correction, and a child's outcome reads as evidence in the next prompt.

use std::collections::BTreeMap;

use rein_llm::fake::{Call, FakeServer, Received, Reply};
use rein_llm::{Api, HttpProvider, LlmConfig, LlmPlanner, NameError, ProviderConfig};
use rein_run::{
    BudgetName, BudgetSnapshot, BudgetUsage, ChildOutcome, Decision, Delegation, EvidenceKind,
    PlanRequest, Planner, PlannerError, Run, State, Timestamp, ToolName, ToolSpec,
};
use serde_json::{Value, json};

const APIS: [Api; 2] = [Api::OpenAi, Api::Anthropic];

fn t0() -> Timestamp {
    Timestamp::from_unix_millis(1_700_000_000_000)
}

fn explore_run() -> Run {
    let mut run = Run::new(
        "run-1".parse().unwrap(),
        "fix the parser",
        Default::default(),
        json!({}),
        t0(),
    );
    run.enter(State::Explore, t0()).unwrap();
    run
}

fn specs() -> Vec<ToolSpec> {
    ["fs.list", "fs.read"]
        .iter()
        .map(|n| ToolSpec::new(ToolName::new(*n).unwrap(), format!("{n} tool")))
        .collect()
}

/// One reply calling `calls`, in `api`'s format.
fn reply(api: Api, calls: &[Call]) -> Reply {
    match api {
        Api::Anthropic => Reply::anthropic("", calls, (10, 3)),
        Api::OpenAi => Reply::openai_calls(calls, (10, 3)),
    }
}

fn delegate(args: &Value) -> Call {
    Call::new("delegate", args)
}

struct Outcome {
    decisions: Vec<Result<Decision, PlannerError>>,
    received: Vec<Received>,
}

/// Plans `steps` steps of `run` in explore (may move to decide) with the server answering
/// `replies` in `api`'s format, the request offering `delegation`.
async fn check(
    api: Api,
    run: &Run,
    delegation: Option<&Delegation>,
    replies: Vec<Reply>,
    steps: u32,
) -> Outcome {
    let server = FakeServer::start(replies).await.unwrap();
    let provider =
        HttpProvider::with_key(ProviderConfig::new(api, server.base_url(), "m"), None).unwrap();
    let config = LlmConfig {
        max_corrections: 10,
        ..LlmConfig::default()
    };
    let planner = LlmPlanner::new(provider, config);
    let specs = specs();
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let mut run = run.clone();
    let mut decisions = Vec::new();
    for _ in 0..steps {
        let mut request = PlanRequest::new(&run, &specs, BudgetSnapshot::new(&limits, &usage))
            .with_next_states(&[State::Decide, State::Failed]);
        if let Some(d) = delegation {
            request = request.with_delegation(d);
        }
        decisions.push(planner.plan(request).await);
        run.count_step(t0()).unwrap();
    }
    Outcome {
        decisions,
        received: server.requests(),
    }
}

/// The functions a request offered, by name, with their parameter schemas.
fn offered(api: Api, r: &Received) -> Vec<(String, Value)> {
    let body = r.json();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| match api {
            Api::Anthropic => (
                t["name"].as_str().unwrap().to_owned(),
                t["input_schema"].clone(),
            ),
            Api::OpenAi => (
                t["function"]["name"].as_str().unwrap().to_owned(),
                t["function"]["parameters"].clone(),
            ),
        })
        .collect()
}

/// What the request says to the model since its last turn.
fn last_user_text(_api: Api, r: &Received) -> String {
    r.told_since_last_turn()
}

fn finish() -> Call {
    Call::new("finish", &json!({"summary": "done"}))
}

#[tokio::test]
async fn delegate_is_offered_only_when_the_run_may_delegate_with_the_planner_names() {
    for api in APIS {
        let delegation = Delegation::new(["reader", "coder"]);
        let none = Delegation::new(Vec::<String>::new());
        let mut seen = Vec::new();
        for d in [None, Some(&delegation), Some(&none)] {
            let out = check(api, &explore_run(), d, vec![reply(api, &[finish()])], 1).await;
            seen.push((
                offered(api, &out.received[0]),
                last_user_text(api, &out.received[0]),
            ));
        }
        let names = |i: usize| -> Vec<String> { seen[i].0.iter().map(|f| f.0.clone()).collect() };

        // At the depth limit (no delegation): today's functions, no `delegate`, no word of it.
        assert_eq!(
            names(0),
            ["fs_list", "fs_read", "transition", "fail", "ask_human"],
            "{api:?}"
        );
        assert!(!seen[0].1.contains("delegate"), "{api:?}: {}", seen[0].1);

        // May delegate: `delegate` last, goal required, the planners as an enum.
        assert_eq!(
            names(1),
            [
                "fs_list",
                "fs_read",
                "transition",
                "fail",
                "ask_human",
                "delegate"
            ],
            "{api:?}"
        );
        let schema = &seen[1].0[5].1;
        assert_eq!(schema["required"], json!(["goal"]), "{api:?}");
        assert_eq!(schema["properties"]["goal"]["type"], "string");
        assert_eq!(schema["properties"]["reason"]["type"], "string");
        assert_eq!(
            schema["properties"]["planner"]["enum"],
            json!(["coder", "reader"])
        );
        assert_eq!(
            schema["properties"]["budget"]["additionalProperties"],
            json!({"type": "integer", "minimum": 0})
        );
        let text = &seen[1].1;
        assert!(
            text.contains("You may delegate a sub-task with `delegate`")
                && text.contains("its own ledger")
                && text.contains("Planners a child may use: coder, reader"),
            "{api:?}: {text}"
        );

        // No named planners: offered without a `planner` to choose.
        assert_eq!(seen[2].0[5].0, "delegate");
        assert_eq!(seen[2].0[5].1["properties"].get("planner"), None);
        assert!(!seen[2].1.contains("Planners a child may use"));
    }
}

#[tokio::test]
async fn a_delegate_call_becomes_a_delegate_decision() {
    let delegation = Delegation::new(["reader"]);
    for api in APIS {
        let out = check(
            api,
            &explore_run(),
            Some(&delegation),
            vec![
                reply(
                    api,
                    &[delegate(&json!({
                        "goal": "read the grammar",
                        "reason": "a focused sub-task",
                        "budget": {"tool_calls": 3, "steps": 10},
                        "planner": "reader",
                    }))],
                ),
                // Only the goal; nulls where optional.
                reply(
                    api,
                    &[delegate(
                        &json!({"goal": "write the fix", "budget": null, "planner": null}),
                    )],
                ),
            ],
            2,
        )
        .await;
        let got: Vec<Decision> = out.decisions.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            got,
            [
                Decision::Delegate {
                    goal: "read the grammar".into(),
                    budget: [(BudgetName::TOOL_CALLS, 3), (BudgetName::STEPS, 10)]
                        .into_iter()
                        .collect(),
                    planner: Some("reader".into()),
                    reason: "a focused sub-task".into(),
                },
                Decision::delegate("write the fix", [], ""),
            ],
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn bad_delegate_arguments_are_handed_back_as_corrections() {
    let delegation = Delegation::new(["reader"]);
    let bad = [
        (json!({"reason": "no goal"}), "`delegate` needs `goal`"),
        (json!({"goal": 7}), "`delegate` needs `goal`"),
        (
            json!({"goal": "g", "budget": {"tool_calls": -1}}),
            "`budget.tool_calls` must be a non-negative integer, not -1",
        ),
        (
            json!({"goal": "g", "budget": {"tool_calls": 2.5}}),
            "`budget.tool_calls` must be a non-negative integer, not 2.5",
        ),
        (
            json!({"goal": "g", "budget": {"tool_calls": "3"}}),
            "must be a non-negative integer",
        ),
        (
            json!({"goal": "g", "budget": 3}),
            "`budget` must be an object",
        ),
        (
            json!({"goal": "g", "budget": {"Tool Calls": 3}}),
            "is not a budget name",
        ),
        (
            json!({"goal": "g", "planner": "writer"}),
            "there is no such planner; name one of reader",
        ),
        (
            json!({"goal": "g", "planner": 1}),
            "`planner` must be a string",
        ),
    ];
    for api in APIS {
        let mut replies: Vec<Reply> = bad
            .iter()
            .map(|(a, _)| reply(api, &[delegate(a)]))
            .collect();
        replies.push(reply(api, &[delegate(&json!({"goal": "g"}))]));
        let out = check(api, &explore_run(), Some(&delegation), replies, 1).await;
        assert_eq!(
            out.decisions[0].as_ref().unwrap(),
            &Decision::delegate("g", [], ""),
            "{api:?}"
        );
        assert_eq!(out.received.len(), bad.len() + 1, "{api:?}");
        for (i, (args, expected)) in bad.iter().enumerate() {
            let text = last_user_text(api, &out.received[i + 1]);
            assert!(
                text.contains(expected) && text.contains("Call one of the offered"),
                "{api:?} {args}: {text}"
            );
        }
    }

    // Bounded: a model that never gets it right fails the step, typed.
    let out = check(
        Api::OpenAi,
        &explore_run(),
        Some(&delegation),
        (0..11)
            .map(|_| {
                reply(
                    Api::OpenAi,
                    &[delegate(&json!({"goal": "g", "planner": "x"}))],
                )
            })
            .collect(),
        1,
    )
    .await;
    let e = out.decisions[0].as_ref().unwrap_err();
    assert!(
        e.to_string()
            .contains("no usable function call after 10 corrections"),
        "{e}"
    );
    assert!(e.to_string().len() < 1000, "bounded: {e}");

    // Arguments that are not JSON at all: the correction every function gets.
    let out = check(
        Api::OpenAi,
        &explore_run(),
        Some(&delegation),
        vec![
            Reply::openai_calls(&[Call::raw("delegate", "{\"goal\": ")], (1, 1)),
            reply(Api::OpenAi, &[delegate(&json!({"goal": "g"}))]),
        ],
        1,
    )
    .await;
    assert!(out.decisions[0].is_ok());
    assert!(last_user_text(Api::OpenAi, &out.received[1]).contains("not valid JSON"));
}

#[tokio::test]
async fn a_delegate_call_not_offered_is_the_decision_it_names_for_the_engine_to_refuse() {
    for api in APIS {
        let out = check(
            api,
            &explore_run(),
            None,
            vec![reply(
                api,
                &[delegate(&json!({"goal": "g", "planner": "anyone"}))],
            )],
            1,
        )
        .await;
        assert_eq!(
            out.decisions[0].as_ref().unwrap(),
            &Decision::Delegate {
                goal: "g".into(),
                budget: BTreeMap::new(),
                planner: Some("anyone".into()),
                reason: "".into(),
            },
            "{api:?}"
        );
    }
}

#[tokio::test]
async fn delegate_among_tool_calls_keeps_its_place_like_every_control_function() {
    let delegation = Delegation::new(["reader"]);
    for api in APIS {
        let calls = [
            Call::new("fs_read", &json!({"path": "a"})),
            delegate(&json!({"goal": "g", "planner": "reader"})),
            Call::new("fs_list", &json!({"path": "."})),
        ];
        let out = check(
            api,
            &explore_run(),
            Some(&delegation),
            vec![reply(api, &calls)],
            1,
        )
        .await;
        let got: Vec<Decision> = out.decisions.into_iter().map(Result::unwrap).collect();
        let expected = Decision::sequence(
            [
                Decision::call_tool("fs.read", json!({"path": "a"}), ""),
                Decision::delegate_to("reader", "g", [], ""),
                Decision::call_tool("fs.list", json!({"path": "."}), ""),
            ],
            "",
        )
        .unwrap();
        assert_eq!(got, [expected], "{api:?}");
        assert_eq!(out.received.len(), 1, "one model call, one decision");
    }
}

#[tokio::test]
async fn a_childs_outcome_reads_as_evidence_in_the_next_prompt() {
    let mut run = explore_run();
    let child: rein_run::RunId = "child-1".parse().unwrap();
    run.add_evidence(
        EvidenceKind::Child {
            child: child.clone(),
            outcome: ChildOutcome::Completed {
                summary: "found the bug".into(),
                result: json!({"line": 42}),
            },
            spent: [(BudgetName::TOOL_CALLS, 2)].into_iter().collect(),
        },
        t0(),
    )
    .unwrap();
    for api in APIS {
        let out = check(api, &run, None, vec![reply(api, &[finish()])], 1).await;
        let text = last_user_text(api, &out.received[0]);
        assert!(
            text.contains(
                "child run child-1 completed: \"found the bug\", result: {\"line\":42} \
                 (spent tool_calls 2)"
            ),
            "{api:?}: {text}"
        );
    }
}

#[test]
fn a_tool_named_delegate_is_refused_when_the_planner_is_built() {
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m"),
        None,
    )
    .unwrap();
    // Deprecated, still honoured: an engine's requests name every tool (all_tools).
    #[allow(deprecated)]
    let e = LlmPlanner::new(provider, LlmConfig::default())
        .with_tools(&[ToolName::new("delegate").unwrap()])
        .unwrap_err();
    assert_eq!(
        e,
        NameError::Reserved {
            tool: "delegate".into(),
            function: "delegate".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "tool `delegate` would shadow the control function `delegate`: rename the tool"
    );
}

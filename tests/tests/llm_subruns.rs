//! The LLM planner delegates, through the engine and the loopback fake server: a model-planned
//! parent is offered `delegate` (with the engine's named planners), is corrected once for a
//! planner that does not exist, starts a child driven by a second model, sees the child's
//! summary and result as evidence in its next prompt and finishes; the tree verifies. A run
//! at the depth limit is not offered `delegate`, and a model that calls it anyway is refused
//! by the engine, on the record.

mod support;

use rein::ledger::{EntryKind, Violation};
use rein::llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::policy::OnViolation;
use rein::run::{BudgetName, EvidenceKind};
use rein::subrun::ChildOutcome;
use rein::{Annotations, Engine, RunStatus, json};
use rein_llm::fake::{Call, FakeServer, Received, Reply};
use support::{assert_chain, count, echo, started_children, violations};

fn call(name: &str, args: &serde_json::Value) -> Reply {
    Reply::openai_calls(&[Call::new(name, args)], (100, 20))
}

fn planner(server: &FakeServer) -> LlmPlanner {
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model"),
        None,
    )
    .expect("provider");
    LlmPlanner::new(provider, LlmConfig::default())
}

/// A parent planned by `parent`'s model, with a child planner `reader` planned by
/// `child`'s; trees at most `max_depth` deep.
fn engine(parent: &FakeServer, child: &FakeServer, max_depth: u32) -> (Engine, support::Probe) {
    let (read, probe) = echo("fs.read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(planner(parent))
        .planner_named("reader", planner(child))
        .max_depth(max_depth)
        .budget("tool_calls", 5)
        .on_violation(OnViolation::HandBack { limit: 3 })
        .build()
        .expect("engine builds");
    (engine, probe)
}

fn functions(r: &Received) -> Vec<String> {
    r.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// What the request says to the model since its last turn.
fn last_user_text(r: &Received) -> String {
    r.told_since_last_turn()
}

#[tokio::test]
async fn an_llm_planned_parent_delegates_to_an_llm_planned_child_and_uses_its_result() {
    let parent = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        // Not a registered planner: handed back to the model, not sent to the engine.
        call(
            "delegate",
            &json!({"goal": "read the notes", "planner": "writer"}),
        ),
        call(
            "delegate",
            &json!({
                "goal": "read the notes",
                "reason": "a focused sub-task",
                "budget": {"tool_calls": 2},
                "planner": "reader",
            }),
        ),
        call("transition", &json!({"to": "decide", "reason": "have it"})),
        call(
            "finish",
            &json!({"summary": "the notes have 3 lines", "result": {"lines": 3}}),
        ),
    ])
    .await
    .unwrap();
    let child = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_read", &json!({"path": "notes.txt"})),
        call("transition", &json!({"to": "decide", "reason": "read it"})),
        call(
            "finish",
            &json!({"summary": "read notes.txt", "result": {"lines": 3}}),
        ),
    ])
    .await
    .unwrap();
    // The child is at the depth limit: it may not delegate further.
    let (engine, probe) = engine(&parent, &child, 1);
    let run = engine.run("summarise the notes").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(run.result(), Some(&json!({"lines": 3})));
    assert_eq!(probe.calls(), 1);

    // The parent was offered `delegate`, with the engine's one named planner to choose.
    let asked = parent.requests();
    assert_eq!(asked.len(), 5);
    let offered = functions(&asked[1]);
    assert_eq!(offered.last().map(String::as_str), Some("delegate"));
    let delegate = &asked[1].json()["tools"][offered.len() - 1]["function"]["parameters"];
    assert_eq!(delegate["properties"]["planner"]["enum"], json!(["reader"]));
    assert!(asked[1].told().contains("You may delegate a sub-task"));
    // The unknown planner was handed back to the model as a correction.
    let correction = last_user_text(&asked[2]);
    assert!(
        correction.contains("`delegate` to planner \"writer\": there is no such planner"),
        "{correction}"
    );

    // The parent's ledger links the child; the child spent its one call from the carve.
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    // The correction is on the record, as every correction is.
    assert_eq!(violations(&ledger), [(Violation::InvalidReply, true)]);
    assert_eq!(count(&ledger, "child_started"), 1);
    assert_eq!(count(&ledger, "child_ended"), 1);
    let started = started_children(&ledger);
    let EntryKind::ChildStarted {
        carved, planner, ..
    } = ledger
        .entries()
        .iter()
        .find(|e| e.event().name() == "child_started")
        .unwrap()
        .event()
    else {
        unreachable!()
    };
    assert_eq!(carved.get(&BudgetName::TOOL_CALLS), Some(&2));
    assert_eq!(planner.as_deref(), Some("reader"));
    assert_eq!(run.usage().used(&BudgetName::TOOL_CALLS), 1);

    // The child's outcome is the parent's evidence, and the parent's next prompt shows it.
    let outcomes: Vec<&ChildOutcome> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::Child { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes,
        [&ChildOutcome::Completed {
            summary: "read notes.txt".into(),
            result: json!({"lines": 3}),
        }]
    );
    let after = last_user_text(&asked[3]);
    assert!(
        after.contains(&format!(
            "child run {} completed: \"read notes.txt\", result: {{\"lines\":3}} (spent \
             steps 4, tokens 480, tool_calls 1)",
            started[0]
        )),
        "{after}"
    );

    // The child, at the depth limit, was never offered `delegate` nor told of it.
    let child_asked = child.requests();
    assert_eq!(child_asked.len(), 4);
    for r in &child_asked {
        assert!(!functions(r).contains(&"delegate".to_owned()));
        assert!(!r.told().contains("delegate"));
    }
    // The prompts are projections of the ledgers, depth (and so delegation) included: the
    // child's steps and the parent's step after the child rebuild to the bytes sent.
    let rebuilt = |server: &FakeServer, ledger: &rein::Ledger, step: u32| {
        let config = ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model");
        let chat = engine
            .plan_request_at(ledger, step, |request| {
                rein::llm::build_request(
                    &Default::default(),
                    &request,
                    rein::llm::Compaction::WhenOverLimit,
                )
            })
            .unwrap()
            .expect("the step was planned");
        rein::llm::request_body(&config, &chat)
    };
    let child_ledger = engine.ledger(&started[0]).await.expect("child ledger");
    for (step, sent) in (0..).zip(&child_asked) {
        assert_eq!(
            rebuilt(&child, &child_ledger, step),
            sent.body,
            "child step {step}"
        );
    }
    assert_eq!(rebuilt(&parent, &ledger, 2), asked[3].body, "parent step 2");

    let tree = engine
        .verify_tree(run.id())
        .await
        .expect("the tree verifies");
    assert_eq!(tree.children.len(), 1);
    assert_eq!(tree.children[0].id, started[0]);
    assert_eq!(tree.children[0].status, RunStatus::Completed);
}

#[tokio::test]
async fn a_model_at_the_depth_limit_that_delegates_anyway_is_refused_on_the_record() {
    let parent = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("delegate", &json!({"goal": "dig deeper"})),
        call("fail", &json!({"reason": "could not delegate"})),
    ])
    .await
    .unwrap();
    let child = FakeServer::start([]).await.unwrap();
    let (engine, _) = engine(&parent, &child, 0);
    let run = engine.run("try to delegate").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);

    let asked = parent.requests();
    assert_eq!(asked.len(), 3);
    for r in &asked {
        assert!(!functions(r).contains(&"delegate".to_owned()));
    }
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::DelegationRefused, true)]);
    assert_eq!(count(&ledger, "child_started"), 0);
    assert!(child.requests().is_empty());
    let refusal = last_user_text(&asked[2]);
    // The refusal answers the model's `delegate` call.
    assert!(refusal.contains("rein refused this call"), "{refusal}");
}

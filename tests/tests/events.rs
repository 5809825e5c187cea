//! Typed run events through the facade: each ledger-backed one right after the entry it is
//! read from, a step's start before its plan, and a streaming model's reply piece by piece
//! between its call's start and end — the pieces adding up to the reply the ledger keeps,
//! for both APIs.

mod support;

use std::collections::BTreeMap;

use rein::ledger::EntryKind;
use rein::llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::run::{ModelCallOutcome, ModelDelta, ToolOutcome};
use rein::{
    Annotations, AutoApprover, Decision, Engine, RunEvent, RunStatus, ScriptStep, ScriptedPlanner,
    State, json,
};
use rein_llm::fake::{Call, FakeServer, Reply};
use support::{echo, walk_to};

/// Every event of the run `engine` starts for `goal`, from its first subscriber.
async fn events_of(engine: &Engine, goal: &str) -> (Vec<RunEvent>, rein::Ledger) {
    let handle = engine.start(goal).await.expect("start");
    let mut events = handle.subscribe();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event);
    }
    (seen, engine.ledger(run.id()).await.expect("ledger"))
}

/// The ledger kinds a typed event may be read from.
fn read_from(event: &RunEvent) -> Option<&'static [&'static str]> {
    Some(match event {
        RunEvent::ModelCallStarted(_) => &["planner_attempt"],
        RunEvent::ModelCallEnded(_) => &["planner_call", "planner_attempt_failed"],
        RunEvent::ToolStarted(_) => &["tool_call"],
        RunEvent::ToolFinished(_) => &["tool_result", "tool_error"],
        RunEvent::ApprovalAsked(_) => &["approval_requested"],
        RunEvent::ApprovalDecided(_) => &["approval_granted", "approval_denied"],
        RunEvent::Transition(_) => &["transition"],
        RunEvent::RunEnded(_) => &[
            "run_completed",
            "run_failed",
            "run_interrupted",
            "run_paused",
        ],
        _ => return None,
    })
}

/// The subscriber saw the whole ledger, and each ledger-backed typed event right after
/// its entry.
fn assert_backed(events: &[RunEvent], ledger: &rein::Ledger) {
    let recorded: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Recorded(entry) => Some((**entry).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(recorded, ledger.entries(), "every entry, in ledger order");
    for (i, event) in events.iter().enumerate() {
        let Some(kinds) = read_from(event) else {
            continue;
        };
        let Some(RunEvent::Recorded(entry)) = i.checked_sub(1).map(|p| &events[p]) else {
            panic!("{event:?} does not follow an entry");
        };
        assert!(
            kinds.contains(&entry.event().name()),
            "{event:?} after {entry}"
        );
    }
}

#[tokio::test]
async fn a_scripted_run_is_followed_step_by_step_in_typed_events() {
    let (deploy, _) = echo("deploy", Annotations::destructive());
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", json!({"env": "prod"}), "ship it"),
        ),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("shipped", json!("ok"))),
    ]);
    let engine = Engine::builder()
        .tool(deploy)
        .approver(AutoApprover)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let (events, ledger) = events_of(&engine, "deploy").await;
    assert_backed(&events, &ledger);

    let typed: Vec<String> = events
        .iter()
        .filter(|e| !matches!(e, RunEvent::Recorded(_)))
        .map(|e| match e {
            // Durations vary: the outcome is checked below.
            RunEvent::ToolFinished(t) => format!("tool {} finished", t.tool),
            RunEvent::ApprovalAsked(a) => format!("approval asked for {}", a.tool),
            RunEvent::ApprovalDecided(a) => format!("{} decided: {}", a.tool, a.granted),
            other => other.to_string(),
        })
        .collect();
    let run = ledger.run_id();
    assert_eq!(
        typed,
        [
            "step 0 in intake".to_owned(),
            "intake → explore: walk".to_owned(),
            "step 1 in explore".to_owned(),
            "explore → decide: walk".to_owned(),
            "step 2 in decide".to_owned(),
            "decide → act: walk".to_owned(),
            "step 3 in act".to_owned(),
            "approval asked for deploy".to_owned(),
            "deploy decided: true".to_owned(),
            "tool deploy started (attempt 1)".to_owned(),
            "tool deploy finished".to_owned(),
            "step 4 in act".to_owned(),
            "act → validate: check".to_owned(),
            "step 5 in validate".to_owned(),
            "validate → done: shipped".to_owned(),
            format!("run {run}: completed"),
        ]
    );
    let finished = events.iter().find_map(|e| match e {
        RunEvent::ToolFinished(t) => Some(t.outcome.clone()),
        _ => None,
    });
    assert_eq!(finished, Some(ToolOutcome::Returned { cached: false }));
}

/// A streaming provider of `api` at `server`.
fn streaming(api: Api, server: &FakeServer) -> LlmPlanner {
    let config = ProviderConfig::new(api, server.base_url(), "fake-model").with_stream(true);
    LlmPlanner::new(
        HttpProvider::with_key(config, Some("k")).expect("provider"),
        LlmConfig::default(),
    )
}

#[tokio::test]
async fn a_streaming_model_is_seen_typing_and_the_pieces_add_up_to_the_recorded_reply() {
    let look = [Call::new(
        "transition",
        &json!({"to": "explore", "reason": "look around"}),
    )];
    let decide = [Call::new(
        "transition",
        &json!({"to": "decide", "reason": "seen it"}),
    )];
    let finish = [Call::new(
        "finish",
        &json!({"summary": "done — ✓", "result": {"ok": true}}),
    )];
    for api in [Api::OpenAi, Api::Anthropic] {
        let sse = |text: &str, calls: &[Call]| match api {
            Api::OpenAi => Reply::openai_sse(text, calls, (40, 9), 5),
            Api::Anthropic => Reply::anthropic_sse(text, calls, (40, 9), 5),
        };
        let server = FakeServer::start([
            sse("First I look around the notes.", &look),
            sse("", &decide),
            sse("All read: finishing with ✓.", &finish),
        ])
        .await
        .unwrap();
        let (read, _) = echo("fs.read", Annotations::read_only());
        let engine = Engine::builder()
            .tool(read)
            .planner(streaming(api, &server))
            .build()
            .expect("engine builds");
        let (events, ledger) = events_of(&engine, "read the notes").await;
        assert_backed(&events, &ledger);

        // Per step: the call starts, its pieces stream in, it ends; nothing of it after.
        let mut open: Option<u32> = None;
        let mut streamed: BTreeMap<u32, (String, BTreeMap<u32, String>)> = BTreeMap::new();
        for event in &events {
            match event {
                RunEvent::ModelCallStarted(c) => {
                    assert_eq!(open, None, "{api:?}: one call at a time");
                    assert_eq!(
                        (c.provider.as_str(), c.model.as_str()),
                        (api.as_str(), "fake-model")
                    );
                    open = Some(c.step);
                }
                RunEvent::ModelDelta(piece) => {
                    assert_eq!(open, Some(piece.step), "{api:?}: a piece inside its call");
                    let (text, calls) = streamed.entry(piece.step).or_default();
                    match &piece.delta {
                        ModelDelta::Text(t) => text.push_str(t),
                        ModelDelta::ToolArguments { index, piece, .. } => {
                            calls.entry(*index).or_default().push_str(piece);
                        }
                        other => panic!("unknown piece {other:?}"),
                    }
                }
                RunEvent::ModelCallEnded(c) => {
                    assert_eq!(open.take(), Some(c.step), "{api:?}");
                    let ModelCallOutcome::Answered(usage) = &c.outcome else {
                        panic!("{api:?}: {c:?}");
                    };
                    assert_eq!((usage.input_tokens, usage.output_tokens), (40, 9));
                }
                _ => {}
            }
        }
        let replies: BTreeMap<u32, _> = ledger
            .entries()
            .iter()
            .filter_map(|e| match e.event() {
                EntryKind::PlannerCall { step, call } => Some((*step, call.reply.clone().unwrap())),
                _ => None,
            })
            .collect();
        assert_eq!(replies.len(), 3, "{api:?}");
        assert_eq!(streamed.len(), 3, "{api:?}: every step streamed");
        for (step, reply) in &replies {
            let (text, calls) = &streamed[step];
            assert_eq!(text, &reply.text, "{api:?} step {step}");
            let arguments: Vec<&String> = calls.values().collect();
            let recorded: Vec<&String> = reply.calls.iter().map(|c| &c.arguments).collect();
            assert_eq!(arguments, recorded, "{api:?} step {step}");
        }
        assert_eq!(replies[&0].text, "First I look around the notes.");
    }
}

/// A handle keeps its run's first receiver until a subscriber takes it: one that
/// subscribes only after the run ended still gets what the ring kept — told how much it
/// missed first, then the last entries, each with the typed event read off it.
#[tokio::test]
async fn a_late_first_subscriber_is_told_what_it_missed_then_gets_the_last_entries() {
    let mut steps = walk_to(State::Validate);
    steps.push(ScriptStep::expect(
        State::Validate,
        Decision::finish("done", json!("ok")),
    ));
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .event_capacity(4)
        .build()
        .expect("engine builds");
    let handle = engine.start("walk").await.expect("start");
    let id = handle.id().clone();
    // Nobody subscribes while the run goes: it never waits for the ring.
    tokio::task::yield_now().await;
    let mut events = handle.subscribe();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed);
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event);
    }
    let Some(RunEvent::Missed(missed)) = seen.first() else {
        panic!("the first event says what was missed: {seen:?}");
    };
    assert!(*missed > 0);
    let ledger = engine.ledger(&id).await.expect("ledger");
    let recorded: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            RunEvent::Recorded(entry) => Some((**entry).clone()),
            _ => None,
        })
        .collect();
    let last = &ledger.entries()[ledger.len() - recorded.len()..];
    assert_eq!(recorded, last, "the last entries, in ledger order");
    assert!(
        matches!(seen.last(), Some(RunEvent::RunEnded(_))),
        "the run's end, read off its last entry: {seen:?}"
    );
}

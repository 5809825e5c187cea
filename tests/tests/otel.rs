//! OpenTelemetry export of real runs: what an OTLP/HTTP receiver inside the test gets from
//! the engine and the LLM planner, decoded with the protocol's own types. A run is one
//! trace: `invoke_agent rein` at its root, its steps below it, the planner's `chat` call and
//! the `execute_tool` calls of a batch below the step; a sub-run is a child of its parent's
//! span; a denied approval and an exhausted budget are span events matched to their ledger
//! entries; with content capture off, neither the prompt nor the API key is in any byte.

mod support;

use std::collections::HashMap;
use std::sync::Arc;

use rein::ledger::EntryKind;
use rein::llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
use rein::otel::names;
use rein::otel::tracing_subscriber::layer::SubscriberExt as _;
use rein::otel::tracing_subscriber::util::SubscriberInitExt as _;
use rein::otel::{Content, OtelConfig, SpanContexts, Telemetry, TraceParent};
use rein::policy::OnViolation;
use rein::{
    Annotations, ApprovalPolicy, Decision, DenyApprover, Engine, PlanRequest, Planner,
    PlannerError, RunStatus, ScriptStep, ScriptedPlanner, State, json,
};
use rein_llm::fake::{Call, FakeServer, Reply};
use rein_otel::receiver::{Receiver, attribute, proto};
use support::{calls, echo, explore_script, walk_to};

type Span = proto::trace::v1::Span;

const GOAL: &str = "find the basil-and-oregano secret recipe";
const API_KEY: &str = "sk-fake-4f9c2a7e1b3d5c6a8e0f";

/// Runs `work` with rein's export to a fresh receiver, then shuts export down.
async fn exported<T>(content: Content, work: impl Future<Output = T>) -> (Receiver, T) {
    let receiver = Receiver::start().expect("receiver");
    let config = OtelConfig::new(&receiver.url())
        .expect("endpoint")
        .with_content(content);
    let telemetry = Telemetry::start(&config).expect("export starts");
    let subscriber = rein::otel::tracing_subscriber::registry().with(telemetry.layer());
    // The test's runtime has one thread: every task of the run sees this subscriber.
    let guard = subscriber.set_default();
    let out = work.await;
    drop(guard);
    let report = telemetry.shutdown();
    assert!(report.flushed, "{report:?}");
    assert_eq!((report.dropped_spans, report.failed_spans), (0, 0));
    (receiver, out)
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one {name} among {:?}", names_of(spans));
    found[0]
}

fn names_of(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

fn attr(span: &Span, key: &str) -> Option<String> {
    attribute(&span.attributes, key)
}

/// The span `span`'s parent, among `spans`.
fn parent<'a>(spans: &'a [Span], span: &Span) -> Option<&'a Span> {
    spans.iter().find(|s| s.span_id == span.parent_span_id)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn an_llm_run_is_one_trace_of_steps_model_calls_and_a_batch_and_keeps_content_out() {
    let server = FakeServer::start([
        Reply::openai_calls(
            &[Call::new(
                "transition",
                &json!({"to": "explore", "reason": "look"}),
            )],
            (100, 20),
        ),
        Reply::openai_calls(
            &[
                Call::new("fs_list", &json!({"path": "."})),
                Call::new("fs_read", &json!({"path": "recipe.txt"})),
            ],
            (120, 30),
        ),
        Reply::openai_calls(
            &[Call::new(
                "transition",
                &json!({"to": "decide", "reason": "read"}),
            )],
            (130, 10),
        ),
        Reply::openai_calls(
            &[Call::new(
                "finish",
                &json!({"summary": "found", "result": {"ok": true}}),
            )],
            (140, 10),
        ),
    ])
    .await
    .expect("fake server");
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model"),
        Some(API_KEY),
    )
    .expect("provider");
    let (list, _) = echo("fs.list", Annotations::read_only());
    let (read, _) = echo("fs.read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(list)
        .tool(read)
        .planner(LlmPlanner::new(provider, LlmConfig::default()))
        .on_violation(OnViolation::HandBack { limit: 3 })
        .build()
        .expect("engine");
    let (receiver, run) = exported(Content::Omitted, engine.run(GOAL)).await;
    let run = run.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    // The server did get the prompt and the key: the test would prove nothing otherwise.
    let sent = server.requests();
    assert!(sent.iter().any(|r| contains(&r.body, GOAL)));
    // A provider given no trace context sends none.
    assert!(sent.iter().all(|r| r.traceparent.is_none()));

    let spans = receiver.spans();
    let root = one(&spans, "invoke_agent rein");
    assert!(root.parent_span_id.is_empty());
    assert_eq!(
        attr(root, names::OPERATION_NAME).as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(attr(root, names::RUN_ID), Some(run.id().to_string()));
    assert_eq!(
        attr(root, names::CONVERSATION_ID),
        Some(run.id().to_string())
    );
    assert_eq!(attr(root, names::RUN_STATUS).as_deref(), Some("completed"));
    assert_eq!(attr(root, names::STATE).as_deref(), Some("done"));
    assert!(
        spans.iter().all(|s| s.trace_id == root.trace_id),
        "one trace"
    );
    for span in &spans {
        let mut keys: Vec<_> = span.attributes.iter().map(|kv| kv.key.as_str()).collect();
        keys.sort_unstable();
        let all = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), all, "an attribute twice on {}", span.name);
    }

    // Four model calls, each under a planner span under a step under the run.
    let chats = named(&spans, "chat fake-model");
    assert_eq!(chats.len(), 4, "{:?}", names_of(&spans));
    use proto::trace::v1::span::SpanKind;
    for chat in &chats {
        assert_eq!(chat.kind, SpanKind::Client as i32);
        let plan = parent(&spans, chat).expect("a parent");
        assert_eq!(plan.name, names::PLAN);
        let step = parent(&spans, plan).expect("a step");
        assert!(step.name.starts_with(names::STEP), "{}", step.name);
        assert_eq!(step.parent_span_id, root.span_id);
    }
    let first = chats
        .iter()
        .find(|c| attr(c, names::INPUT_TOKENS).as_deref() == Some("120"))
        .expect("the batch's model call");
    for (key, value) in [
        (names::OPERATION_NAME, "chat"),
        (names::PROVIDER_NAME, "openai"),
        (names::REQUEST_MODEL, "fake-model"),
        (names::SERVER_ADDRESS, "127.0.0.1"),
        (names::OUTPUT_TOKENS, "30"),
        (names::CACHE_READ_TOKENS, "0"),
        (names::FINISH_REASONS, "tool_calls"),
    ] {
        assert_eq!(attr(first, key).as_deref(), Some(value), "{key}");
    }

    // The batch: both calls under the same step, each matched to its tool_call entry.
    let tools: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    let mut tool_names: Vec<_> = tools.iter().map(|s| s.name.as_str()).collect();
    tool_names.sort_unstable();
    assert_eq!(tool_names, ["execute_tool fs.list", "execute_tool fs.read"]);
    assert_eq!(tools[0].parent_span_id, tools[1].parent_span_id);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let entries: HashMap<String, String> = ledger
        .entries()
        .iter()
        .map(|e| (e.seq().to_string(), e.hash().to_string()))
        .collect();
    for tool in &tools {
        assert_eq!(attr(tool, names::TOOL_OUTCOME).as_deref(), Some("ok"));
        let seq = attr(tool, names::LEDGER_SEQ).expect("a seq");
        assert_eq!(attr(tool, names::LEDGER_HASH).as_ref(), entries.get(&seq));
        let entry = &ledger.entries()[seq.parse::<usize>().expect("a number") - 1];
        assert!(
            matches!(entry.event(), EntryKind::ToolCall { .. }),
            "{entry:?}"
        );
    }

    // Content is off: the prompt, the tool inputs and the key are in no exported byte.
    let raw = receiver.raw();
    assert!(!raw.is_empty());
    for secret in [GOAL, API_KEY, "recipe.txt"] {
        assert!(!contains(&raw, secret), "{secret} was exported");
    }
}

#[tokio::test]
async fn captured_content_carries_the_prompt_but_never_the_key() {
    let server = FakeServer::start([Reply::openai_calls(
        &[Call::new("fail", &json!({"reason": "nothing to do"}))],
        (10, 5),
    )])
    .await
    .expect("fake server");
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model"),
        Some(API_KEY),
    )
    .expect("provider");
    let engine = Engine::builder()
        .planner(LlmPlanner::new(provider, LlmConfig::default()))
        .build()
        .expect("engine");
    let (receiver, run) = exported(Content::Captured, engine.run(GOAL)).await;
    run.expect("run");
    let raw = receiver.raw();
    assert!(contains(&raw, GOAL), "captured content holds the prompt");
    assert!(!contains(&raw, API_KEY), "the key is never exported");
}

#[tokio::test]
async fn a_denied_approval_and_an_exhausted_budget_are_events_matched_to_the_ledger() {
    let (deploy, _) = echo("deploy", Annotations::destructive());
    let (read, _) = echo("read", Annotations::read_only());
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", json!({"env": "prod"}), "ship"),
        ),
        ScriptStep::expect(State::Act, Decision::call_tool("read", json!({}), "one")),
        ScriptStep::expect(State::Act, Decision::call_tool("read", json!({}), "two")),
        ScriptStep::expect(State::Act, Decision::fail("denied")),
    ]);
    let engine = Engine::builder()
        .tool(deploy)
        .tool(read)
        .approvals(ApprovalPolicy::default())
        .approver(DenyApprover)
        .budget("tool_calls", 1)
        .on_violation(OnViolation::HandBack { limit: 5 })
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine");
    let (receiver, run) = exported(Content::Omitted, engine.run("deploy")).await;
    let run = run.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let spans = receiver.spans();
    let events: Vec<_> = spans
        .iter()
        .flat_map(|s| s.events.iter().map(move |e| (s, e)))
        .collect();
    let find = |name: &str| {
        events
            .iter()
            .find(|(_, e)| e.name == name)
            .unwrap_or_else(|| panic!("no {name} event"))
    };
    let (_, exhausted) = find(names::EVENT_BUDGET_EXHAUSTED);
    assert_eq!(
        attribute(&exhausted.attributes, names::BUDGET_NAME).as_deref(),
        Some("tool_calls")
    );
    assert_eq!(
        attribute(&exhausted.attributes, names::BUDGET_LIMIT).as_deref(),
        Some("1")
    );
    let (_, denied) = find(names::EVENT_APPROVAL_DENIED);
    assert_eq!(
        attribute(&denied.attributes, names::APPROVAL_VERDICT).as_deref(),
        Some("denied")
    );
    assert_eq!(
        attribute(&denied.attributes, names::ENTRY_TOOL).as_deref(),
        Some("deploy")
    );
    // Each event names its entry: the same kind at that sequence number, the same hash.
    for (event, kind) in [(exhausted, "budget_exhausted"), (denied, "approval_denied")] {
        let seq: usize = attribute(&event.attributes, names::LEDGER_SEQ)
            .expect("seq")
            .parse()
            .expect("a number");
        let entry = &ledger.entries()[seq - 1];
        assert_eq!(entry.event().name(), kind);
        assert_eq!(
            attribute(&event.attributes, names::LEDGER_HASH),
            Some(entry.hash().to_string())
        );
    }
    // The denial's reason is content: left out.
    assert!(!contains(&receiver.raw(), "denies every request"));
}

#[tokio::test]
async fn a_sub_run_is_a_child_span_of_its_parents_run() {
    let (read, _) = echo("read", Annotations::read_only());
    let child = explore_script(
        vec![Decision::call_tool("read", json!({}), "look")],
        "child",
    );
    let engine = Engine::builder()
        .planner(explore_script(
            vec![Decision::delegate_to(
                "reader",
                "read once",
                calls(2),
                "split",
            )],
            "parent",
        ))
        .planner_named("reader", child)
        .tool(read)
        .budget("tool_calls", 5)
        .build()
        .expect("engine");
    let (receiver, run) = exported(Content::Omitted, engine.run("delegate")).await;
    let run = run.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let spans = receiver.spans();
    let runs = named(&spans, "invoke_agent rein");
    assert_eq!(runs.len(), 2, "{:?}", names_of(&spans));
    let (root, child) = if runs[0].parent_span_id.is_empty() {
        (runs[0], runs[1])
    } else {
        (runs[1], runs[0])
    };
    assert_eq!(attr(root, names::RUN_ID), Some(run.id().to_string()));
    assert_eq!(child.trace_id, root.trace_id);
    // The child's span hangs under the parent's, through the parent's step.
    let mut up = parent(&spans, child);
    while let Some(span) = up {
        if span.span_id == root.span_id {
            break;
        }
        up = parent(&spans, span);
    }
    assert!(up.is_some(), "the child run is under the parent run");
    let tool = one(&spans, "execute_tool read");
    let mut up = parent(&spans, tool).expect("a step");
    while up.span_id != child.span_id {
        up = parent(&spans, up).expect("under the child run");
    }
}

/// The span whose ids `parent` names, among `spans`.
fn named_by<'a>(spans: &'a [Span], parent: &TraceParent) -> Option<&'a Span> {
    spans
        .iter()
        .find(|s| s.trace_id == parent.trace_id_bytes() && s.span_id == parent.span_id_bytes())
}

#[tokio::test]
async fn a_model_call_sends_its_chat_spans_traceparent_and_records_the_answering_model() {
    let server = FakeServer::start([Reply::Json(json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake-model-2026-06-01",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
            "content": null, "tool_calls": [{"id": "call_0", "type": "function",
            "function": {"name": "fail", "arguments": "{\"reason\":\"nothing to do\"}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}
    }))])
    .await
    .expect("fake server");
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model"),
        Some(API_KEY),
    )
    .expect("provider")
    .with_trace_context(Arc::new(SpanContexts));
    let engine = Engine::builder()
        .planner(LlmPlanner::new(provider, LlmConfig::default()))
        .build()
        .expect("engine");
    let (receiver, run) = exported(Content::Omitted, engine.run(GOAL)).await;
    run.expect("run");
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let header = sent[0]
        .traceparent
        .as_deref()
        .expect("a traceparent header");
    let parent: TraceParent = header.parse().expect("a W3C traceparent");
    assert!(parent.sampled());
    // The header names the exported `chat` span: same trace, same span.
    let spans = receiver.spans();
    let chat = named_by(&spans, &parent).expect("the span the header names was exported");
    assert_eq!(chat.name, "chat fake-model");
    assert_eq!(
        attr(chat, names::RESPONSE_MODEL).as_deref(),
        Some("fake-model-2026-06-01")
    );
    assert_eq!(
        attr(chat, names::REQUEST_MODEL).as_deref(),
        Some("fake-model")
    );
    let root = one(&spans, "invoke_agent rein");
    assert_eq!(chat.trace_id, root.trace_id);
}

#[tokio::test]
async fn a_resumed_runs_trace_links_to_the_trace_of_its_drive_before() {
    let engine = Engine::builder()
        .planner(explore_script(
            vec![Decision::ask_human("Which region?", ["eu", "us"])],
            "asked",
        ))
        .trace_context(Arc::new(SpanContexts))
        .build()
        .expect("engine");
    let (first, run) = exported(Content::Omitted, engine.run("ask first")).await;
    let run = run.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    let (second, resumed) =
        exported(Content::Omitted, engine.resume_with_input(run.id(), "eu")).await;
    assert_eq!(resumed.expect("resume").status(), RunStatus::Completed);

    let before = first.spans();
    let after = second.spans();
    let root_before = one(&before, "invoke_agent rein");
    let root_after = one(&after, "invoke_agent rein");
    assert_ne!(root_after.trace_id, root_before.trace_id, "a new trace");
    assert!(root_after.parent_span_id.is_empty(), "not a dangling child");
    assert_eq!(attr(root_after, names::RESUMED).as_deref(), Some("true"));
    assert_eq!(root_after.links.len(), 1, "{:?}", root_after.links);
    let link = &root_after.links[0];
    assert_eq!(link.trace_id, root_before.trace_id);
    assert_eq!(link.span_id, root_before.span_id);

    // Each drive's span is on the record, so a later process links the same way.
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let traced: Vec<TraceParent> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::TraceStarted { traceparent } => Some(*traceparent),
            _ => None,
        })
        .collect();
    assert_eq!(traced.len(), 2);
    assert_eq!(
        named_by(&before, &traced[0]).map(|s| s.span_id.clone()),
        Some(root_before.span_id.clone())
    );
    assert_eq!(
        named_by(&after, &traced[1]).map(|s| s.span_id.clone()),
        Some(root_after.span_id.clone())
    );
    ledger.verify().expect("the ledger verifies");
}

#[tokio::test]
async fn without_a_trace_context_no_trace_is_recorded() {
    let engine = Engine::builder()
        .planner(explore_script(vec![], "plain"))
        .build()
        .expect("engine");
    let (_, run) = exported(Content::Omitted, engine.run("plain")).await;
    let run = run.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert!(
        ledger
            .entries()
            .iter()
            .all(|e| !matches!(e.event(), EntryKind::TraceStarted { .. }))
    );
}

/// Walks intake → explore → decide and finishes, whatever the run (a conversation's runs
/// share it).
struct Walker;

impl Planner for Walker {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "look"),
            State::Explore => Decision::transition(State::Decide, "answer"),
            _ => Decision::finish("answered", json!(request.goal())),
        })
    }
}

#[tokio::test]
async fn a_follow_ups_drive_carries_its_conversations_first_run_as_the_conversation_id() {
    let engine = Engine::builder().planner(Walker).build().expect("engine");
    let first = engine.run("one").await.expect("the first run");
    let second = engine
        .follow_up(first.id(), "two")
        .await
        .expect("starts")
        .await
        .expect("the second run");
    let (receiver, third) = exported(Content::Omitted, async {
        engine
            .follow_up(second.id(), "three")
            .await
            .expect("starts")
            .await
            .expect("the third run")
    })
    .await;
    let spans = receiver.spans();
    let root = one(&spans, "invoke_agent rein");
    assert_eq!(attr(root, names::RUN_ID), Some(third.id().to_string()));
    assert_eq!(
        attr(root, names::CONVERSATION_ID),
        Some(first.id().to_string()),
        "the conversation is named by its first run"
    );
}

//! The LLM planner in the engine, against the loopback fake server: a multi-step run that
//! is corrected and finishes, `tokens` and `cost` budgets that refuse a call before it is
//! made, and a downstream planner charging through the same meter across a pause.

mod support;

use rein::ledger::{EntryKind, Violation};
use rein::llm::{
    Api, CassetteRecorder, HttpProvider, LlmConfig, LlmPlanner, ModelPrices, Prices,
    ProviderConfig, Rate, Replayer,
};
use rein::planner::{PlannerCall, WorstCase};
use rein::policy::OnViolation;
use rein::run::{BudgetName, Cost, Currency, FailureKind};
use rein::tool::Digest;
use rein::{
    Annotations, Decision, Engine, PlanRequest, Planner, PlannerError, RunStatus, State, json,
};
use rein_llm::fake::{Call, FakeServer, Reply};
use support::echo;

fn call(name: &str, args: &serde_json::Value) -> Reply {
    Reply::openai_calls(&[Call::new(name, args)], (100, 20))
}

fn planner(server: &FakeServer, config: LlmConfig) -> LlmPlanner {
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model")
            .with_max_output_tokens(256),
        None,
    )
    .expect("provider");
    // No list of tools: every plan request names the engine's (PlanRequest::all_tools).
    LlmPlanner::new(provider, config)
}

fn engine(planner: impl Planner, budgets: &[(&str, u64)]) -> Engine {
    let (list, _) = echo("fs.list", Annotations::read_only());
    let (read, _) = echo("fs.read", Annotations::read_only());
    let (write, _) = echo("fs.write", Annotations::side_effecting());
    let mut builder = Engine::builder()
        .tool(list)
        .tool(read)
        .tool(write)
        .planner(planner)
        .on_violation(OnViolation::HandBack { limit: 3 });
    for (name, limit) in budgets {
        builder = builder.budget(name, *limit);
    }
    builder.build().expect("engine builds")
}

fn planner_calls(ledger: &rein::Ledger) -> Vec<PlannerCall> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerCall { call, .. } => Some(call.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_model_lists_reads_is_corrected_and_finishes() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_list", &json!({"path": "."})),
        // Not eligible in explore: refused by the engine, handed back, corrected.
        call("fs_write", &json!({"path": "notes.txt"})),
        call("fs_read", &json!({"path": "notes.txt"})),
        call("transition", &json!({"to": "decide", "reason": "read it"})),
        call(
            "finish",
            &json!({"summary": "read the notes", "result": {"lines": 3}}),
        ),
    ])
    .await
    .unwrap();
    let engine = engine(
        planner(&server, LlmConfig::default()),
        &[("tokens", 100_000)],
    );
    let run = engine.run("read the notes").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(run.result(), Some(&json!({"lines": 3})));

    let ledger = engine.ledger(run.id()).await.unwrap();
    ledger.verify().unwrap();
    let violations: Vec<(Violation, bool)> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PolicyViolation {
                violation,
                handed_back,
                ..
            } => Some((*violation, *handed_back)),
            _ => None,
        })
        .collect();
    assert_eq!(violations, [(Violation::IneligibleTool, true)]);

    // Every model call is on the ledger, its hash the hash of the exact bytes the server got.
    let received = server.requests();
    let calls = planner_calls(&ledger);
    assert_eq!(calls.len(), 6);
    for (call, got) in calls.iter().zip(&received) {
        assert_eq!(call.request_hash, Digest::of_bytes(&got.body));
        assert_eq!(
            (call.provider.as_str(), call.model.as_str()),
            ("openai", "fake-model")
        );
    }
    // Charged from the reported usage: six calls of 100 + 20 tokens.
    assert_eq!(run.usage().used(&BudgetName::TOKENS), 720);
    // The correction reached the model: the prompt after the refusal says so.
    // It answers the model's call of `fs_write`, in the model's own dialogue.
    let prompt = received[3].told_since_last_turn();
    assert!(prompt.contains("rein refused this call"), "{prompt}");
    assert!(prompt.contains("fs.write"), "{prompt}");
    // Every step offers the run's tools and control functions, the same list (the latest
    // message says which tools run in the current state; rein refuses the others).
    let offered = |r: &rein_llm::fake::Received| -> Vec<String> {
        r.json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        offered(&received[1]),
        [
            "fs_list",
            "fs_read",
            "fs_write",
            "transition",
            "finish",
            "fail",
            "ask_human",
            "delegate"
        ]
    );
    assert!(received.iter().all(|r| offered(r) == offered(&received[0])));
    assert!(
        received[2]
            .told_since_last_turn()
            .contains("Tools that run in this state: fs_list, fs_read."),
        "{}",
        received[2].told_since_last_turn()
    );
}

#[tokio::test]
async fn a_tokens_budget_too_small_for_one_call_refuses_it_before_it_is_sent() {
    let server = FakeServer::start([call("transition", &json!({"to": "explore"}))])
        .await
        .unwrap();
    // Max output alone (256) does not fit in 200.
    let engine = engine(planner(&server, LlmConfig::default()), &[("tokens", 200)]);
    let run = engine.run("anything").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(run.failure().unwrap().kind, FailureKind::BudgetExhausted);
    assert_eq!(server.requests().len(), 0, "no call was made");
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert!(ledger.entries().iter().any(|e| matches!(e.event(),
        EntryKind::BudgetExhausted { name, limit: 200, used: 0, .. } if *name == BudgetName::TOKENS)));
    assert_eq!(run.usage().used(&BudgetName::TOKENS), 0);
}

#[tokio::test]
async fn a_cost_budget_stops_the_run_before_the_call_that_could_exceed_it() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "go"})),
        call("fs_list", &json!({})),
    ])
    .await
    .unwrap();
    // 1 micro-unit per token both ways: a call costs its tokens. The limit leaves room for
    // the first call's worst case (its prompt estimate + 256) and 60 more: after the first
    // call (120 charged) the second, whose prompt is no shorter, does not fit.
    // The first call's worst cost, as the engine declares it for this goal and these tools.
    let one = Rate::from_micros_per_million(1_000_000);
    let config = LlmConfig {
        prices: Some(
            Prices::new(Currency::USD).with_model("fake-model", ModelPrices::new(one, one)),
        ),
        ..LlmConfig::default()
    };
    let first = {
        let probe = FakeServer::start([call("fail", &json!({"reason": "probe"}))])
            .await
            .unwrap();
        let engine = engine(planner(&probe, config.clone()), &[("cost", 1_000_000)]);
        let run = engine.run("spend").await.expect("run");
        let ledger = engine.ledger(run.id()).await.unwrap();
        ledger
            .entries()
            .iter()
            .find_map(|e| match e.event() {
                EntryKind::PlannerAttempt { attempt, .. } => attempt.worst_cost.micros(),
                _ => None,
            })
            .expect("the probe's first call")
    };
    let limit = first + 60;
    let engine = engine(planner(&server, config), &[("cost", limit)]);
    let run = engine.run("spend").await.expect("run");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::BudgetExhausted)
    );
    assert_eq!(server.requests().len(), 1, "the second call was never sent");
    assert_eq!(run.usage().used(&BudgetName::COST), 120);
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert!(ledger.entries().iter().any(|e| matches!(e.event(),
        EntryKind::BudgetExhausted { name, used: 120, .. } if *name == BudgetName::COST)));
}

/// A downstream team's planner: no model, but it charges `tokens` through the meter.
struct Thrifty;

impl Planner for Thrifty {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let meter = request.meter().expect("the engine hands a meter");
        meter.declare(WorstCase {
            tokens: 50,
            cost: Cost::Unknown,
        })?;
        meter.report(PlannerCall {
            provider: "in-house".into(),
            model: "rules".into(),
            request_hash: Digest::of_bytes(request.goal().as_bytes()),
            input_tokens: 7,
            output_tokens: 3,
            cost: Cost::Unknown,
            latency_ms: 0,
            finish_reason: None,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reply: None,
        });
        let answered = request
            .evidence()
            .iter()
            .any(|e| matches!(e.kind, rein::run::EvidenceKind::HumanInput { .. }));
        Ok(match request.state() {
            State::Intake if !answered => Decision::ask_human("go on?", ["yes"]),
            _ => Decision::fail("stopping here"),
        })
    }
}

#[tokio::test]
async fn a_downstream_planner_is_charged_through_the_same_meter_across_a_pause() {
    let engine = engine(Thrifty, &[("tokens", 1_000)]);
    let run = engine.run("thrift").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    assert_eq!(run.usage().used(&BudgetName::TOKENS), 10);
    let run = engine
        .resume_with_input(run.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(
        run.usage().used(&BudgetName::TOKENS),
        20,
        "charges survive the pause"
    );
    let ledger = engine.ledger(run.id()).await.unwrap();
    ledger.verify().unwrap();
    assert_eq!(planner_calls(&ledger).len(), 2);

    // A declared worst case that does not fit is refused, whoever the planner is.
    let engine = self::engine(Thrifty, &[("tokens", 40)]);
    let run = engine.run("thrift").await.expect("run");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::BudgetExhausted)
    );
    assert_eq!(run.usage().used(&BudgetName::TOKENS), 0);
}

#[tokio::test]
async fn a_recorded_run_replays_with_the_server_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let script = [
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_read", &json!({"path": "a.txt"})),
        call("transition", &json!({"to": "decide", "reason": "seen"})),
        call("finish", &json!({"summary": "done", "result": 1})),
    ];
    let server = FakeServer::start(script).await.unwrap();
    let config = ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model")
        .with_max_output_tokens(256);
    let live = HttpProvider::with_key(config.clone(), None).unwrap();
    let recording = LlmPlanner::new(CassetteRecorder::new(live, &cassette), LlmConfig::default());
    let engine1 = engine(recording, &[("tokens", 100_000)]);
    let recorded = engine1.run("read a").await.unwrap();
    assert_eq!(recorded.status(), RunStatus::Completed);
    server.stop().await;

    // The ledger replays without a planner call at all.
    let ledger = engine1.ledger(recorded.id()).await.unwrap();
    let report = engine1.replay(&ledger).await.unwrap();
    assert_eq!(report.recorded, report.replayed);

    // And the model's part replays from the cassette: same run, same hashes, no server.
    let replaying = LlmPlanner::new(
        Replayer::open(&cassette, config.clone()).unwrap(),
        LlmConfig::default(),
    );
    let engine2 = engine(replaying, &[("tokens", 100_000)]);
    let replayed = engine2.run("read a").await.unwrap();
    assert_eq!(replayed.status(), RunStatus::Completed);
    assert_eq!(replayed.result(), recorded.result());
    let hashes = |l: &rein::Ledger| {
        planner_calls(l)
            .into_iter()
            .map(|c| c.request_hash)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        hashes(&engine2.ledger(replayed.id()).await.unwrap()),
        hashes(&ledger)
    );
    assert_eq!(
        replayed.usage().used(&BudgetName::TOKENS),
        recorded.usage().used(&BudgetName::TOKENS)
    );

    // A request the cassette has not seen fails loudly.
    let unseen = LlmPlanner::new(
        Replayer::open(&cassette, config).unwrap(),
        LlmConfig::default(),
    );
    let run = engine(unseen, &[]).run("another goal").await.unwrap();
    let failure = run.failure().expect("failed");
    assert_eq!(failure.kind, FailureKind::PlannerError);
    assert!(
        failure.message.contains("the cassette has no reply"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn the_api_key_reaches_neither_the_ledger_nor_the_run() {
    let server = FakeServer::start([Reply::anthropic(
        "",
        &[Call::new("fail", &json!({"reason": "nothing to do"}))],
        (10, 5),
    )])
    .await
    .unwrap();
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::Anthropic, server.base_url(), "fake-model")
            .with_api_key_env("MY_KEY_VAR"),
        Some("sk-ant-very-secret"),
    )
    .unwrap();
    let planner = LlmPlanner::new(provider, LlmConfig::default());
    let shown = format!("{planner:?}");
    let engine = engine(planner, &[("tokens", 100_000)]);
    let run = engine.run("leak nothing").await.unwrap();
    assert!(server.requests()[0].authorized, "the key was sent");
    let ledger = engine.ledger(run.id()).await.unwrap();
    let everything = format!(
        "{shown}{run:?}{}",
        ledger
            .entries()
            .iter()
            .map(rein::ledger::Entry::to_json_line)
            .collect::<String>()
    );
    assert!(!everything.contains("very-secret"));
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PlannerGaveUp)
    );
    assert_eq!(planner_calls(&ledger)[0].provider, "anthropic");
}

/// An engine keeping its runs and ledgers under `dir`, as a process would.
fn durable_engine(planner: impl Planner, dir: &std::path::Path) -> Engine {
    let (list, _) = echo("fs.list", Annotations::read_only());
    Engine::builder()
        .tool(list)
        .planner(planner)
        .filesystem(dir)
        .budget("tokens", 100_000)
        .build()
        .expect("engine builds")
}

fn streaming_provider(server: &FakeServer) -> HttpProvider {
    HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model")
            .with_max_output_tokens(256)
            .with_stream(true),
        None,
    )
    .expect("provider")
}

#[tokio::test]
async fn a_call_killed_mid_stream_is_charged_at_its_worst_case_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let Reply::Sse { chunks, .. } =
        Reply::openai_sse("", &[Call::new("fs_list", &json!({}))], (100, 20), 7)
    else {
        panic!("an SSE reply");
    };
    // Half the reply, then the connection stalls: the process is killed mid-stream.
    let half = chunks[..chunks.len() / 2].to_vec();
    let server = FakeServer::start([
        Reply::openai_sse(
            "",
            &[Call::new("transition", &json!({"to": "explore"}))],
            (100, 20),
            64,
        ),
        Reply::Sse {
            chunks: half,
            hang: true,
        },
    ])
    .await
    .unwrap();
    let streamed = std::sync::Arc::new(tokio::sync::Notify::new());
    let provider = streaming_provider(&server).with_progress({
        let streamed = std::sync::Arc::clone(&streamed);
        let streams = std::sync::atomic::AtomicU32::new(0);
        std::sync::Arc::new(move |p: rein::llm::StreamProgress| {
            // The first event of the second stream (the first one's reply came whole).
            if p.events == 1 && streams.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                streamed.notify_one();
            }
        })
    });
    let id: rein::RunId = "killed-mid-stream".parse().unwrap();
    let first = durable_engine(LlmPlanner::new(provider, LlmConfig::default()), dir.path());
    tokio::select! {
        run = first.run(rein::RunSpec::new("list").with_id(id.clone())) => {
            panic!("the stream stalls, so the run cannot end: {run:?}")
        }
        () = streamed.notified() => {}
    }
    // The kill: the run's future and its engine are dropped mid-stream.
    drop(first);
    assert_eq!(server.requests().len(), 2);

    let ledger = |engine: &Engine| {
        let (engine, id) = (engine.clone(), id.clone());
        async move { engine.ledger(&id).await.expect("ledger") }
    };
    let server2 = FakeServer::start([Reply::openai_sse(
        "",
        &[Call::new("fail", &json!({"reason": "enough"}))],
        (100, 20),
        64,
    )])
    .await
    .unwrap();
    let second = durable_engine(
        LlmPlanner::new(streaming_provider(&server2), LlmConfig::default()),
        dir.path(),
    );
    let before = ledger(&second).await;
    let Some(EntryKind::PlannerAttempt { step: 1, attempt }) = before
        .entries()
        .last()
        .map(rein::ledger::Entry::event)
        .cloned()
    else {
        panic!("the attempt is the last thing on record: {before:?}");
    };
    assert!(
        attempt.worst_tokens > 256,
        "prompt estimate plus max output"
    );

    let run = second.resume(&id).await.expect("resumed");
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PlannerGaveUp)
    );
    assert_eq!(
        server2.requests().len(),
        1,
        "the interrupted call is asked again"
    );
    let after = ledger(&second).await;
    after.verify().unwrap();
    let calls = planner_calls(&after);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[1].input_tokens, attempt.worst_tokens);
    assert_eq!(calls[1].request_hash, attempt.request_hash);
    assert!(
        calls[1]
            .finish_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("in doubt"))
    );
    // Both answered calls at what they used, the lost one at its worst case.
    assert_eq!(
        run.usage().used(&BudgetName::TOKENS),
        120 + attempt.worst_tokens + 120
    );
    // A second restart charges nothing again.
    let third = durable_engine(
        LlmPlanner::new(streaming_provider(&server2), LlmConfig::default()),
        dir.path(),
    );
    let reloaded = third.load_run(&id).await.unwrap();
    assert_eq!(reloaded.usage(), run.usage());
}

#[tokio::test]
async fn every_attempt_is_on_the_record_before_it_is_sent_retries_included() {
    let server = FakeServer::start([
        Reply::rate_limited(0),
        call("fail", &json!({"reason": "nothing to do"})),
    ])
    .await
    .unwrap();
    let engine = engine(
        planner(&server, LlmConfig::default()),
        &[("tokens", 100_000)],
    );
    let run = engine.run("retry").await.unwrap();
    assert_eq!(server.requests().len(), 2);
    let ledger = engine.ledger(run.id()).await.unwrap();
    let kinds: Vec<&str> = ledger
        .entries()
        .iter()
        .map(|e| e.event().name())
        .filter(|k| k.starts_with("planner_"))
        .collect();
    assert_eq!(
        kinds,
        [
            "planner_attempt",
            "planner_attempt_failed",
            "planner_attempt",
            "planner_call"
        ]
    );
    let attempts: Vec<u32> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerAttempt { attempt, .. } => Some(attempt.attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 2]);
}

#[tokio::test]
async fn corrections_are_ledgered_and_a_model_that_never_gets_it_right_ends_by_policy() {
    let server = FakeServer::start((0..6).map(|_| Reply::openai_text("I would rather chat.")))
        .await
        .unwrap();
    let config = LlmConfig {
        max_corrections: 10,
        ..LlmConfig::default()
    };
    // The engine hands back at most 3 violations.
    let engine = engine(planner(&server, config), &[("tokens", 100_000)]);
    let run = engine.run("chat").await.unwrap();
    let failure = run.failure().expect("failed");
    assert_eq!(failure.kind, FailureKind::PolicyViolation, "{failure:?}");
    assert!(
        failure.message.contains("violations"),
        "{}",
        failure.message
    );
    assert_eq!(
        server.requests().len(),
        4,
        "three corrections, then no more asking"
    );
    let ledger = engine.ledger(run.id()).await.unwrap();
    ledger.verify().unwrap();
    let corrections = ledger
        .entries()
        .iter()
        .filter(|e| {
            matches!(
                e.event(),
                EntryKind::PolicyViolation {
                    violation: Violation::InvalidReply,
                    handed_back: true,
                    ..
                }
            )
        })
        .count();
    assert_eq!(corrections, 3);
    assert_eq!(run.usage().used(&BudgetName::VIOLATIONS), 3);
    assert_eq!(planner_calls(&ledger).len(), 4, "every reply is charged");
}

#[tokio::test]
async fn triggered_skills_enter_the_prompt_and_replay_rebuilds_the_same_hash() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_list", &json!({"path": "db/migration"})),
        call("fail", &json!({"reason": "enough"})),
    ])
    .await
    .unwrap();
    let notes = rein::run::Skill::new(
        "release-notes",
        "How to write release notes",
        vec!["release".into()],
        "# Release notes\nGroup changes by crate.\n",
    )
    .unwrap();
    let migrations = rein::run::Skill::new(
        "db-migrations",
        "How to write a database migration",
        vec!["migration".into()],
        "# Migrations\nNever drop a column in the same release.\n",
    )
    .unwrap();
    let (list, _) = echo("fs.list", Annotations::read_only());
    let engine = Engine::builder()
        .tool(list)
        .planner(planner(&server, LlmConfig::default()))
        .skills([notes.clone(), migrations.clone()])
        .build()
        .unwrap();
    let run = engine.run("Prepare the release").await.unwrap();
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PlannerGaveUp)
    );
    let system = |n: usize| server.requests()[n].told();
    // Every skill is listed; only the triggered one's body is in, with its checksum.
    let first = system(0);
    for skill in [&notes, &migrations] {
        assert!(
            first.contains(&format!("- {}: {}", skill.name(), skill.description())),
            "{first}"
        );
    }
    assert!(
        first.contains(&format!("sha256 {}", notes.checksum())),
        "{first}"
    );
    assert!(first.contains("Group changes by crate."), "{first}");
    assert!(!first.contains("Never drop a column"), "{first}");
    // The tool result mentions a migration: from then on, that skill's body is in too.
    assert!(!system(1).contains("Never drop a column"));
    assert!(system(2).contains("Never drop a column"), "{}", system(2));

    // The ledger says which skill entered at which step, once, before that step's call.
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert_eq!(
        skills_entered(&ledger),
        [
            (0, "release-notes".to_owned(), notes.checksum()),
            (2, "db-migrations".to_owned(), migrations.checksum()),
        ]
    );

    // The prompt is a projection of the ledger: rebuilt, each step hashes as recorded and
    // as the server received it.
    let config = ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model")
        .with_max_output_tokens(256);
    let recorded = planner_calls(&ledger);
    for (step, call) in recorded.iter().enumerate() {
        let chat = engine
            .plan_request_at(&ledger, u32::try_from(step).unwrap(), |request| {
                rein::llm::build_request(
                    &Default::default(),
                    &request,
                    rein::llm::Compaction::WhenOverLimit,
                )
            })
            .unwrap()
            .expect("the step was planned");
        let body = rein::llm::request_body(&config, &chat);
        assert_eq!(Digest::of_bytes(&body), call.request_hash, "step {step}");
        assert_eq!(body, server.requests()[step].body, "step {step}");
    }
}

/// The `skill_entered` entries, in ledger order, after checking that each is followed (past
/// the other skills of its step) by its step's first `planner_attempt`.
fn skills_entered(ledger: &rein::Ledger) -> Vec<(u32, String, Digest)> {
    let entries = ledger.entries();
    let mut entered = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let EntryKind::SkillEntered {
            step,
            name,
            checksum,
        } = entry.event()
        else {
            continue;
        };
        let next = entries[i + 1..]
            .iter()
            .find(|e| !matches!(e.event(), EntryKind::SkillEntered { .. }))
            .map(rein::ledger::Entry::event);
        assert!(
            matches!(next, Some(EntryKind::PlannerAttempt { step: s, attempt }) if s == step && attempt.attempt == 1),
            "skill `{name}` at step {step} is followed by {next:?}"
        );
        entered.push((*step, name.clone(), *checksum));
    }
    entered
}

#[tokio::test]
async fn a_skill_loaded_through_skill_load_enters_the_record_at_the_next_step() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("skill_load", &json!({"name": "db-migrations"})),
        call("transition", &json!({"to": "decide", "reason": "know how"})),
        call("fail", &json!({"reason": "enough"})),
    ])
    .await
    .unwrap();
    let skill = |name: &str, trigger: &str, body: &str| {
        rein::run::Skill::new(name, format!("How to {name}"), vec![trigger.into()], body).unwrap()
    };
    let migrations = skill("db-migrations", "schema-change", "Never drop a column.\n");
    let never = skill("kubernetes", "kubectl", "Pin the image digest.\n");
    let provider = HttpProvider::with_key(
        ProviderConfig::new(Api::OpenAi, server.base_url(), "fake-model")
            .with_max_output_tokens(256),
        None,
    )
    .unwrap();
    let engine = Engine::builder()
        .tool(rein::tools::SkillLoad::new([
            migrations.clone(),
            never.clone(),
        ]))
        .skills([migrations.clone(), never])
        .planner(LlmPlanner::new(provider, LlmConfig::default()))
        .build()
        .unwrap();
    let run = engine.run("Change the users table").await.unwrap();
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PlannerGaveUp),
        "{run:?}"
    );
    let system = |n: usize| server.requests()[n].told();
    assert!(!system(1).contains("Never drop a column"), "{}", system(1));
    assert!(system(2).contains("Never drop a column"), "{}", system(2));
    assert!(system(3).contains("Never drop a column"), "{}", system(3));
    // Loaded at step 1, its body entered the context of step 2: recorded there, once; the
    // skill no trigger and no load brought in is never recorded.
    let ledger = engine.ledger(run.id()).await.unwrap();
    ledger.verify().unwrap();
    assert_eq!(
        skills_entered(&ledger),
        [(2, "db-migrations".to_owned(), migrations.checksum())]
    );
    assert_eq!(support::count(&ledger, "skill_entered"), 1);
}

#[tokio::test]
async fn a_reply_with_several_reads_runs_as_one_batch() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        Reply::openai_calls(
            &[
                Call::new("fs_list", &json!({"path": "."})),
                Call::new("fs_read", &json!({"path": "a.txt"})),
                Call::new("fs_read", &json!({"path": "b.txt"})),
            ],
            (100, 20),
        ),
        call(
            "transition",
            &json!({"to": "decide", "reason": "read them"}),
        ),
        call("finish", &json!({"summary": "read both"})),
    ])
    .await
    .unwrap();
    let engine = engine(planner(&server, LlmConfig::default()), &[]);
    let run = engine.run("read two files").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    let ledger = engine.ledger(run.id()).await.unwrap();
    ledger.verify().unwrap();
    let batches: Vec<usize> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::Decision {
                decision: Decision::CallTools { calls, .. },
                ..
            } => Some(calls.len()),
            _ => None,
        })
        .collect();
    assert_eq!(batches, [3], "the three calls are one decision");
    assert_eq!(run.steps(), 4, "one step for the batch");
    assert_eq!(support::count(&ledger, "tool_result"), 3);
    assert_eq!(server.requests().len(), 4);
}

/// A downstream team's planner announcing its model call the way the LLM planner does.
struct Careful;

impl Planner for Careful {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let meter = request.meter().expect("the engine hands a meter");
        let request_hash = Digest::of_bytes(request.goal().as_bytes());
        meter
            .begin(rein::planner::PlannerAttempt {
                attempt: 1,
                provider: "in-house".into(),
                model: "rules".into(),
                request_hash,
                worst_tokens: 50,
                worst_cost: Cost::Unknown,
            })
            .await?;
        meter
            .end(PlannerCall {
                provider: "in-house".into(),
                model: "rules".into(),
                request_hash,
                input_tokens: 7,
                output_tokens: 3,
                cost: Cost::Unknown,
                latency_ms: 0,
                finish_reason: Some("stop".into()),
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                reply: None,
            })
            .await?;
        Ok(Decision::fail("stopping here"))
    }
}

#[tokio::test]
async fn a_downstream_planner_puts_its_calls_on_the_record_through_the_same_meter() {
    let engine = engine(Careful, &[("tokens", 1_000)]);
    let run = engine.run("careful").await.expect("run");
    assert_eq!(run.usage().used(&BudgetName::TOKENS), 10);
    let ledger = engine.ledger(run.id()).await.unwrap();
    ledger.verify().unwrap();
    let kinds: Vec<&str> = ledger.entries().iter().map(|e| e.event().name()).collect();
    let at = kinds
        .iter()
        .position(|k| *k == "planner_attempt")
        .expect("an attempt");
    assert_eq!(
        kinds[at..at + 4],
        [
            "planner_attempt",
            "planner_call",
            "budget_consumed",
            "decision"
        ]
    );
    // The call went on the record once, not again after `plan` returned.
    assert_eq!(planner_calls(&ledger).len(), 1);
}

/// The `planner_attempt` numbers of step `step`, in order.
fn attempts_at(ledger: &rein::Ledger, step: u32) -> Vec<u32> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerAttempt { step: s, attempt } if *s == step => Some(attempt.attempt),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_context_error_is_compacted_before_it_is_sent_again_as_the_next_attempt() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        Reply::openai_calls(
            &[
                Call::new("fs_read", &json!({"path": "a.txt"})),
                Call::new("fs_read", &json!({"path": "b.txt"})),
            ],
            (100, 20),
        ),
        Reply::context_too_long(),
        call("fail", &json!({"reason": "enough"})),
    ])
    .await
    .unwrap();
    let config = LlmConfig {
        prompt: rein::llm::PromptConfig {
            keep_last: 1,
            ..Default::default()
        },
        ..LlmConfig::default()
    };
    let engine = engine(planner(&server, config), &[("tokens", 100_000)]);
    let run = engine.run("compact").await.unwrap();
    assert_eq!(
        run.failure().map(|f| f.message.as_str()),
        Some("enough"),
        "{:?}",
        run.failure()
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 4);
    assert_ne!(
        sent[2].body, sent[3].body,
        "compacted before it was sent again"
    );
    assert!(sent[3].body.len() < sent[2].body.len());
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert_eq!(
        attempts_at(&ledger, 2),
        [1, 2],
        "the resend is the next attempt"
    );
}

#[tokio::test]
async fn a_context_error_that_compaction_cannot_shorten_is_not_sent_again() {
    let server = FakeServer::start([
        Reply::context_too_long(),
        call("fail", &json!({"reason": "never asked"})),
    ])
    .await
    .unwrap();
    let engine = engine(
        planner(&server, LlmConfig::default()),
        &[("tokens", 100_000)],
    );
    let run = engine.run("nothing to compact").await.unwrap();
    assert_eq!(
        server.requests().len(),
        1,
        "the same bytes are not sent twice"
    );
    let failure = run.failure().expect("failed");
    assert_eq!(failure.kind, FailureKind::PlannerError);
    assert!(
        failure.message.contains("not sent again"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn a_finish_after_a_refused_call_in_one_reply_is_not_run() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        // `fs.write` is not eligible in explore: refused, so `finish` must not follow.
        Reply::openai_calls(
            &[
                Call::new("fs_write", &json!({"path": "a.txt"})),
                Call::new("finish", &json!({"summary": "wrote it"})),
            ],
            (100, 20),
        ),
        call("fail", &json!({"reason": "could not write"})),
    ])
    .await
    .unwrap();
    let engine = engine(planner(&server, LlmConfig::default()), &[]);
    let run = engine.run("write").await.unwrap();
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(
        run.failure().map(|f| f.message.as_str()),
        Some("could not write")
    );
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert_eq!(support::count(&ledger, "sequence_stopped"), 1);
    assert_eq!(server.requests().len(), 3, "the model was asked again");
}

#[tokio::test]
async fn a_provider_reporting_more_than_the_budget_left_is_charged_in_full_and_stops_the_run() {
    // The model declares at most ~1,300 tokens; the provider reports 50,019.
    let server = FakeServer::start([Reply::openai_calls(
        &[Call::new(
            "transition",
            &json!({"to": "explore", "reason": "go"}),
        )],
        (50_000, 19),
    )])
    .await
    .unwrap();
    let engine = engine(
        planner(&server, LlmConfig::default()),
        &[("tokens", 20_000)],
    );
    let run = engine.run("overrun").await.unwrap();
    let ledger = engine.ledger(run.id()).await.unwrap();
    ledger.verify().unwrap();
    assert_eq!(planner_calls(&ledger)[0].tokens(), 50_019);
    let overruns: Vec<(u64, u64, u64)> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::BudgetOverrun {
                name,
                amount,
                used,
                limit,
            } if *name == BudgetName::TOKENS => Some((*amount, *used, *limit)),
            _ => None,
        })
        .collect();
    assert_eq!(
        overruns,
        [(50_019, 50_019, 20_000)],
        "the true usage, charged"
    );
    assert_eq!(run.usage().used(&BudgetName::TOKENS), 50_019);
    assert_eq!(run.status(), RunStatus::Failed);
    let failure = run.failure().expect("failed");
    assert_eq!(failure.kind, FailureKind::BudgetExhausted);
    assert!(failure.message.contains("overrun"), "{}", failure.message);
    assert_eq!(
        support::count(&ledger, "decision"),
        0,
        "its reply is not applied"
    );
}

//! Bad input, from planners and from callers: unknown tools, inputs that break a schema,
//! transitions a table refuses, malformed questions, answers not offered, resuming runs that
//! are finished, waiting or unknown, and invalid configuration. Each is a typed error; where a
//! run exists, a refused decision is recorded in its ledger.

mod support;

use rein::ledger::{EntryKind, Violation};
use rein::policy::PolicySnapshot;
use rein::run::{FailureKind, RunError};
use rein::{
    Annotations, BuildError, Decision, Engine, EngineError, FnTool, RunId, RunStatus, ScriptStep,
    ScriptedPlanner, State, ToolBuildError, Value, json,
};
use support::{count, echo, violations, walk_to};

fn greet() -> FnTool {
    FnTool::builder("greet")
        .annotations(Annotations::read_only())
        .input_schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": false
        }))
        .handler(|input: Value| async move { Ok(json!({ "hello": input["name"] })) })
        .build()
        .expect("a valid tool")
}

/// Proposes `decision` in explore; checks it was refused as `violation`, recorded, and failed
/// the run with a message containing each of `says`.
async fn check(decision: Decision, violation: Violation, says: &[&str]) {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(State::Explore, decision));
    let (read, read_probe) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(greet())
        .tool(read)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("bad input").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("verifies");
    assert_eq!(violations(&ledger), [(violation, false)], "{says:?}");
    assert_eq!(count(&ledger, "tool_call"), 0);
    assert_eq!(read_probe.calls(), 0);
    let failure = run.failure().expect("failed");
    assert_eq!(failure.kind, FailureKind::PolicyViolation);
    for text in says {
        assert!(
            failure.message.contains(text),
            "{:?} lacks {text:?}",
            failure.message
        );
    }
    // The ledger says the same as the failure.
    let recorded = ledger.entries().iter().find_map(|e| match e.event() {
        EntryKind::PolicyViolation { message, .. } => Some(message.clone()),
        _ => None,
    });
    assert!(recorded.is_some_and(|m| failure.message.starts_with(&m)));
}

#[tokio::test]
async fn an_unknown_tool_is_refused_naming_the_registered_ones() {
    check(
        Decision::call_tool("gret", json!({"name": "x"}), "typo"),
        Violation::UnknownTool,
        &["\"gret\"", "greet, read"],
    )
    .await;
}

#[tokio::test]
async fn an_input_that_breaks_the_schema_is_refused_with_its_path() {
    check(
        Decision::call_tool("greet", json!({"name": 42}), "wrong type"),
        Violation::InvalidInput,
        &["greet", "/name"],
    )
    .await;
    check(
        Decision::call_tool("greet", json!({}), "missing"),
        Violation::InvalidInput,
        &["name"],
    )
    .await;
    check(
        Decision::call_tool("greet", json!({"name": "x", "extra": 1}), "extra"),
        Violation::InvalidInput,
        &["extra"],
    )
    .await;
}

#[tokio::test]
async fn a_refused_transition_is_typed_and_recorded() {
    check(
        Decision::transition(State::Intake, "back to the start"),
        Violation::TransitionRefused,
        &["explore → intake", "decide"],
    )
    .await;
}

#[tokio::test]
async fn a_malformed_question_is_refused() {
    check(
        Decision::ask_human("Which?", ["a", "a"]),
        Violation::InvalidInput,
        &["question"],
    )
    .await;
    check(
        Decision::ask_human("   ", Vec::<String>::new()),
        Violation::InvalidInput,
        &["question"],
    )
    .await;
}

#[test]
fn a_table_that_escapes_a_terminal_state_is_refused_before_any_run() {
    let policy = PolicySnapshot::from_value(&json!({
        "transitions": {"intake": ["done"], "done": ["explore"]}
    }));
    assert!(policy.is_err(), "{policy:?}");
}

async fn paused_engine() -> (Engine, RunId) {
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::ask_human("Which region?", ["eu", "us"]),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!("ok"))),
    ]);
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let run = engine.run("ask").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    (engine, run.id().clone())
}

#[tokio::test]
async fn an_answer_not_offered_is_refused_and_records_nothing() {
    let (engine, id) = paused_engine().await;
    let before = engine.ledger(&id).await.expect("ledger");
    for answer in ["asia", "", "EU"] {
        let refused = engine.resume_with_input(&id, answer).await;
        assert!(
            matches!(
                &refused,
                Err(EngineError::InvalidAnswer { id: i, source: RunError::AnswerNotOffered { .. } | RunError::EmptyAnswer })
                    if *i == id
            ),
            "{answer:?}: {refused:?}"
        );
        assert_eq!(
            engine.ledger(&id).await.expect("ledger"),
            before,
            "{answer:?}"
        );
    }
    let run = engine.load_run(&id).await.expect("load");
    assert_eq!(run.status(), RunStatus::Paused);

    // Resuming without an answer says what it waits for.
    let waiting = engine.resume(&id).await;
    assert!(
        matches!(&waiting, Err(EngineError::AwaitingAnswer { question, options, .. })
            if question == "Which region?" && options == &["eu", "us"]),
        "{waiting:?}"
    );
    let message = waiting.expect_err("waiting").to_string();
    assert!(message.contains("resume it with an answer"), "{message}");

    // The right answer still works.
    let run = engine.resume_with_input(&id, "eu").await.expect("resume");
    assert_eq!(run.status(), RunStatus::Completed);
}

#[tokio::test]
async fn an_answer_to_a_run_that_asked_nothing_is_refused() {
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new(walk_to(State::Decide)))
        .build()
        .expect("engine builds");
    let handle = engine.start("no question").await.expect("start");
    handle.interrupt();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Interrupted);
    let before = engine.ledger(run.id()).await.expect("ledger");
    let refused = engine.resume_with_input(run.id(), "yes").await;
    assert!(
        matches!(
            refused,
            Err(EngineError::InvalidAnswer {
                source: RunError::NotPaused { .. },
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(engine.ledger(run.id()).await.expect("ledger"), before);
}

#[tokio::test]
async fn finished_and_unknown_runs_cannot_be_resumed() {
    let (engine, id) = paused_engine().await;
    let done = engine.resume_with_input(&id, "us").await.expect("resume");
    assert_eq!(done.status(), RunStatus::Completed);
    let before = engine.ledger(&id).await.expect("ledger");
    for refused in [
        engine.resume(&id).await,
        engine.resume_with_input(&id, "eu").await,
    ] {
        assert!(
            matches!(&refused, Err(EngineError::RunFinished { status: RunStatus::Completed, id: i }) if *i == id),
            "{refused:?}"
        );
    }
    assert!(engine.start_resume(&id, None).await.is_err());
    assert_eq!(engine.ledger(&id).await.expect("ledger"), before);

    let unknown: RunId = "no-such-run".parse().expect("run id");
    let not_found = |r: &Result<_, EngineError>| matches!(r, Err(EngineError::RunNotFound { id }) if id.as_str() == "no-such-run");
    assert!(not_found(&engine.resume(&unknown).await.map(|_| ())));
    assert!(not_found(
        &engine.resume_with_input(&unknown, "x").await.map(|_| ())
    ));
    assert!(not_found(&engine.ledger(&unknown).await.map(|_| ())));
    assert!(not_found(&engine.load_run(&unknown).await.map(|_| ())));
}

#[test]
fn invalid_ids_and_names_cannot_be_made() {
    for id in ["", "../etc/passwd", "a/b", "white space"] {
        assert!(id.parse::<RunId>().is_err(), "{id:?}");
    }
    let bad_name = FnTool::builder("no spaces allowed")
        .handler(|v: Value| async move { Ok(v) })
        .build();
    assert!(
        matches!(bad_name, Err(ToolBuildError::InvalidName(_))),
        "{bad_name:?}"
    );
    let no_handler = FnTool::builder("idle").build();
    assert!(
        matches!(no_handler, Err(ToolBuildError::NoHandler(_))),
        "{no_handler:?}"
    );
}

#[test]
fn invalid_configuration_is_refused_when_the_engine_is_built() {
    let planner = || ScriptedPlanner::new([]);
    assert!(matches!(
        Engine::builder().build(),
        Err(BuildError::NoPlanner)
    ));

    let built = Engine::builder()
        .tool(greet())
        .tool(greet())
        .planner(planner())
        .build();
    assert!(
        matches!(built, Err(BuildError::DuplicateTool(ref n)) if n.as_str() == "greet"),
        "{built:?}"
    );

    let bad_schema = FnTool::builder("odd")
        .input_schema(json!({"type": "no-such-type"}))
        .handler(|v: Value| async move { Ok(v) })
        .build()
        .expect("a tool");
    let built = Engine::builder()
        .tool(bad_schema)
        .planner(planner())
        .build();
    assert!(
        matches!(built, Err(BuildError::InvalidSchema { .. })),
        "{built:?}"
    );

    let built = Engine::builder()
        .budget("not a name!", 3)
        .planner(planner())
        .build();
    assert!(
        matches!(
            built,
            Err(BuildError::InvalidOption {
                option: "budget",
                ..
            })
        ),
        "{built:?}"
    );
}

#[tokio::test]
async fn engine_errors_keep_their_cause_and_name_no_cli_command() {
    use std::error::Error as _;

    // Stores that cannot be opened: the storage error is the source, not a copy of its text.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").expect("write");
    let built = Engine::builder()
        .planner(ScriptedPlanner::new([]))
        .filesystem(&file)
        .build();
    let Err(e @ BuildError::Stores(_)) = built else {
        panic!("expected a store error, got {built:?}");
    };
    assert!(
        e.source()
            .is_some_and(<dyn std::error::Error>::is::<rein::store::StorageError>),
        "{e:?}"
    );

    // A ledger whose first entry is not run_started: a typed reason, kept as the source.
    let engine = Engine::builder()
        .planner(ScriptedPlanner::new([]))
        .build()
        .expect("engine builds");
    let id: RunId = "no-such-run".parse().expect("an id");
    let missing = engine.resume(&id).await.expect_err("no run");
    assert!(matches!(missing, EngineError::RunNotFound { .. }));
    assert!(!missing.to_string().contains("runs list"), "{missing}");
    let mut ledger = rein::Ledger::new(id.clone());
    ledger.append(
        rein::run::Timestamp::from_unix_millis(1),
        State::Intake,
        EntryKind::Steering { note: "x".into() },
    );
    let replayed = engine.replay(&ledger).await.expect_err("no run_started");
    let EngineError::InvalidRecordedPolicy { ref source, .. } = replayed else {
        panic!("expected an unusable recorded policy, got {replayed:?}");
    };
    assert!(matches!(
        source,
        rein::policy::RecordedPolicyError::NoRunStarted
    ));
    assert!(replayed.source().is_some());
}

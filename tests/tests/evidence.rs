//! Evidence accumulation and order: tool results, tool failures handed back, human input and
//! notes accumulate in the order they happened, each with the input that produced it, and the
//! planner sees them grow.

mod support;

use std::sync::{Arc, Mutex};

use rein::policy::OnToolError;
use rein::run::{Evidence, EvidenceKind, Payload};
use rein::{
    Annotations, Decision, Engine, PlanRequest, Planner, PlannerError, RunStatus, ScriptStep,
    ScriptedPlanner, State, ToolError, json,
};
use support::{echo, failing, walk_to};

/// Wraps a planner and remembers the evidence of every request it gets.
#[derive(Debug)]
struct Watching<P> {
    inner: P,
    seen: Arc<Mutex<Vec<Vec<Evidence>>>>,
}

impl<P: Planner> Planner for Watching<P> {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        self.seen
            .lock()
            .expect("lock")
            .push(request.evidence().to_vec());
        self.inner.plan(request).await
    }
}

/// A compact description of one piece of evidence, to compare sequences.
fn describe(evidence: &Evidence) -> String {
    match &evidence.kind {
        EvidenceKind::ToolResult {
            tool,
            input,
            output: Payload::Inline(output),
            cached,
        } => format!("result {tool} {input} -> {output} cached={cached}"),
        EvidenceKind::ToolFailure { tool, input, error } => {
            format!("failure {tool} {input}: {}", error.kind())
        }
        EvidenceKind::HumanInput { question, answer } => format!("human {question} {answer}"),
        EvidenceKind::SystemNote { source, note } => format!("note {source:?} {note}"),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn evidence_accumulates_in_the_order_it_was_gathered() {
    let (read, _) = echo("read", Annotations::read_only());
    let (broken, _) = failing(
        "broken",
        Annotations::read_only(),
        ToolError::failed("disk full"),
    );
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("read", json!({"q": 1}), "a"),
        ),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("broken", json!({"q": 2}), "b"),
        ),
        ScriptStep::expect(State::Explore, Decision::ask_human("Go on?", ["yes"])),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("read", json!({"q": 3}), "c"),
        ),
        ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "enough"),
        ),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!(null))),
    ]);
    let seen: Arc<Mutex<Vec<Vec<Evidence>>>> = Arc::default();
    let engine = Engine::builder()
        .tool(read)
        .tool(broken)
        .on_tool_error(OnToolError::HandBack)
        .planner(Watching {
            inner: ScriptedPlanner::new(steps),
            seen: Arc::clone(&seen),
        })
        .build()
        .expect("engine builds");
    let paused = engine.run("gather").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    let run = engine
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());

    let described: Vec<String> = run.evidence().iter().map(describe).collect();
    assert_eq!(
        described,
        [
            r#"result read {"q":1} -> {"echo":{"q":1}} cached=false"#,
            r#"failure broken {"q":2}: failed"#,
            "human Go on? yes",
            // The engine tells the planner the run was resumed (recorded as run_resumed).
            "note Engine resumed with a human's answer",
            r#"result read {"q":3} -> {"echo":{"q":3}} cached=false"#,
        ]
    );
    // Evidence is tagged with the number of decisions taken when it was gathered: the result
    // of decision 1 (counted from 0) carries step 2.
    let tagged: Vec<u32> = run.evidence().iter().map(|e| e.step).collect();
    assert_eq!(tagged, [2, 3, 4, 4, 5]);

    // Every request saw the evidence of the one before, plus what the step added.
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len() as u32, run.steps());
    for pair in seen.windows(2) {
        assert!(pair[1].starts_with(&pair[0]), "evidence only grows");
    }
    assert_eq!(seen.last().map(Vec::len), Some(5));
}

#[tokio::test]
async fn a_failed_tool_fails_the_run_unless_failures_are_handed_back() {
    for hand_back in [false, true] {
        let (broken, probe) = failing(
            "broken",
            Annotations::read_only(),
            ToolError::failed("disk full"),
        );
        let mut steps = walk_to(State::Explore);
        steps.extend([
            ScriptStep::expect(
                State::Explore,
                Decision::call_tool("broken", json!({}), "try"),
            ),
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Decide, "anyway"),
            ),
            ScriptStep::expect(State::Decide, Decision::finish("done", json!(null))),
        ]);
        let mut builder = Engine::builder()
            .tool(broken)
            .planner(ScriptedPlanner::new(steps));
        if hand_back {
            builder = builder.on_tool_error(OnToolError::HandBack);
        }
        let engine = builder.build().expect("engine builds");
        let run = engine.run("fail").await.expect("run");
        assert_eq!(probe.calls(), 1, "a non-transient failure is not retried");
        let failures = run
            .evidence()
            .iter()
            .filter(|e| matches!(e.kind, EvidenceKind::ToolFailure { .. }))
            .count();
        if hand_back {
            assert_eq!(run.status(), RunStatus::Completed);
            assert_eq!(failures, 1);
        } else {
            assert_eq!(
                run.failure().map(|f| f.kind),
                Some(rein::run::FailureKind::ToolFailed)
            );
            assert!(
                run.failure()
                    .is_some_and(|f| f.message.contains("disk full")),
                "{:?}",
                run.failure()
            );
        }
    }
}

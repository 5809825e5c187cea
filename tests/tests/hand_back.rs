//! `OnViolation::HandBack`: a rejected decision becomes evidence the planner can learn from,
//! at most `limit` times per run; the next rejection fails the run.

mod support;

use rein::ledger::Violation;
use rein::planner::MockPlanner;
use rein::policy::OnViolation;
use rein::run::{BudgetName, EvidenceKind, FailureKind, NoteSource};
use rein::{Annotations, Decision, Engine, PlanRequest, RunStatus, State, json};
use support::{echo, violations};

/// How many violation notes the run has been handed so far.
fn notes(request: &PlanRequest<'_>) -> usize {
    request
        .evidence()
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EvidenceKind::SystemNote {
                    source: NoteSource::Violation,
                    ..
                }
            )
        })
        .count()
}

fn has_result(request: &PlanRequest<'_>, tool: &str) -> bool {
    request
        .evidence()
        .iter()
        .any(|e| matches!(&e.kind, EvidenceKind::ToolResult { tool: t, .. } if t.as_str() == tool))
}

/// A planner that misspells a tool `mistakes` times, learns from the notes, then reads in
/// explore, writes in act and finishes.
fn learner(mistakes: usize) -> MockPlanner {
    MockPlanner::new(move |request| {
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "start"),
            State::Explore if notes(request) < mistakes => {
                Decision::call_tool("serach", json!({}), "typo")
            }
            State::Explore if !has_result(request, "read") => {
                Decision::call_tool("read", json!({}), "look")
            }
            State::Explore => Decision::transition(State::Decide, "seen it"),
            State::Decide => Decision::transition(State::Act, "do it"),
            State::Act if !has_result(request, "write") => {
                Decision::call_tool("write", json!({}), "write")
            }
            State::Act => Decision::transition(State::Validate, "check"),
            _ => Decision::finish("done", json!(notes(request))),
        })
    })
}

/// A planner making `mistakes` mistakes under `HandBack { limit }`.
async fn check(limit: u64, mistakes: usize) {
    let (read, _) = echo("read", Annotations::read_only());
    let (write, wrote) = echo("write", Annotations::side_effecting());
    let engine = Engine::builder()
        .tool(read)
        .tool(write)
        .planner(learner(mistakes))
        .on_violation(OnViolation::HandBack { limit })
        .build()
        .expect("engine builds");
    let run = engine.run("learn").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("ledger verifies");
    let what = format!("limit {limit}, {mistakes} mistakes");
    let handed = mistakes.min(limit as usize);
    let mut expected = vec![(Violation::UnknownTool, true); handed];
    if mistakes as u64 <= limit {
        assert_eq!(
            run.status(),
            RunStatus::Completed,
            "{what}: {:?}",
            run.failure()
        );
        assert_eq!(run.result(), Some(&json!(mistakes)), "{what}");
        assert_eq!(wrote.calls(), 1, "{what}");
    } else {
        expected.push((Violation::UnknownTool, false));
        let failure = run.failure().expect("failed");
        assert_eq!(failure.kind, FailureKind::PolicyViolation, "{what}");
        assert!(
            failure.message.contains("violations budget is exhausted"),
            "{what}: {failure:?}"
        );
        assert_eq!(wrote.calls(), 0, "{what}");
    }
    assert_eq!(violations(&ledger), expected, "{what}");
    assert_eq!(
        run.usage().used(&BudgetName::VIOLATIONS),
        handed as u64,
        "{what}"
    );
    // Each handed-back rejection is a note the planner saw, naming what went wrong.
    let notes: Vec<&str> = run
        .evidence()
        .iter()
        .filter_map(|e| match &e.kind {
            EvidenceKind::SystemNote {
                source: NoteSource::Violation,
                note,
            } => Some(note.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), handed, "{what}");
    assert!(
        notes
            .iter()
            .all(|n| n.contains("unknown tool \"serach\"") && n.contains("read, write")),
        "{what}: {notes:?}"
    );
}

#[tokio::test]
async fn a_run_without_mistakes_is_unaffected() {
    check(0, 0).await;
    check(2, 0).await;
}

#[tokio::test]
async fn the_planner_corrects_itself_within_the_limit() {
    check(1, 1).await;
    check(2, 1).await;
    check(2, 2).await;
}

#[tokio::test]
async fn one_violation_more_than_the_limit_fails_the_run() {
    check(0, 1).await;
    check(1, 2).await;
    check(2, 3).await;
}

/// A planner that asks a human first, then keeps proposing a tool nobody registered.
fn stubborn() -> MockPlanner {
    MockPlanner::new(|request| {
        Ok(if request.step() == 0 {
            Decision::ask_human("go on?", vec!["yes".to_owned()])
        } else {
            Decision::call_tool("nope", json!({}), "keeps trying")
        })
    })
}

/// Pauses a run on an engine with `first`, resumes it with an answer on an engine over the
/// same directory with `second`; returns the violations the resumed run recorded.
async fn restarted(first: OnViolation, second: OnViolation) -> Vec<(Violation, bool)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = |on_violation| {
        Engine::builder()
            .planner(stubborn())
            .filesystem(dir.path())
            .on_violation(on_violation)
            .max_steps(20)
            .build()
            .expect("engine builds")
    };
    let paused = engine(first).run("persist").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    let b = engine(second);
    let run = b
        .resume_with_input(paused.id(), "yes")
        .await
        .expect("resume");
    assert_eq!(run.status(), RunStatus::Failed, "{:?}", run.failure());
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PolicyViolation),
        "{:?}",
        run.failure()
    );
    violations(&b.ledger(paused.id()).await.expect("ledger"))
}

#[tokio::test]
async fn a_restart_cannot_widen_how_often_rejections_are_handed_back() {
    // Started failing on the first rejection: an engine that hands back cannot change that.
    assert_eq!(
        restarted(OnViolation::FailRun, OnViolation::HandBack { limit: 1 }).await,
        [(Violation::UnknownTool, false)]
    );
    // Started handing back one: a resume on a default engine keeps the run's own policy.
    assert_eq!(
        restarted(OnViolation::HandBack { limit: 1 }, OnViolation::FailRun).await,
        [
            (Violation::UnknownTool, true),
            (Violation::UnknownTool, false)
        ]
    );
}

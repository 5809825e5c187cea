//! Sequence decisions (DESIGN §7): one decision holding several, ledgered once and applied
//! member by member, each checked and recorded, stopping at the first that does not take
//! effect (the rest recorded as not run); a stop mid-sequence resumes at the member the
//! ledger shows next.

mod support;

use rein::ledger::{EntryKind, Violation};
use rein::planner::{MockPlanner, SequenceError};
use rein::policy::OnViolation;
use rein::run::{EvidenceKind, FailureKind, NoteSource};
use rein::{Annotations, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, json};
use support::{CrashingLedgers, assert_chain, count, echo, entries, kinds, violations};

/// Explore, then read `a` and `b`, move to decide and finish, all in one decision.
fn read_then_finish() -> Decision {
    Decision::sequence(
        [
            Decision::call_tool("read", json!({"f": "a"}), "a"),
            Decision::call_tool("write", json!({"f": "b"}), "b"),
            Decision::transition(State::Decide, "have both"),
            Decision::finish("done", json!({"ok": true})),
        ],
        "all at once",
    )
    .expect("a valid sequence")
}

/// The members each `sequence_member` entry names, in order.
fn members(ledger: &rein::Ledger) -> Vec<(u32, String)> {
    entries(ledger, "sequence_member")
        .into_iter()
        .map(|e| match e.event() {
            EntryKind::SequenceMember { index, kind, .. } => (*index, kind.clone()),
            _ => unreachable!(),
        })
        .collect()
}

#[tokio::test]
async fn a_sequence_is_one_step_whose_members_are_each_checked_and_recorded() {
    let (read, reads) = echo("read", Annotations::read_only());
    let (write, writes) = echo("write", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .tool(write)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(State::Explore, read_then_finish()),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("sequence").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(run.steps(), 2, "the sequence is one step");
    assert_eq!((reads.calls(), writes.calls()), (1, 1));
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(count(&ledger, "decision"), 2);
    assert_eq!(
        members(&ledger),
        [
            (0, "call_tool".to_owned()),
            (1, "call_tool".to_owned()),
            (2, "transition".to_owned()),
            (3, "finish".to_owned()),
        ]
    );
    assert_eq!(count(&ledger, "sequence_stopped"), 0);
    // Each member's own entries follow its `sequence_member`.
    let tail: Vec<&str> = kinds(&ledger)
        .into_iter()
        .skip_while(|k| *k != "sequence_member")
        .filter(|k| !k.starts_with("budget"))
        .collect();
    assert_eq!(
        tail,
        [
            "sequence_member",
            "tool_call",
            "tool_result",
            "sequence_member",
            "tool_call",
            "tool_result",
            "sequence_member",
            "transition",
            "sequence_member",
            "transition",
            "run_completed",
        ]
    );
}

#[tokio::test]
async fn a_refused_member_stops_the_sequence_and_the_rest_is_recorded_as_not_run() {
    let (read, reads) = echo("read", Annotations::read_only());
    let planner = MockPlanner::new(|request| {
        let told = request.evidence().iter().find_map(|e| match &e.kind {
            EvidenceKind::SystemNote {
                source: NoteSource::Engine,
                note,
            } if note.contains("not run") => Some(note.clone()),
            _ => None,
        });
        Ok(match (request.state(), told) {
            (State::Intake, _) => Decision::transition(State::Explore, "go"),
            (State::Explore, None) => Decision::sequence(
                [
                    Decision::call_tool("read", json!({}), "look"),
                    Decision::call_tool("serach", json!({}), "typo"),
                    Decision::call_tool("read", json!({"again": true}), "look again"),
                    Decision::transition(State::Decide, "seen"),
                ],
                "",
            )
            .expect("a valid sequence"),
            (_, Some(note)) => Decision::fail(note),
            (_, None) => Decision::fail("the sequence went on"),
        })
    });
    let engine = Engine::builder()
        .tool(read)
        .planner(planner)
        .on_violation(OnViolation::HandBack { limit: 3 })
        .build()
        .expect("engine builds");
    let run = engine.run("stop").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(reads.calls(), 1, "nothing after the refused member ran");
    assert_eq!(violations(&ledger), [(Violation::UnknownTool, true)]);
    let stopped = entries(&ledger, "sequence_stopped");
    let [stopped] = stopped.as_slice() else {
        panic!("one sequence_stopped: {:?}", kinds(&ledger));
    };
    let EntryKind::SequenceStopped {
        not_run, reason, ..
    } = stopped.event()
    else {
        unreachable!()
    };
    assert_eq!(not_run, &[2, 3]);
    assert!(reason.contains("serach"), "{reason}");
    // The planner was told, and said so when it gave up.
    assert_eq!(run.status(), RunStatus::Failed);
    let failure = run.failure().expect("a failure");
    assert_eq!(failure.kind, FailureKind::PlannerGaveUp);
    assert!(
        failure.message.contains("members 2, 3"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn a_refused_member_fails_the_run_when_violations_are_not_handed_back() {
    let (read, reads) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::sequence(
                    [
                        Decision::transition(State::Act, "skip ahead"),
                        Decision::call_tool("read", json!({}), "never"),
                    ],
                    "",
                )
                .expect("a valid sequence"),
            ),
        ]))
        .on_violation(OnViolation::FailRun)
        .build()
        .expect("engine builds");
    let run = engine.run("refused").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PolicyViolation)
    );
    assert_eq!(reads.calls(), 0);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(violations(&ledger), [(Violation::TransitionRefused, false)]);
    assert_eq!(members(&ledger), [(0, "transition".to_owned())]);
}

#[tokio::test]
async fn a_sequence_that_breaks_its_rules_is_refused_whole_with_the_rule_named() {
    // Built by hand, as a planner deserializing one could: `finish` before a call.
    let bad = Decision::Sequence {
        decisions: vec![
            Decision::finish("early", json!(null)),
            Decision::call_tool("read", json!({}), "after the end"),
        ],
        reason: "".into(),
    };
    let (read, reads) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(State::Explore, bad),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("bad sequence").await.expect("run");
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(reads.calls(), 0);
    let message = &run.failure().expect("failure").message;
    let expected = SequenceError::NotLast {
        index: 0,
        kind: "finish",
    }
    .to_string();
    assert_eq!(message, &expected);
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(count(&ledger, "sequence_member"), 0);
}

#[tokio::test]
async fn a_failed_call_stops_the_sequence_when_tool_errors_are_handed_back() {
    let (read, _) = echo("read", Annotations::read_only());
    let (broken, _) = support::failing(
        "broken",
        Annotations::read_only(),
        rein::ToolError::failed("disk on fire"),
    );
    let engine = Engine::builder()
        .tool(read)
        .tool(broken)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::sequence(
                    [
                        Decision::call_tool("broken", json!({}), ""),
                        Decision::transition(State::Decide, "never"),
                    ],
                    "",
                )
                .expect("a valid sequence"),
            ),
            ScriptStep::expect(State::Explore, Decision::fail("the tool broke")),
        ]))
        .on_tool_error(rein::policy::OnToolError::HandBack)
        .build()
        .expect("engine builds");
    let run = engine.run("broken").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(
        count(&ledger, "sequence_stopped"),
        1,
        "{:?}",
        kinds(&ledger)
    );
    assert_eq!(
        run.failure().map(|f| f.message.as_str()),
        Some("the tool broke"),
        "the planner decided again in explore"
    );
}

fn after_first_result(entry: &rein::ledger::Entry) -> bool {
    // The run's first result is the first member's.
    matches!(entry.event(), EntryKind::ToolResult { .. })
}

fn after_second_member(entry: &rein::ledger::Entry) -> bool {
    matches!(entry.event(), EntryKind::SequenceMember { index: 1, .. })
}

/// Runs `read_then_finish` over a ledger that "crashes" after `crash_after`, resumes it in
/// a second engine, and returns each engine's (reads, writes) and the final ledger.
async fn crash_mid_sequence(
    crash_after: fn(&rein::ledger::Entry) -> bool,
) -> ((usize, usize), (usize, usize), rein::Run, rein::Ledger) {
    let build = |ledgers: CrashingLedgers| {
        let (read, reads) = echo("read", Annotations::read_only());
        let (write, writes) = echo("write", Annotations::read_only());
        let engine = Engine::builder()
            .tool(read)
            .tool(write)
            .planner(ScriptedPlanner::new([
                ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
                ScriptStep::expect(State::Explore, read_then_finish()),
            ]))
            .ledger_store(ledgers)
            .build();
        (engine, reads, writes)
    };
    let ledgers = CrashingLedgers::crashing_after(crash_after);
    let (first, reads, writes) = build(ledgers.clone());
    let first = first.expect("engine builds");
    let run = first.run("crash").await.expect("run");
    assert!(ledgers.has_crashed());
    let before = (reads.calls(), writes.calls());
    drop(first);
    let (second, reads, writes) = build(ledgers.restarted());
    let second = second.expect("engine builds");
    let stored = second.ledger(run.id()).await.expect("ledger");
    let resumed = second.resume(run.id()).await.expect("resume");
    let ledger = second.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(&ledger.entries()[..stored.len()], stored.entries());
    (before, (reads.calls(), writes.calls()), resumed, ledger)
}

#[tokio::test]
async fn a_stop_between_members_resumes_at_the_next_member() {
    let (before, after, run, ledger) = crash_mid_sequence(after_first_result).await;
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(before, (1, 1), "the first process ran both calls");
    assert_eq!(
        after,
        (0, 1),
        "the resume made the second call, and only it"
    );
    // The second member's record is the resume's: the first is not applied again.
    let indexes: Vec<u32> = members(&ledger).into_iter().map(|(i, _)| i).collect();
    assert_eq!(indexes, [0, 1, 2, 3]);
    assert_eq!(count(&ledger, "decision"), 2, "no step planned again");
}

#[tokio::test]
async fn a_stop_inside_a_member_finishes_that_member_then_goes_on() {
    let (_, after, run, ledger) = crash_mid_sequence(after_second_member).await;
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    assert_eq!(
        after,
        (0, 1),
        "the cut member is applied, the first is not again"
    );
    let indexes: Vec<u32> = members(&ledger).into_iter().map(|(i, _)| i).collect();
    assert_eq!(indexes, [0, 1, 2, 3]);
    assert_eq!(count(&ledger, "tool_result"), 2);
}

#[tokio::test]
async fn a_run_with_sequences_replays_to_the_same_end() {
    let (read, _) = echo("read", Annotations::read_only());
    let (write, _) = echo("write", Annotations::read_only());
    let engine = Engine::builder()
        .tool(read)
        .tool(write)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(State::Explore, read_then_finish()),
        ]))
        .build()
        .expect("engine builds");
    let run = engine.run("replay").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let report = engine.replay(&ledger).await.expect("replay");
    assert!(report.matches(), "{:?}", report.divergence());
}

#[tokio::test]
async fn a_stop_lets_the_member_in_progress_finish_and_starts_no_other() {
    let (slow, gate, slow_calls) = support::gated("slow", Annotations::read_only());
    let (read, reads) = echo("read", Annotations::read_only());
    let build = || {
        Engine::builder()
            .tool(slow.clone())
            .tool(read.clone())
            .planner(ScriptedPlanner::new([
                ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
                ScriptStep::expect(
                    State::Explore,
                    Decision::sequence(
                        [
                            Decision::call_tool("slow", json!({}), ""),
                            Decision::call_tool("read", json!({}), ""),
                        ],
                        "",
                    )
                    .expect("a valid sequence"),
                ),
                ScriptStep::expect(State::Explore, Decision::fail("asked again after the stop")),
            ]))
            .build()
            .expect("engine builds")
    };
    let engine = build();
    let handle = engine.start("stop").await.expect("start");
    gate.entered().await;
    handle.stop();
    gate.release();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Interrupted);
    assert_eq!(slow_calls.calls(), 1);
    assert_eq!(reads.calls(), 0, "nothing new started");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    let tail: Vec<&str> = kinds(&ledger).into_iter().rev().take(4).collect();
    assert_eq!(
        tail,
        [
            "run_interrupted",
            "interrupt",
            "sequence_stopped",
            "tool_result"
        ],
        "the call finished and was recorded"
    );
    // Resumed, the planner is asked again (it was told what did not run).
    let resumed = engine.resume(run.id()).await.expect("resume");
    assert_eq!(
        resumed.failure().map(|f| f.message.as_str()),
        Some("asked again after the stop")
    );
    assert_eq!(reads.calls(), 0);
}

#[tokio::test]
async fn a_graceful_interrupt_mid_sequence_runs_no_further_call_and_grants_the_last_step() {
    let (slow, gate, _) = support::gated("slow", Annotations::read_only());
    let (read, reads) = echo("read", Annotations::read_only());
    let engine = Engine::builder()
        .tool(slow)
        .tool(read)
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "go")),
            ScriptStep::expect(
                State::Explore,
                Decision::sequence(
                    [
                        Decision::call_tool("slow", json!({}), ""),
                        Decision::call_tool("read", json!({}), ""),
                    ],
                    "",
                )
                .expect("a valid sequence"),
            ),
            // The one last step an interrupt grants.
            ScriptStep::expect(State::Explore, Decision::fail("wrapped up")),
        ]))
        .build()
        .expect("engine builds");
    let handle = engine.start("interrupt").await.expect("start");
    gate.entered().await;
    handle.interrupt();
    gate.release();
    let run = handle.await.expect("run");
    assert_eq!(reads.calls(), 0, "no call after the interrupt");
    assert_eq!(
        run.failure().map(|f| f.message.as_str()),
        Some("wrapped up")
    );
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let stopped = entries(&ledger, "sequence_stopped");
    let [stopped] = stopped.as_slice() else {
        panic!("one sequence_stopped: {:?}", kinds(&ledger));
    };
    let EntryKind::SequenceStopped {
        not_run, reason, ..
    } = stopped.event()
    else {
        unreachable!()
    };
    assert_eq!(not_run, &[1]);
    assert!(reason.contains("interrupted"), "{reason}");
}

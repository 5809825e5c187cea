//! Unit tests of `Run`: its rules, its persisted form and its projections of evidence.

use super::*;
use crate::{BudgetName, NoteSource};
use proptest::prelude::*;
use serde_json::json;

fn t(ms: u64) -> Timestamp {
    Timestamp::from_unix_millis(ms)
}

fn pending_for(run: &Run) -> PendingApproval {
    PendingApproval {
        run: run.id.clone(),
        step: 1,
        tool: "deploy".parse().unwrap(),
        input_hash: crate::Digest::of_json(&json!({"env": "prod"})),
        risk: rein_tool::RiskLevel::High,
        reason: "destructive".into(),
        requested_at: t(5),
    }
}

#[test]
fn a_run_paused_for_an_approval_goes_on_only_with_a_verdict_and_round_trips() {
    let mut r = run();
    let pending = pending_for(&r);
    r.await_approval(pending.clone(), t(5)).unwrap();
    assert_eq!(r.status(), RunStatus::Paused);
    assert!(
        r.waiting_for()
            .unwrap()
            .contains("waiting for approval of `deploy`")
    );
    assert!(matches!(
        r.resume(t(6)),
        Err(RunError::AwaitingApproval { .. })
    ));
    assert!(matches!(
        r.answer("yes", t(6)),
        Err(RunError::NotPaused { .. })
    ));
    let back: Run = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    assert_eq!(r.settle_approval(t(7)).unwrap(), pending);
    assert_eq!(r.status(), RunStatus::Running);
    assert!(r.settle_approval(t(8)).is_err());
    // A snapshot without one never mentions it, so older snapshots read the same.
    assert!(
        serde_json::to_value(&r)
            .unwrap()
            .get("pending_approval")
            .is_none()
    );
    let other = PendingApproval {
        run: "other".parse().unwrap(),
        ..pending
    };
    assert!(r.await_approval(other, t(9)).is_err());
}

fn run() -> Run {
    Run::new(
        RunId::new("r").unwrap(),
        "goal",
        Map::new(),
        json!({"p": 1}),
        t(1),
    )
}

#[test]
fn a_finished_run_never_changes() {
    for finish in [
        |r: &mut Run| r.complete("ok", json!(1), t(2)),
        |r: &mut Run| r.fail(Failure::new(FailureKind::Aborted, "stop"), t(2)),
    ] {
        let mut r = run();
        finish(&mut r).unwrap();
        let before = r.clone();
        assert!(matches!(
            r.enter(State::Explore, t(3)),
            Err(RunError::Finished { .. })
        ));
        assert!(
            r.add_evidence(EvidenceKind::note(NoteSource::Engine, "x"), t(3))
                .is_err()
        );
        assert!(r.complete("again", json!(2), t(3)).is_err());
        assert!(
            r.fail(Failure::new(FailureKind::Aborted, "x"), t(3))
                .is_err()
        );
        assert!(r.pause("q", vec![], t(3)).is_err());
        assert!(r.resume(t(3)).is_err());
        assert!(r.usage_mut().is_err());
        assert!(r.count_step(t(3)).is_err());
        assert_eq!(r, before);
    }
}

#[test]
fn terminal_states_only_through_complete_and_fail() {
    let mut r = run();
    assert_eq!(
        r.enter(State::Done, t(2)),
        Err(RunError::EnterTerminal { to: State::Done })
    );
    assert_eq!(r.enter(State::Explore, t(2)), Ok(State::Intake));
    r.complete("s", json!({"k": 1}), t(3)).unwrap();
    assert_eq!((r.state(), r.status()), (State::Done, RunStatus::Completed));
    assert_eq!(r.summary(), Some("s"));
}

#[test]
fn pause_needs_a_question_and_resume_needs_an_answer() {
    let mut r = run();
    assert_eq!(r.pause("  ", vec![], t(2)), Err(RunError::EmptyQuestion));
    assert!(matches!(
        r.pause("q", vec!["a".into(), "a".into()], t(2)),
        Err(RunError::InvalidOptions { .. })
    ));
    assert!(matches!(
        r.pause("q", vec![String::new()], t(2)),
        Err(RunError::InvalidOptions { .. })
    ));
    r.pause("Which?", vec!["a".into(), "b".into()], t(2))
        .unwrap();
    assert!(matches!(
        r.resume(t(3)),
        Err(RunError::AwaitingAnswer { .. })
    ));
    assert!(matches!(
        r.enter(State::Explore, t(3)),
        Err(RunError::NotRunning { .. })
    ));
    let err = r.answer("c", t(3)).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"answer "c" is not among the options offered: ["a", "b"]"#
    );
    r.answer("b", t(4)).unwrap();
    assert_eq!(r.status(), RunStatus::Running);
    assert!(r.pending_question().is_none());
    assert!(matches!(
        r.answer("b", t(5)),
        Err(RunError::NotPaused { .. })
    ));
    assert!(matches!(
        &r.evidence()[0].kind,
        EvidenceKind::HumanInput { question, answer } if question == "Which?" && answer == "b"
    ));
}

#[test]
fn open_questions_take_any_non_empty_answer() {
    let mut r = run();
    r.pause("Name?", vec![], t(2)).unwrap();
    assert_eq!(r.answer(" ", t(3)), Err(RunError::EmptyAnswer));
    r.answer("Ada", t(3)).unwrap();
}

#[test]
fn interrupt_then_resume() {
    let mut r = run();
    r.interrupt(t(2)).unwrap();
    assert_eq!(r.status(), RunStatus::Interrupted);
    assert!(r.enter(State::Explore, t(2)).is_err());
    r.resume(t(3)).unwrap();
    assert_eq!(r.status(), RunStatus::Running);
}

#[test]
fn inconsistent_snapshots_are_refused_on_load() {
    let mut v = serde_json::to_value(run()).unwrap();
    v["status"] = json!("completed");
    let err = serde_json::from_value::<Run>(v).unwrap_err();
    assert!(
        err.to_string()
            .contains("finished status needs its terminal state"),
        "{err}"
    );
    let mut v = serde_json::to_value(run()).unwrap();
    v["status"] = json!("paused");
    assert!(serde_json::from_value::<Run>(v).is_err());
    let mut v = serde_json::to_value(run()).unwrap();
    v["surprise"] = json!(1);
    assert!(serde_json::from_value::<Run>(v).is_err());
}

fn head(seq: u64) -> LedgerHead {
    LedgerHead::new(seq, crate::Digest::of_bytes(&seq.to_be_bytes()))
}

#[test]
fn the_anchor_only_moves_forward_and_changes_nothing_else() {
    let mut r = run();
    r.complete("ok", json!(1), t(2)).unwrap();
    let before = r.clone();
    r.anchor(head(3)).unwrap();
    r.anchor(head(3)).unwrap(); // the same head again: saved twice after one entry
    assert_eq!(r.ledger_head(), Some(head(3)));
    assert_eq!(r.updated_at(), before.updated_at());
    let err = r.anchor(head(2)).unwrap_err();
    assert!(matches!(err, RunError::AnchorBackwards { .. }), "{err}");
    let forked = LedgerHead::new(3, crate::Digest::ZERO);
    assert!(r.anchor(forked).is_err());
    assert_eq!(r.ledger_head(), Some(head(3)));
    r.anchor(head(9)).unwrap();
    assert_eq!(r.ledger_head(), Some(head(9)));
}

#[test]
fn snapshots_from_before_ledger_heads_still_load() {
    let mut v = serde_json::to_value(run()).unwrap();
    assert_eq!(v["ledger_head"], Value::Null);
    v.as_object_mut().unwrap().remove("ledger_head");
    let old = serde_json::from_value::<Run>(v).unwrap();
    assert_eq!(old, run());
    assert_eq!(old.ledger_head(), None);
}

#[test]
fn a_saved_head_round_trips_and_entry_zero_is_refused() {
    let mut r = run();
    r.anchor(head(4)).unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["ledger_head"]["seq"], 4);
    assert_eq!(serde_json::from_value::<Run>(v.clone()).unwrap(), r);
    let mut zero = v;
    zero["ledger_head"]["seq"] = json!(0);
    let err = serde_json::from_value::<Run>(zero).unwrap_err();
    assert!(err.to_string().contains("entries count from 1"), "{err}");
}

#[test]
fn time_never_goes_backwards() {
    let mut r = run();
    r.enter(State::Explore, t(10)).unwrap();
    r.enter(State::Decide, t(5)).unwrap();
    assert_eq!(r.updated_at(), t(10));
}

fn arb_run() -> impl Strategy<Value = Run> {
    (
        "[a-z]{1,8}",
        proptest::collection::vec(0u8..6, 0..12),
        any::<u64>(),
        proptest::option::of("[a-z ]{1,10}"),
        proptest::option::of(1u64..1000),
    )
        .prop_map(|(goal, ops, base, note, seq)| {
            let mut r = Run::new(
                RunId::new("id").unwrap(),
                goal,
                Map::new(),
                json!({"limits": {}}),
                t(0),
            );
            for (i, op) in ops.into_iter().enumerate() {
                let now = t(base % 1000 + i as u64);
                let _ = match op {
                    0 => r.enter(State::ALL[i % 5], now).map(|_| ()),
                    1 => r.add_evidence(
                        EvidenceKind::note(NoteSource::Steering, note.clone().unwrap_or_default()),
                        now,
                    ),
                    2 => r.pause("q?", vec!["y".into()], now),
                    3 => r.answer("y", now),
                    4 => r.usage_mut().map(|u| {
                        let res = u.reserve(&BudgetName::STEPS, 1, Some(5));
                        if let Ok(res) = res {
                            u.commit(res);
                        }
                    }),
                    _ => r.count_step(now).map(|_| ()),
                };
            }
            if let Some(seq) = seq {
                r.anchor(head(seq)).unwrap();
            }
            r
        })
}

proptest! {
    #[test]
    fn runs_round_trip_through_serde(r in arb_run()) {
        let json = serde_json::to_string(&r).unwrap();
        prop_assert_eq!(serde_json::from_str::<Run>(&json).unwrap(), r);
    }
}

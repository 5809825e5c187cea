//! Steering at the safe point: a `finish` proposed while a steering note the planner has
//! not seen waits is handed back once — a ledgered refusal naming the note — so the planner
//! decides with the note in view; a planner that takes no refusals back finishes as it
//! said, the note recorded.

mod support;

use std::sync::{Arc, Mutex};

use rein::ledger::{EntryKind, Violation};
use rein::policy::OnViolation;
use rein::run::{EvidenceKind, NoteSource};
use rein::{
    Decision, Engine, PlanRequest, Planner, PlannerError, RunControl, RunStatus, State, json,
};
use support::{kinds, violations};

/// Finishes from `decide`; the first time it does, a note is sent to its own run while it
/// decides (as a person would, just too late for this decision). Records the steering
/// notes each request showed.
#[derive(Default, Clone)]
struct LateNote {
    control: Arc<Mutex<Option<RunControl>>>,
    notes_seen: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Planner for LateNote {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        match request.state() {
            State::Intake => return Ok(Decision::transition(State::Explore, "look")),
            State::Explore => return Ok(Decision::transition(State::Decide, "answer")),
            _ => {}
        }
        let notes: Vec<String> = request
            .evidence()
            .iter()
            .filter_map(|e| match &e.kind {
                EvidenceKind::SystemNote {
                    source: NoteSource::Steering,
                    note,
                } => Some(note.clone()),
                _ => None,
            })
            .collect();
        let first = {
            let mut seen = self.notes_seen.lock().unwrap();
            seen.push(notes);
            seen.len() == 1
        };
        if first {
            // The test hands the planner its run's control right after starting the run.
            for _ in 0..10_000 {
                if let Some(control) = self.control.lock().unwrap().as_ref() {
                    control.steer("use metric units");
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        Ok(Decision::finish("answered", json!(42)))
    }

    fn corrects_itself(&self) -> bool {
        true
    }
}

async fn run_with(on_violation: Option<OnViolation>) -> (Engine, rein::Run, LateNote) {
    let planner = LateNote::default();
    let mut builder = Engine::builder().planner(planner.clone());
    if let Some(on_violation) = on_violation {
        builder = builder.on_violation(on_violation);
    }
    let engine = builder.build().expect("builds");
    let handle = engine.start("how far is it?").await.expect("starts");
    *planner.control.lock().unwrap() = Some(handle.control());
    let run = handle.await.expect("runs");
    (engine, run, planner)
}

#[tokio::test]
async fn a_finish_proposed_while_a_note_waits_unread_is_handed_back_once_naming_the_note() {
    let (engine, run, planner) = run_with(None).await;
    assert_eq!(run.status(), RunStatus::Completed, "{run:?}");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_eq!(
        violations(&ledger),
        [(Violation::SteeringUnread, true)],
        "{:?}",
        kinds(&ledger)
    );
    let refusal = ledger
        .entries()
        .iter()
        .find_map(|e| match e.event() {
            EntryKind::PolicyViolation { message, .. } => Some(message.clone()),
            _ => None,
        })
        .expect("a refusal");
    assert!(refusal.contains("use metric units"), "{refusal}");
    // The note is recorded before the refused decision; the second finish is accepted.
    let k = kinds(&ledger);
    let steering = k.iter().position(|n| *n == "steering").expect("steering");
    let violation = k
        .iter()
        .position(|n| *n == "policy_violation")
        .expect("violation");
    assert!(steering < violation, "{k:?}");
    assert_eq!(k.iter().filter(|n| **n == "decision").count(), 4, "{k:?}");
    // The planner decided twice in decide: without the note, then with it.
    let seen = planner.notes_seen.lock().unwrap().clone();
    assert_eq!(seen, [vec![], vec!["use metric units".to_owned()]]);
}

#[tokio::test]
async fn a_planner_that_takes_no_refusals_back_finishes_as_it_said_the_note_recorded() {
    let (engine, run, planner) = run_with(Some(OnViolation::FailRun)).await;
    assert_eq!(run.status(), RunStatus::Completed, "{run:?}");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert!(violations(&ledger).is_empty(), "{:?}", kinds(&ledger));
    assert_eq!(planner.notes_seen.lock().unwrap().len(), 1);
    assert_eq!(
        kinds(&ledger).iter().filter(|n| **n == "steering").count(),
        1
    );
}

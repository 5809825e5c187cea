//! `Recorder`: the one writer of a run. It owns the run's projection, its ledger and its
//! event sender; every change to the run is an entry it appends first and then applies.

use std::sync::Arc;

use rein_ledger::{EntryKind, Ledger};
use rein_policy::Budget;
use rein_run::{Failure, FailureKind, RunId, State};
use tokio::sync::broadcast;

use crate::error::EngineError;
use crate::events::RunEvent;
use crate::project::{Projection, ProjectionError};
use crate::shared::Shared;

/// Records one run's entries: applies each to the projection (which refuses what breaks the
/// run's rules, before anything is written), appends it to the ledger and its store, and
/// tells subscribers. Nothing else writes to the run.
pub(crate) struct Recorder {
    shared: Arc<Shared>,
    pub(crate) proj: Projection,
    pub(crate) ledger: Ledger,
    pub(crate) events: Option<broadcast::Sender<RunEvent>>,
}

impl Recorder {
    pub(crate) const fn new(
        shared: Arc<Shared>,
        proj: Projection,
        ledger: Ledger,
        events: Option<broadcast::Sender<RunEvent>>,
    ) -> Self {
        Self {
            shared,
            proj,
            ledger,
            events,
        }
    }

    /// Starts a new run: records its `run_started` entry (at the clock's time, in `intake`)
    /// and the projection it begins.
    pub(crate) async fn start(
        shared: Arc<Shared>,
        id: RunId,
        started: EntryKind,
        budget: Budget,
        events: Option<broadcast::Sender<RunEvent>>,
    ) -> Result<Self, EngineError> {
        let at = shared.clock.now();
        let proj = Projection::start(id.clone(), &started, at, budget).map_err(|source| {
            EngineError::InconsistentLedger {
                id: id.clone(),
                seq: 1,
                source: Box::new(source),
            }
        })?;
        let mut rec = Self::new(shared, proj, Ledger::new(id), events);
        let entry = rec.ledger.append(at, State::Intake, started);
        match rec.shared.ledgers.try_append_now_dyn(entry) {
            Some(appended) => appended?,
            None => rec.shared.ledgers.append_boxed(entry).await?,
        }
        if let Some(events) = &rec.events {
            let _ = events.send(RunEvent::Recorded(Arc::new(entry.clone())));
        }
        Ok(rec)
    }

    /// Records `kind`: applies it to the run (the aggregate refuses what breaks its rules —
    /// then nothing is written and the refusal comes back), appends it to the ledger and its
    /// store, and tells subscribers.
    pub(crate) async fn try_record(
        &mut self,
        kind: EntryKind,
    ) -> Result<Result<(), ProjectionError>, EngineError> {
        let at = self.shared.clock.now();
        let state = self.proj.state();
        if let Err(e) = self.proj.apply(&kind, at) {
            return Ok(Err(e));
        }
        let entry = self.ledger.append(at, state, kind);
        // A store that can append without waiting does so here: no future, no allocation.
        match self.shared.ledgers.try_append_now_dyn(entry) {
            Some(appended) => appended?,
            None => self.shared.ledgers.append_boxed(entry).await?,
        }
        if let Some(events) = &self.events
            && events.receiver_count() > 0
        {
            let _ = events.send(RunEvent::Recorded(Arc::new(entry.clone())));
        }
        Ok(Ok(()))
    }

    /// Records an entry the engine has already checked; one the run refuses is a bug.
    pub(crate) async fn record(&mut self, kind: EntryKind) -> Result<(), EngineError> {
        let name = kind.name();
        self.try_record(kind)
            .await?
            .map_err(|e| EngineError::InconsistentLedger {
                id: self.proj.run.id().clone(),
                seq: self.ledger.len() as u64 + 1,
                source: Box::new(ProjectionError::Refused {
                    kind: name,
                    source: Box::new(e),
                }),
            })
    }

    /// Records that the run failed.
    pub(crate) async fn fail(
        &mut self,
        kind: FailureKind,
        message: String,
    ) -> Result<(), EngineError> {
        self.record(EntryKind::RunFailed {
            failure: Failure::new(kind, message),
        })
        .await
    }

    /// Makes the ledger as durable as its store's fsync policy asks at a step boundary.
    pub(crate) async fn sync(&self) -> Result<(), EngineError> {
        self.shared.ledgers.sync_boxed(self.proj.run.id()).await?;
        Ok(())
    }

    /// Makes the ledger as durable as a step boundary requires, then saves the run's
    /// snapshot anchored to it ([`Recorder::save`]).
    pub(crate) async fn persist(&mut self) -> Result<(), EngineError> {
        self.sync().await?;
        self.save().await
    }

    /// Saves the run's snapshot, anchored to the ledger: records the ledger's head (the
    /// last entry appended) in the run, then saves it. Every snapshot the engine saves goes
    /// through here, after the entries it reflects were appended, so a ledger that is only
    /// ever appended to always reaches the head its snapshot names (`open::load_ledger`
    /// checks that it does).
    pub(crate) async fn save(&mut self) -> Result<(), EngineError> {
        if let Some(head) = self.ledger.head() {
            self.proj
                .run
                .anchor(head)
                .map_err(|e| EngineError::InconsistentLedger {
                    id: self.proj.run.id().clone(),
                    seq: head.seq,
                    source: Box::new(e.into()),
                })?;
        }
        self.shared.runs.save_boxed(&self.proj.run).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rein_planner::ScriptedPlanner;
    use rein_run::{Decision, RunId, State, Timestamp};
    use serde_json::Map;

    use super::*;
    use crate::builder::EngineBuilder;

    /// A recorder over a fresh run, its `run_started` in the ledger and the store.
    async fn recorder(events: Option<broadcast::Sender<RunEvent>>) -> Recorder {
        let shared = Arc::new(
            EngineBuilder::default()
                .planner(ScriptedPlanner::new([]))
                .into_shared()
                .expect("builds"),
        );
        let id: RunId = "r1".parse().expect("an id");
        let started = EntryKind::RunStarted {
            goal: "g".into(),
            vars: Map::new(),
            policy: Arc::clone(&shared.policy.value),
        };
        let at = Timestamp::from_unix_millis(1);
        let proj = Projection::start(
            id.clone(),
            &started,
            at,
            shared.policy.snapshot.budget.clone(),
        )
        .expect("starts");
        let mut ledger = Ledger::new(id);
        let entry = ledger.append(at, State::Intake, started);
        shared.ledgers.append_boxed(entry).await.expect("appended");
        Recorder::new(shared, proj, ledger, events)
    }

    async fn stored(rec: &Recorder) -> usize {
        let id = rec.proj.run.id();
        rec.shared
            .ledgers
            .load_boxed(id)
            .await
            .expect("loads")
            .ledger
            .len()
    }

    #[tokio::test]
    async fn an_entry_is_applied_appended_stored_and_told() {
        let (tx, mut rx) = broadcast::channel(4);
        let mut rec = recorder(Some(tx)).await;
        let decision = EntryKind::Decision {
            step: 0,
            decision: Decision::transition(State::Explore, "go"),
        };
        rec.record(decision.clone()).await.expect("recorded");
        assert_eq!(rec.proj.run.steps(), 1);
        assert_eq!(rec.ledger.len(), 2);
        assert_eq!(stored(&rec).await, 2);
        let Ok(RunEvent::Recorded(entry)) = rx.try_recv() else {
            panic!("no event");
        };
        assert_eq!(entry.event(), &decision);
    }

    #[tokio::test]
    async fn an_entry_the_run_refuses_is_written_nowhere() {
        let mut rec = recorder(None).await;
        let wrong_step = EntryKind::Decision {
            step: 7,
            decision: Decision::transition(State::Explore, "go"),
        };
        assert!(
            rec.try_record(wrong_step.clone())
                .await
                .expect("no store error")
                .is_err()
        );
        // The refusal is kept as a typed source, not flattened into text.
        let Err(EngineError::InconsistentLedger { seq: 2, source, .. }) =
            rec.record(wrong_step).await
        else {
            panic!("expected an inconsistent ledger");
        };
        let ProjectionError::Refused { kind, source } = *source else {
            panic!("expected a refused entry, got {source:?}");
        };
        assert_eq!(kind, "decision");
        assert!(matches!(
            *source,
            ProjectionError::StepMismatch { step: 7, at: 0 }
        ));
        assert_eq!((rec.ledger.len(), stored(&rec).await), (1, 1));
        assert_eq!(rec.proj.run.steps(), 0);
    }
}

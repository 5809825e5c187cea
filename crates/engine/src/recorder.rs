//! `Recorder`: the one writer of a run. It owns the run's projection and the end of its
//! ledger; every change to the run is an entry it appends first and then applies.
//!
//! The recorder keeps no copy of the entries it wrote: the ledger store keeps them (a memory
//! store shares each entry's line, a file store has it on disk), and the engine reads a
//! ledger back from the store when it opens a run. What it writes it hands back, so the
//! driver goes on with the values an entry recorded (a decision, a tool's input) without
//! copying them.

use std::sync::Arc;

use rein_ledger::{Chain, Entry, EntryKind};
use rein_policy::{Budget, Transitions};
use rein_run::{BoxFuture, Failure, FailureKind, RunId, RunStatus, State};
use rein_statemachine::{Lifecycle, Transition, TransitionError};
use tokio::sync::broadcast;

use crate::error::EngineError;
use crate::events::Published;
use crate::project::{Projection, ProjectionError};
use crate::shared::Shared;
use crate::writer::{LedgerWriter, Sealed};

/// Records one run's entries: applies each to the projection (which refuses what breaks the
/// run's rules, before anything is written), then writes it through the run's
/// [`LedgerWriter`]. Nothing else writes to the run.
///
/// It also holds the run's [`Lifecycle`], alive as long as the run is driven: every move
/// of the run's state goes through the machine first ([`Recorder::transition`],
/// [`Recorder::fail`]) and is recorded only once the machine made it, and after every entry
/// the machine's state is checked against the projection's: a drift is an inconsistent
/// ledger, never trusted.
pub(crate) struct Recorder {
    pub(crate) proj: Projection,
    pub(crate) log: LedgerWriter,
    lifecycle: Lifecycle,
}

impl Recorder {
    /// The recorder of a run whose projection is `proj` and whose lifecycle machine is
    /// `lifecycle` (new in `intake`, or rebuilt from the run's ledger: [`recorded_moves`]).
    pub(crate) const fn new(proj: Projection, log: LedgerWriter, lifecycle: Lifecycle) -> Self {
        Self {
            proj,
            log,
            lifecycle,
        }
    }

    /// Where the run is, as its lifecycle machine says.
    pub(crate) fn state(&self) -> State {
        self.lifecycle.state()
    }

    /// The run's id.
    pub(crate) const fn id(&self) -> &RunId {
        self.proj.run.id()
    }

    /// How many decisions the run has recorded: the number of the next step.
    pub(crate) const fn steps(&self) -> u32 {
        self.proj.run.steps()
    }

    /// Whether the run is running, paused, interrupted or ended.
    pub(crate) const fn status(&self) -> RunStatus {
        self.proj.run.status()
    }

    /// Asks the lifecycle machine to move the run to `to` (into `act` only while `guard`
    /// has budget left) and, when it moved, records the `transition` entry with `reason`.
    /// The state the run left, or the machine's refusal (nothing recorded).
    pub(crate) async fn transition(
        &mut self,
        to: State,
        reason: Arc<str>,
        guard: &Budget,
    ) -> Result<Result<State, TransitionError>, EngineError> {
        let moved = match self.lifecycle.transition(to, guard, self.proj.run.usage()) {
            Ok(moved) => moved,
            Err(refused) => return Ok(Err(refused)),
        };
        self.record(EntryKind::Transition {
            from: moved.from,
            to: moved.to,
            reason,
        })
        .await?;
        Ok(Ok(moved.from))
    }

    /// The machine's state against the projection's after an entry: they move together,
    /// except that a move into `done` or `failed` is recorded before the end it leads to
    /// (`run_completed`, `run_failed`), which the projection waits for.
    fn check_lifecycle(&self) -> Result<(), EngineError> {
        let (machine, recorded) = (self.lifecycle.state(), self.proj.state());
        if machine == recorded || (machine.is_terminal() && !recorded.is_terminal()) {
            return Ok(());
        }
        Err(self.drift(machine, recorded))
    }

    /// The error of a machine and a projection that disagree: a bug, kept out of line so
    /// that recording, which checks after every entry, stays small.
    #[cold]
    #[inline(never)]
    fn drift(&self, machine: State, recorded: State) -> EngineError {
        self.inconsistent(ProjectionError::LifecycleDrift { machine, recorded })
    }

    /// An inconsistency of the run with itself, at the next entry.
    fn inconsistent(&self, source: ProjectionError) -> EngineError {
        EngineError::InconsistentLedger {
            id: self.proj.run.id().clone(),
            seq: self.log.len() + 1,
            source: Box::new(source),
        }
    }

    /// Starts a new run: records its `run_started` entry (at the clock's time, in `intake`)
    /// and the projection it begins.
    pub(crate) async fn start(
        shared: Arc<Shared>,
        id: RunId,
        started: EntryKind,
        budget: Budget,
        transitions: Transitions,
        events: Option<broadcast::Sender<Published>>,
    ) -> Result<(Self, Entry), EngineError> {
        let at = shared.clock.now();
        let proj = Projection::start(id.clone(), &started, at, budget).map_err(|source| {
            EngineError::InconsistentLedger {
                id: id.clone(),
                seq: 1,
                source: Box::new(source),
            }
        })?;
        let mut log = LedgerWriter::new(shared, Chain::new(id), events);
        let entry = log.append(at, State::Intake, started).await?;
        let lifecycle = Lifecycle::new(State::Intake, transitions).map_err(|e| {
            EngineError::InconsistentLedger {
                id: proj.run.id().clone(),
                seq: 1,
                source: Box::new(ProjectionError::Lifecycle(e.into())),
            }
        })?;
        Ok((Self::new(proj, log, lifecycle), entry))
    }

    /// Records `kind`: applies it to the run (the aggregate refuses what breaks its rules —
    /// then nothing is written and the refusal comes back), appends it to the ledger and its
    /// store, tells subscribers, and hands the entry back.
    pub(crate) async fn try_record(
        &mut self,
        kind: EntryKind,
    ) -> Result<Result<Entry, ProjectionError>, EngineError> {
        let storing = match self.record_now(kind)? {
            Err(refused) => return Ok(Err(refused)),
            Ok(Sealed::Stored(entry)) => return Ok(Ok(entry)),
            Ok(Sealed::Waiting(entry)) => Box::pin(self.log.store(entry)),
        };
        storing.await.map(Ok)
    }

    /// Records an entry the engine has already checked; one the run refuses is a bug.
    pub(crate) async fn record(&mut self, kind: EntryKind) -> Result<(), EngineError> {
        let name = kind.name();
        let storing = match self.record_now(kind)? {
            Err(refused) => return Err(self.refused(name, refused)),
            Ok(Sealed::Stored(_)) => return Ok(()),
            Ok(Sealed::Waiting(entry)) => Box::pin(self.log.store(entry)),
        };
        storing.await.map(drop)
    }

    /// [`record`](Self::record), handing the entry back: what it recorded goes on without
    /// a copy.
    pub(crate) async fn record_entry(&mut self, kind: EntryKind) -> Result<Entry, EngineError> {
        let name = kind.name();
        let storing = match self.record_now(kind)? {
            Err(refused) => return Err(self.refused(name, refused)),
            Ok(Sealed::Stored(entry)) => return Ok(entry),
            Ok(Sealed::Waiting(entry)) => Box::pin(self.log.store(entry)),
        };
        storing.await
    }

    /// What recording does before it may have to wait for the store: applies `kind` to
    /// the run, seals it, and appends it if the store can now. The wait, when a store needs
    /// one, is boxed by the callers: awaited inline, it would make every `record` future
    /// (and so every future that records, up to the run's step) hold an entry and a store
    /// future, which are moved at every await.
    fn record_now(
        &mut self,
        kind: EntryKind,
    ) -> Result<Result<Sealed, ProjectionError>, EngineError> {
        let at = self.log.shared.clock.now();
        // The state the entry is recorded in: where the run was before it, which the
        // projection still says (the machine is already past a move being recorded).
        let state = self.proj.state();
        if let Err(e) = self.proj.apply(&kind, at) {
            return Ok(Err(e));
        }
        self.check_lifecycle()?;
        let sealed = self.log.seal(at, state, kind)?;
        let entry = sealed.entry();
        self.proj.sealed(entry.event(), entry.head());
        Ok(Ok(sealed))
    }

    /// The error of an entry the engine checked and the run refused anyway.
    fn refused(&self, kind: &'static str, source: ProjectionError) -> EngineError {
        self.inconsistent(ProjectionError::Refused {
            kind,
            source: Box::new(source),
        })
    }

    /// Records that the run failed: its lifecycle machine ends in `failed` first (from any
    /// working state, whatever the table says).
    pub(crate) fn fail(
        &mut self,
        kind: FailureKind,
        message: String,
    ) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            // A run already in `failed` (a planner gave up) stays there.
            if self.lifecycle.state() != State::Failed
                && let Err(refused) = self.lifecycle.fail()
            {
                return Err(self.inconsistent(ProjectionError::Lifecycle(refused.into())));
            }
            self.record(EntryKind::RunFailed {
                failure: Failure::new(kind, message),
            })
            .await
        })
    }

    /// Makes the ledger as durable as its store's fsync policy asks at a step boundary.
    pub(crate) async fn sync(&self) -> Result<(), EngineError> {
        self.log
            .shared
            .ledgers
            .sync_boxed(self.proj.run.id())
            .await?;
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
    /// ever appended to always reaches the head its snapshot names (`crate::load::load_ledger`
    /// checks that it does).
    pub(crate) async fn save(&mut self) -> Result<(), EngineError> {
        if let Some(head) = self.log.head() {
            self.proj
                .run
                .anchor(head)
                .map_err(|e| EngineError::InconsistentLedger {
                    id: self.proj.run.id().clone(),
                    seq: head.seq,
                    source: Box::new(e.into()),
                })?;
        }
        self.log.shared.runs.save_boxed(&self.proj.run).await?;
        Ok(())
    }
}

/// The moves of the run's state `entries` record, in order, for [`Lifecycle::rebuild`]:
/// each `transition`, and the end a `run_failed` makes from a working state (the engine
/// fails a run without a `transition` entry).
pub(crate) fn recorded_moves(entries: &[Entry]) -> Vec<Transition> {
    let mut moves = Vec::new();
    let mut state = State::Intake;
    for entry in entries {
        let to = match entry.event() {
            EntryKind::Transition { to, .. } => *to,
            EntryKind::RunFailed { .. } if !state.is_terminal() => State::Failed,
            _ => continue,
        };
        let from = match entry.event() {
            EntryKind::Transition { from, .. } => *from,
            _ => state,
        };
        moves.push(Transition { from, to });
        state = to;
    }
    moves
}

#[cfg(test)]
mod tests {
    use rein_planner::ScriptedPlanner;
    use rein_run::{Decision, RunId, State, Timestamp};
    use serde_json::Map;

    use super::*;
    use crate::builder::EngineBuilder;

    /// A recorder over a fresh run, its `run_started` in the ledger and the store.
    async fn recorder(events: Option<broadcast::Sender<Published>>) -> Recorder {
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
        let lifecycle = Lifecycle::new(State::Intake, shared.policy.snapshot.transitions)
            .expect("intake is no terminal state");
        let mut log = LedgerWriter::new(shared, Chain::new(id), events);
        log.append(at, State::Intake, started)
            .await
            .expect("appended");
        Recorder::new(proj, log, lifecycle)
    }

    async fn stored(rec: &Recorder) -> usize {
        let id = rec.proj.run.id();
        rec.log
            .shared
            .ledgers
            .load_boxed(id)
            .await
            .expect("loads")
            .ledger
            .len()
    }

    #[tokio::test]
    async fn an_entry_is_applied_appended_stored_and_told() {
        let (tx, rx) = broadcast::channel(8);
        let mut rec = recorder(Some(tx)).await;
        let decision = EntryKind::Decision {
            step: 0,
            decision: Decision::transition(State::Explore, "go"),
        };
        rec.record(decision.clone()).await.expect("recorded");
        assert_eq!(rec.proj.run.steps(), 1);
        assert_eq!(rec.log.len(), 2);
        assert_eq!(stored(&rec).await, 2);
        // The channel closes with the recorder: every entry it told, then the end.
        drop(rec);
        let mut events = crate::events::RunEvents::new(rx);
        let mut told = Vec::new();
        while let Some(event) = events.next().await {
            if let crate::events::RunEvent::Recorded(entry) = event {
                told.push(entry);
            }
        }
        let kinds: Vec<&EntryKind> = told.iter().map(|e| e.event()).collect();
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        assert_eq!(kinds[0].name(), "run_started");
        assert_eq!(kinds[1], &decision);
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
        assert_eq!((rec.log.len(), stored(&rec).await), (1, 1));
        assert_eq!(rec.proj.run.steps(), 0);
    }

    #[tokio::test]
    async fn a_move_goes_through_the_machine_and_then_on_record() {
        let mut rec = recorder(None).await;
        let moved = rec
            .transition(State::Explore, "go".into(), &Budget::new())
            .await
            .expect("recorded");
        assert_eq!(moved, Ok(State::Intake));
        assert_eq!(
            (rec.state(), rec.proj.state()),
            (State::Explore, State::Explore)
        );
        // A move the table does not have is refused by the machine: nothing is recorded.
        let refused = rec
            .transition(State::Act, "skip".into(), &Budget::new())
            .await
            .expect("no store error");
        assert!(refused.is_err());
        assert_eq!((rec.state(), rec.log.len()), (State::Explore, 2));
        // Into `done`: the machine is there first, the run once its end is recorded.
        rec.transition(State::Decide, "d".into(), &Budget::new())
            .await
            .expect("recorded")
            .expect("moved");
        rec.transition(State::Done, "ok".into(), &Budget::new())
            .await
            .expect("recorded")
            .expect("moved");
        assert_eq!(
            (rec.state(), rec.proj.state()),
            (State::Done, State::Decide)
        );
        rec.record(EntryKind::RunCompleted {
            summary: "ok".into(),
            result: serde_json::Value::Null,
        })
        .await
        .expect("recorded");
        assert_eq!(rec.proj.state(), State::Done);
    }

    #[tokio::test]
    async fn a_failure_ends_the_machine_whatever_the_table() {
        let mut rec = recorder(None).await;
        rec.fail(FailureKind::Aborted, "stop".into())
            .await
            .expect("recorded");
        assert_eq!(
            (rec.state(), rec.proj.state()),
            (State::Failed, State::Failed)
        );
    }

    #[tokio::test]
    async fn a_move_recorded_around_the_machine_is_a_drift_never_trusted() {
        let mut rec = recorder(None).await;
        let around = EntryKind::Transition {
            from: State::Intake,
            to: State::Explore,
            reason: "not asked".into(),
        };
        let Err(EngineError::InconsistentLedger { source, .. }) = rec.record(around).await else {
            panic!("a drift is an inconsistent ledger");
        };
        assert!(
            matches!(
                *source,
                ProjectionError::LifecycleDrift {
                    machine: State::Intake,
                    recorded: State::Explore,
                }
            ),
            "{source:?}"
        );
        assert_eq!((rec.log.len(), stored(&rec).await), (1, 1));
    }

    #[test]
    fn the_moves_a_ledger_records_rebuild_the_machine() {
        let mut ledger = rein_ledger::Ledger::new("r1".parse().expect("an id"));
        let at = Timestamp::from_unix_millis(1);
        for (state, kind) in [
            (
                State::Intake,
                EntryKind::Transition {
                    from: State::Intake,
                    to: State::Explore,
                    reason: "go".into(),
                },
            ),
            (State::Explore, EntryKind::Steering { note: "n".into() }),
            (
                State::Explore,
                EntryKind::RunFailed {
                    failure: Failure::new(FailureKind::Aborted, "stop"),
                },
            ),
        ] {
            ledger.append(at, state, kind);
        }
        let moves = recorded_moves(ledger.entries());
        assert_eq!(
            moves,
            [
                Transition {
                    from: State::Intake,
                    to: State::Explore
                },
                Transition {
                    from: State::Explore,
                    to: State::Failed
                },
            ]
        );
        let lifecycle =
            Lifecycle::rebuild(moves, rein_policy::Transitions::default()).expect("rebuilt");
        assert_eq!(lifecycle.state(), State::Failed);
    }
}

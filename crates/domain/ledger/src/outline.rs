//! `RunOutline`: what a ledger says about its run — goal, path through the states,
//! decisions, status and outcome — read in one pass. The one reading of a ledger's story for
//! every reader that is not the engine's full projection (replay's comparison, the CLI's run
//! lists and `inspect`).

use rein_run::{Failure, RunStatus, State};
use serde_json::Value;

use crate::{Entry, EntryKind, Ledger};

/// A run as its ledger tells it.
///
/// ```
/// use rein_ledger::{EntryKind, Ledger, RunOutline};
/// use rein_run::{RunStatus, State, Timestamp};
/// use serde_json::json;
///
/// let t = Timestamp::from_unix_millis(0);
/// let mut ledger = Ledger::new("run-1".parse()?);
/// ledger.append(t, State::Intake, EntryKind::RunStarted { goal: "Say hi".into(), vars: Default::default(), policy: json!({}).into() });
/// ledger.append(t, State::Intake, EntryKind::Transition { from: State::Intake, to: State::Done, reason: "said".into() });
/// ledger.append(t, State::Done, EntryKind::RunCompleted { summary: "said".into(), result: json!("hi") });
///
/// let outline = ledger.outline();
/// assert_eq!(outline.goal, "Say hi");
/// assert_eq!(outline.states, [State::Intake, State::Done]);
/// assert_eq!((outline.status, outline.state()), (RunStatus::Completed, State::Done));
/// assert_eq!(outline.result, Some(json!("hi")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunOutline {
    /// The goal it was started with.
    pub goal: String,
    /// Every state entered, starting with `intake` (a run that ends without a transition,
    /// such as one failed by a budget, ends with its terminal state all the same).
    pub states: Vec<State>,
    /// How many decisions were taken.
    pub decisions: u32,
    /// The status the last entry leaves it in.
    pub status: RunStatus,
    /// The result, if it completed.
    pub result: Option<Value>,
    /// The failure, if it failed.
    pub failure: Option<Failure>,
}

impl RunOutline {
    /// Reads `entries`, oldest first.
    #[must_use]
    pub fn of(entries: &[Entry]) -> Self {
        let mut outline = Self {
            goal: String::new(),
            states: vec![State::Intake],
            decisions: 0,
            status: RunStatus::Running,
            result: None,
            failure: None,
        };
        for entry in entries {
            outline.apply(entry.event());
        }
        outline
    }

    /// The state the run is in.
    #[must_use]
    pub fn state(&self) -> State {
        self.states.last().copied().unwrap_or(State::Intake)
    }

    fn apply(&mut self, event: &EntryKind) {
        match event {
            EntryKind::RunStarted { goal, .. } => self.goal.clone_from(goal),
            EntryKind::Decision { .. } => self.decisions += 1,
            EntryKind::Transition { to, .. } => self.states.push(*to),
            EntryKind::RunCompleted { result, .. } => {
                self.status = RunStatus::Completed;
                self.enter(State::Done);
                self.result = Some(result.clone());
            }
            EntryKind::RunFailed { failure } => {
                self.status = RunStatus::Failed;
                self.enter(State::Failed);
                self.failure = Some(failure.clone());
            }
            EntryKind::RunPaused { .. } | EntryKind::ApprovalPending { .. } => {
                self.status = RunStatus::Paused;
            }
            // A verdict on a durable approval ends its pause.
            EntryKind::ApprovalGranted { .. } | EntryKind::ApprovalDenied { .. }
                if self.status == RunStatus::Paused =>
            {
                self.status = RunStatus::Running;
            }
            EntryKind::RunInterrupted { .. } => self.status = RunStatus::Interrupted,
            EntryKind::RunResumed { .. } | EntryKind::HumanInputReceived { .. } => {
                self.status = RunStatus::Running;
            }
            _ => {}
        }
    }

    /// Enters a terminal state the ledger did not record a transition to.
    fn enter(&mut self, state: State) {
        if self.state() != state {
            self.states.push(state);
        }
    }
}

impl Ledger {
    /// What this ledger says about its run.
    #[must_use]
    pub fn outline(&self) -> RunOutline {
        RunOutline::of(self.entries())
    }
}

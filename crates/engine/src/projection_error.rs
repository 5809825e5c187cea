//! `ProjectionError`: why a ledger entry does not fit the run its earlier entries describe,
//! and `LifecycleFault`, what the run's lifecycle machine refused (the engine wraps both in
//! `EngineError::InconsistentLedger`).

use rein_policy::BudgetExhausted;
use rein_run::{RunError, RunId, State};

/// What the lifecycle machine of a run refused (see [`ProjectionError::Lifecycle`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleFault {
    /// It could not be started or rebuilt.
    #[error(transparent)]
    Start(#[from] rein_statemachine::LifecycleError),
    /// It refused a move the engine had to make.
    #[error(transparent)]
    Move(#[from] rein_statemachine::TransitionError),
}

/// Why a ledger entry does not fit the run its earlier entries describe.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// The ledger holds no entry.
    #[error("the ledger is empty")]
    Empty,
    /// The first entry is not `run_started`.
    #[error("a ledger starts with run_started, not {kind}")]
    NotStarted {
        /// The first entry's kind.
        kind: &'static str,
    },
    /// A second `run_started`.
    #[error("run_started appears twice")]
    StartedTwice,
    /// The entry names another state than the one the run is in.
    #[error(
        "the entry says the run was in {recorded}, but the entries before put it in {replayed}"
    )]
    StateMismatch {
        /// The state the entry names.
        recorded: State,
        /// The state the entries before it lead to.
        replayed: State,
    },
    /// A decision for another step than the run's.
    #[error("decision for step {step}, but the run is at step {at}")]
    StepMismatch {
        /// The decision's step.
        step: u32,
        /// The run's step.
        at: u32,
    },
    /// A transition from another state than the run's.
    #[error("transition from {from}, but the run is in {state}")]
    TransitionFrom {
        /// Where the entry says the run was.
        from: State,
        /// Where it is.
        state: State,
    },
    /// An entry kind this engine does not know.
    #[error("entry kind {kind} is not known to this engine")]
    UnknownKind {
        /// The kind.
        kind: &'static str,
    },
    /// A `policy_narrowed` entry whose policy cannot be read.
    #[error("the narrowed policy is unreadable: {0}")]
    NarrowedPolicy(#[source] std::sync::Arc<serde_json::Error>),
    /// A charge the recorded budget does not allow.
    #[error(transparent)]
    Budget(#[from] BudgetExhausted),
    /// The run refused the entry (it breaks the run's own rules).
    #[error(transparent)]
    Run(#[from] RunError),
    /// An attempt to recover has no input: it was not read back from the run's ledger.
    #[error("the tool call to recover has no input: it was not read back from the ledger")]
    CallInputMissing,
    /// The step the ledger shows interrupted does not start with its decision.
    #[error("the interrupted step's decision is not at the entry the ledger's replay pointed to")]
    DecisionMissing,
    /// The run is driven while in a terminal state, which has no way out.
    #[error("the run is in {state}, a terminal state, and cannot move")]
    Terminal {
        /// The state.
        state: State,
    },
    /// The run's lifecycle machine and its projection disagree on where the run is: the
    /// engine recorded a move the machine did not make, or the other way round.
    #[error(
        "the lifecycle machine is in {machine} but the recorded run is in {recorded}; the engine \
         moved one without the other, which is a bug in rein-engine"
    )]
    LifecycleDrift {
        /// Where the machine is.
        machine: State,
        /// Where the projection of the ledger puts the run.
        recorded: State,
    },
    /// The run's lifecycle machine could not be started, rebuilt from the ledger's moves,
    /// or moved to end the run.
    #[error("the run's lifecycle machine: {0}")]
    Lifecycle(#[source] LifecycleFault),
    /// An entry the engine checked was refused by the run: a bug in the engine.
    #[error("{kind}: {source}")]
    Refused {
        /// The entry's kind.
        kind: &'static str,
        /// Why.
        #[source]
        source: Box<ProjectionError>,
    },
    /// A `child_started` while another child is open, or a `child_ended` for a child that
    /// is not the open one.
    #[error("the entry names child run {entry}, but the open child is {}", open.as_ref().map_or_else(|| "none".to_owned(), ToString::to_string))]
    ChildMismatch {
        /// The child the run has open, if any.
        open: Option<RunId>,
        /// The child the entry names.
        entry: RunId,
    },
}

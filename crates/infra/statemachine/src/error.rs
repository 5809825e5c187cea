//! The errors of this crate: starting a lifecycle, and asking it to move.

use rein_policy::TransitionRefused;
use rein_run::State;

/// Why a [`Lifecycle`](crate::Lifecycle) could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LifecycleError {
    /// The start state is terminal: a run that has ended cannot be resumed.
    #[error(
        "cannot start a lifecycle in {state}: the run has ended and a terminal state has no way out; only runs in intake, explore, decide, act or validate can be resumed"
    )]
    TerminalStart {
        /// The terminal state asked for.
        state: State,
    },
    /// A recorded move cannot be followed when rebuilding a lifecycle: it does not start
    /// where the move before it ended, or it leaves a terminal state.
    #[error(
        "recorded move {index} ({from} → {to}) cannot be followed from {state}: the record of the run's states is broken"
    )]
    Unfollowable {
        /// The move's place among the moves, from 0.
        index: usize,
        /// Where the recorded move starts.
        from: State,
        /// Where it ends.
        to: State,
        /// Where the lifecycle was when it met the move.
        state: State,
    },
}

/// Why a [`Lifecycle::transition`](crate::Lifecycle::transition) did not happen. The
/// lifecycle is still where it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransitionError {
    /// A rule refused the move: the run is in a terminal state, the transition table has no
    /// such edge, or a budget is exhausted and the move was into `act`.
    #[error(transparent)]
    Refused(#[from] TransitionRefused),
    /// The state machine gave no answer to the request. The machine as written always
    /// answers; this variant exists so that a request statig swallowed could never pass for
    /// an accepted one.
    #[error(
        "transition {from} → {to} got no answer from the state machine and did not happen; this is a bug in rein-statemachine, please report it"
    )]
    Unanswered {
        /// The state the lifecycle is in.
        from: State,
        /// The state asked for.
        to: State,
    },
}

impl TransitionError {
    /// The refusal, with from, to and the rule, when a rule refused the move.
    #[must_use]
    pub const fn refusal(&self) -> Option<&TransitionRefused> {
        match self {
            Self::Refused(refused) => Some(refused),
            Self::Unanswered { .. } => None,
        }
    }
}

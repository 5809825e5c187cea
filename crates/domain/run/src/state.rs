//! `State` and `RunStatus`: where a run is in its lifecycle, and whether it is moving.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The seven states of a run's lifecycle.
///
/// `intake → explore → decide → act → validate` are the working states; `done` and `failed`
/// are terminal. Only `act` allows side effects. Which moves are allowed is the transition
/// policy's business (`rein-policy`); that nothing leaves a terminal state is this crate's.
///
/// ```
/// use rein_run::State;
/// assert!(State::Act.allows_side_effects());
/// assert!(State::Done.is_terminal());
/// assert_eq!("validate".parse::<State>()?, State::Validate);
/// assert_eq!(State::Explore.to_string(), "explore");
/// # Ok::<(), rein_run::UnknownState>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Understanding the goal; no tools run here by default.
    Intake,
    /// Gathering information with read-only tools.
    Explore,
    /// Choosing what to do; no tools run here by default.
    Decide,
    /// Doing it: the only state where side-effecting tools may run.
    Act,
    /// Checking the outcome with read-only tools.
    Validate,
    /// Finished successfully (terminal).
    Done,
    /// Finished unsuccessfully (terminal).
    Failed,
}

/// A state name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown state {0:?}; expected one of intake, explore, decide, act, validate, done, failed"
)]
pub struct UnknownState(pub String);

impl State {
    /// Every state, in lifecycle order.
    pub const ALL: [Self; 7] = [
        Self::Intake,
        Self::Explore,
        Self::Decide,
        Self::Act,
        Self::Validate,
        Self::Done,
        Self::Failed,
    ];

    /// Whether the run has ended in this state.
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Done | Self::Failed)
    }

    /// Whether tools that are not read-only may run in this state (only `act`).
    #[must_use]
    pub const fn allows_side_effects(self) -> bool {
        matches!(self, Self::Act)
    }

    /// The state's lowercase name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Intake => "intake",
            Self::Explore => "explore",
            Self::Decide => "decide",
            Self::Act => "act",
            Self::Validate => "validate",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    /// The state's position in [`State::ALL`] (0 to 6), for table lookups.
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownState(s.chars().take(64).collect()))
    }
}

/// Whether a run is moving, waiting or over.
///
/// ```
/// use rein_run::RunStatus;
/// assert!(RunStatus::Completed.is_terminal());
/// assert!(!RunStatus::Paused.is_terminal());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Being driven (or was, when the process stopped: `resume` picks it up).
    Running,
    /// Waiting for a human's answer to its pending question.
    Paused,
    /// Stopped gracefully by an interrupt; `resume` continues it.
    Interrupted,
    /// Ended in `done`.
    Completed,
    /// Ended in `failed`.
    Failed,
}

impl RunStatus {
    /// Whether the run is over.
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }

    /// The status's lowercase name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Interrupted => "interrupted",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_display_fromstr_and_serde() {
        for state in State::ALL {
            assert_eq!(state.to_string().parse::<State>().unwrap(), state);
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{state}\""));
            assert_eq!(serde_json::from_str::<State>(&json).unwrap(), state);
            assert_eq!(State::ALL[state.index()], state);
        }
    }

    #[test]
    fn only_act_allows_side_effects_and_only_done_failed_are_terminal() {
        let side: Vec<_> = State::ALL
            .into_iter()
            .filter(|s| s.allows_side_effects())
            .collect();
        assert_eq!(side, [State::Act]);
        let terminal: Vec<_> = State::ALL.into_iter().filter(|s| s.is_terminal()).collect();
        assert_eq!(terminal, [State::Done, State::Failed]);
    }

    #[test]
    fn unknown_state_lists_the_allowed_names() {
        let err = "finished".parse::<State>().unwrap_err();
        assert!(err.to_string().contains("\"finished\""));
        assert!(err.to_string().contains("intake, explore"));
    }
}

//! `OnViolation` and `OnToolError`: whether a run hands rejected decisions and failed tool
//! calls back to its planner, part of its policy.

use serde::{Deserialize, Serialize};

/// What a run does with a decision a policy rejected. It is part of the run's
/// [`PolicySnapshot`](crate::PolicySnapshot): recorded when the run starts, so a restart on
/// an engine configured otherwise keeps the run's own (a restart cannot widen a run).
///
/// ```
/// use rein_policy::OnViolation;
/// assert_eq!(OnViolation::default(), OnViolation::FailRun);
/// let back: OnViolation = serde_json::from_str(r#"{"hand_back": {"limit": 2}}"#)?;
/// assert_eq!(back, OnViolation::HandBack { limit: 2 });
/// assert!(OnViolation::FailRun.is_within(&back) && !back.is_within(&OnViolation::FailRun));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum OnViolation {
    /// Fail the run with the rejection (the default: governed means fail closed).
    #[default]
    FailRun,
    /// Hand the rejection back to the planner as evidence so it can correct itself, at most
    /// `limit` times per run (the `violations` budget); the next one fails the run.
    HandBack {
        /// How many rejections a run may hand back.
        limit: u64,
    },
}

impl OnViolation {
    /// Whether `self` hands back no more rejections than `wider` does.
    #[must_use]
    pub const fn is_within(&self, wider: &Self) -> bool {
        match (self, wider) {
            (Self::FailRun, _) => true,
            (Self::HandBack { .. }, Self::FailRun) => false,
            (Self::HandBack { limit }, Self::HandBack { limit: wider }) => *limit <= *wider,
        }
    }

    /// Whether this is the default, [`OnViolation::FailRun`].
    #[must_use]
    pub const fn is_fail_run(&self) -> bool {
        matches!(self, Self::FailRun)
    }
}

/// What a run does with a tool call that failed after the resilience stack gave up. Like
/// [`OnViolation`], it is part of the run's [`PolicySnapshot`](crate::PolicySnapshot):
/// recorded when the run starts, kept on resume.
///
/// ```
/// use rein_policy::OnToolError;
/// assert_eq!(OnToolError::default(), OnToolError::FailRun);
/// let back: OnToolError = serde_json::from_str(r#""hand_back""#)?;
/// assert_eq!(back, OnToolError::HandBack);
/// assert!(OnToolError::FailRun.is_within(&back) && !back.is_within(&OnToolError::FailRun));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnToolError {
    /// Fail the run with the tool's error (the default for planners that do not correct
    /// themselves).
    #[default]
    FailRun,
    /// Record the failure as evidence and ask the planner what to do next.
    HandBack,
}

impl OnToolError {
    /// Whether `self` lets a run go on after a failed call no more often than `wider`.
    #[must_use]
    pub const fn is_within(&self, wider: &Self) -> bool {
        matches!(
            (self, wider),
            (Self::FailRun, _) | (Self::HandBack, Self::HandBack)
        )
    }

    /// Whether this is the default, [`OnToolError::FailRun`].
    #[must_use]
    pub const fn is_fail_run(&self) -> bool {
        matches!(self, Self::FailRun)
    }
}

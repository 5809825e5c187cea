//! `Annotations`: what a tool does to the world, which decides where and how it may run.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How much harm a wrong call of a tool could do. Ordered: `Low < Medium < High < Critical`.
///
/// ```
/// use rein_tool::RiskLevel;
/// assert!(RiskLevel::High > RiskLevel::Medium);
/// assert_eq!("critical".parse::<RiskLevel>()?, RiskLevel::Critical);
/// # Ok::<(), rein_tool::AnnotationsError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskLevel {
    /// Harmless when wrong (reads, pure computation).
    Low,
    /// Recoverable side effects.
    Medium,
    /// Side effects that are hard to undo.
    High,
    /// Side effects that cannot be undone or reach outside the system.
    Critical,
}

impl RiskLevel {
    /// Every level, lowest first.
    pub const ALL: [Self; 4] = [Self::Low, Self::Medium, Self::High, Self::Critical];

    /// The level's lowercase name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
}

impl fmt::Display for RiskLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RiskLevel {
    type Err = AnnotationsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|level| level.as_str() == s)
            .ok_or_else(|| AnnotationsError::UnknownRiskLevel(s.to_owned()))
    }
}

/// What a tool does to the world. Built from one of three named constructors, then refined:
///
/// | constructor | read-only | destructive | idempotent | risk |
/// |---|---|---|---|---|
/// | [`Annotations::read_only`] | yes | no | yes | low |
/// | [`Annotations::side_effecting`] | no | no | no | medium |
/// | [`Annotations::destructive`] | no | yes | no | high |
///
/// A tool that is not read-only runs only in the `act` state; retries are only ever made for
/// idempotent tools; caching only ever applies to read-only tools.
///
/// ```
/// use std::time::Duration;
/// use rein_tool::{Annotations, RiskLevel};
///
/// let deploy = Annotations::side_effecting()
///     .with_idempotent(true)
///     .with_risk(RiskLevel::Critical)
///     .with_timeout(Duration::from_secs(30));
/// assert!(!deploy.is_read_only());
/// assert!(deploy.is_idempotent());
/// assert_eq!(deploy.timeout(), Some(Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "AnnotationsRepr", into = "AnnotationsRepr")]
pub struct Annotations {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    cacheable: bool,
    risk_level: RiskLevel,
    requires_approval: bool,
    timeout: Option<Duration>,
}

/// Why a set of annotations or a risk level was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotationsError {
    /// `read_only` and `destructive` were both set.
    #[error("a tool cannot be both read_only and destructive; drop one of the two")]
    ReadOnlyAndDestructive,
    /// `cacheable` was set on a tool that is not read-only.
    #[error("only read_only tools can be cacheable: caching a side effect would skip it")]
    CacheableWithSideEffects,
    /// A risk level name that does not exist.
    #[error("unknown risk level {0:?}; expected one of low, medium, high, critical")]
    UnknownRiskLevel(String),
}

impl Annotations {
    /// A tool that only reads: runs in `explore`, `act` and `validate` by default, is
    /// idempotent (safe to retry) and low risk.
    #[must_use]
    pub const fn read_only() -> Self {
        Self {
            read_only: true,
            destructive: false,
            idempotent: true,
            cacheable: false,
            risk_level: RiskLevel::Low,
            requires_approval: false,
            timeout: None,
        }
    }

    /// A tool with side effects that can be undone (creating a draft, sending to a queue):
    /// runs only in `act`, not retried unless marked idempotent, medium risk.
    #[must_use]
    pub const fn side_effecting() -> Self {
        Self {
            read_only: false,
            destructive: false,
            idempotent: false,
            cacheable: false,
            risk_level: RiskLevel::Medium,
            requires_approval: false,
            timeout: None,
        }
    }

    /// A tool whose side effects destroy or overwrite (deleting, overwriting a file):
    /// runs only in `act`, needs approval under the default approval policy, high risk.
    #[must_use]
    pub const fn destructive() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            cacheable: false,
            risk_level: RiskLevel::High,
            requires_approval: false,
            timeout: None,
        }
    }

    /// Marks whether calling the tool twice with the same input has the effect of calling it
    /// once. Only idempotent tools are retried, and only they are re-run when a crash leaves
    /// a call in doubt.
    #[must_use]
    pub const fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Marks whether results may be served from a cache for the same input. Has an effect on
    /// read-only tools only (see [`Annotations::is_cacheable`]).
    #[must_use]
    pub const fn with_cacheable(mut self, cacheable: bool) -> Self {
        self.cacheable = cacheable;
        self
    }

    /// Sets the risk level (approval policies may require approval above a level).
    #[must_use]
    pub const fn with_risk(mut self, risk_level: RiskLevel) -> Self {
        self.risk_level = risk_level;
        self
    }

    /// Requires approval for every call, whatever the approval policy says.
    #[must_use]
    pub const fn with_approval_required(mut self) -> Self {
        self.requires_approval = true;
        self
    }

    /// Sets this tool's timeout per call, overriding the engine's default.
    #[must_use]
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether the tool only reads.
    #[must_use]
    pub const fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the tool destroys or overwrites.
    #[must_use]
    pub const fn is_destructive(&self) -> bool {
        self.destructive
    }

    /// Whether repeating a call with the same input is harmless.
    #[must_use]
    pub const fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// Whether results may be cached: set with [`Annotations::with_cacheable`] *and* read-only.
    #[must_use]
    pub const fn is_cacheable(&self) -> bool {
        self.cacheable && self.read_only
    }

    /// The tool's risk level.
    #[must_use]
    pub const fn risk_level(&self) -> RiskLevel {
        self.risk_level
    }

    /// Whether every call needs approval regardless of policy.
    #[must_use]
    pub const fn requires_approval(&self) -> bool {
        self.requires_approval
    }

    /// The tool's own timeout per call, if it has one.
    #[must_use]
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

impl Default for Annotations {
    /// The cautious default for a tool nobody described: side-effecting, not idempotent.
    fn default() -> Self {
        Self::side_effecting()
    }
}

/// The persisted form: every flag spelled out, durations in milliseconds.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnnotationsRepr {
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    destructive: bool,
    #[serde(default)]
    idempotent: bool,
    #[serde(default)]
    cacheable: bool,
    #[serde(default = "medium")]
    risk_level: RiskLevel,
    #[serde(default)]
    requires_approval: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
}

fn medium() -> RiskLevel {
    RiskLevel::Medium
}

impl TryFrom<AnnotationsRepr> for Annotations {
    type Error = AnnotationsError;
    fn try_from(r: AnnotationsRepr) -> Result<Self, Self::Error> {
        if r.read_only && r.destructive {
            return Err(AnnotationsError::ReadOnlyAndDestructive);
        }
        if r.cacheable && !r.read_only {
            return Err(AnnotationsError::CacheableWithSideEffects);
        }
        Ok(Self {
            read_only: r.read_only,
            destructive: r.destructive,
            idempotent: r.idempotent,
            cacheable: r.cacheable,
            risk_level: r.risk_level,
            requires_approval: r.requires_approval,
            timeout: r.timeout_ms.map(Duration::from_millis),
        })
    }
}

impl From<Annotations> for AnnotationsRepr {
    fn from(a: Annotations) -> Self {
        Self {
            read_only: a.read_only,
            destructive: a.destructive,
            idempotent: a.idempotent,
            cacheable: a.cacheable && a.read_only,
            risk_level: a.risk_level,
            requires_approval: a.requires_approval,
            timeout_ms: a
                .timeout
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_say_what_they_mean() {
        let r = Annotations::read_only();
        assert!(r.is_read_only() && r.is_idempotent() && !r.is_destructive());
        let d = Annotations::destructive();
        assert!(!d.is_read_only() && d.is_destructive() && !d.is_idempotent());
        assert_eq!(d.risk_level(), RiskLevel::High);
        assert_eq!(Annotations::default(), Annotations::side_effecting());
    }

    #[test]
    fn caching_applies_to_read_only_tools_only() {
        assert!(Annotations::read_only().with_cacheable(true).is_cacheable());
        assert!(
            !Annotations::destructive()
                .with_cacheable(true)
                .is_cacheable()
        );
    }

    #[test]
    fn serde_refuses_contradictions_and_unknown_fields() {
        let err = serde_json::from_str::<Annotations>(r#"{"read_only":true,"destructive":true}"#)
            .unwrap_err();
        assert!(err.to_string().contains("both read_only and destructive"));
        let err = serde_json::from_str::<Annotations>(r#"{"cacheable":true}"#).unwrap_err();
        assert!(
            err.to_string()
                .contains("only read_only tools can be cacheable")
        );
        assert!(serde_json::from_str::<Annotations>(r#"{"readonly":true}"#).is_err());
        let a: Annotations =
            serde_json::from_str(r#"{"read_only":true,"idempotent":true,"timeout_ms":250}"#)
                .unwrap();
        assert_eq!(a.timeout(), Some(Duration::from_millis(250)));
        assert_eq!(a.risk_level(), RiskLevel::Medium);
    }

    #[test]
    fn unknown_risk_level_names_the_value() {
        let err = "extreme".parse::<RiskLevel>().unwrap_err();
        assert!(err.to_string().contains("\"extreme\""));
    }
}

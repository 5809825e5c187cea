//! Approvals: which calls need a yes (`ApprovalPolicy`) and why (`ApprovalReason`), and how
//! a call waits for its verdict (`ApprovalMode`). Who gives the yes is in `approver`.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use rein_run::{ToolName, ToolSpec};
use rein_tool::RiskLevel;
use serde::{Deserialize, Serialize};

/// Which tool calls need approval.
///
/// A call needs approval when its tool is annotated `requires_approval`, or — unless the
/// tool is exempt — when it is destructive (and `destructive` is on), its risk is at or above
/// `min_risk`, or it is named in `tools`. An approver that does not answer within `timeout`,
/// fails, or is not configured means **deny**: approvals fail closed.
///
/// ```
/// use rein_policy::{ApprovalPolicy, ApprovalReason};
/// use rein_tool::{Annotations, RiskLevel, ToolSpec};
///
/// let policy = ApprovalPolicy::default(); // destructive, or risk ≥ high
/// let rm = ToolSpec::new("rm".parse()?, "").with_annotations(Annotations::destructive());
/// let ls = ToolSpec::new("ls".parse()?, "").with_annotations(Annotations::read_only());
/// assert_eq!(policy.requires(&rm), Some(ApprovalReason::Destructive));
/// assert_eq!(policy.requires(&ls), None);
/// assert_eq!(policy.clone().exempt("rm".parse()?).requires(&rm), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// Every omitted field takes its value from `Default` (the container-level `default`), so
// omitting one field and omitting the whole policy agree: an `approvals` object that sets
// only `timeout_ms` still requires approval at risk ≥ high. No field may carry its own
// `#[serde(default)]`: that would take the field type's default (`None` for `min_risk`)
// instead of the policy's, and fail open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalPolicy {
    destructive: bool,
    min_risk: Option<RiskLevel>,
    tools: BTreeSet<ToolName>,
    exempt: BTreeSet<ToolName>,
    #[serde(rename = "timeout_ms", with = "rein_tool::duration_ms")]
    timeout: Duration,
    /// Recorded only when it is not the default, so ledgers written before it existed
    /// read (and compare) the same.
    #[serde(skip_serializing_if = "ApprovalMode::is_in_process")]
    mode: ApprovalMode,
}

/// How a call that needs approval waits for its verdict.
///
/// ```
/// use rein_policy::{ApprovalMode, ApprovalPolicy};
/// assert_eq!(ApprovalPolicy::default().mode(), ApprovalMode::InProcess);
/// let durable = ApprovalPolicy::default().with_mode(ApprovalMode::Durable);
/// assert_eq!(serde_json::to_value(&durable)?["mode"], "durable");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// The engine asks its `Approver` and waits, inside the run's task, up to the policy's
    /// timeout (the default).
    #[default]
    InProcess,
    /// The run records the pending approval and pauses; the task ends and nothing is held
    /// open. A verdict is given later through the engine, from any process on the same
    /// stores (`Engine::approve`). The policy's timeout is measured on the engine's clock
    /// from the request, across restarts: past it, the call is denied when the run is
    /// next touched. The engine's `Approver`, if any, is not asked.
    Durable,
}

impl ApprovalMode {
    /// Whether this is the default, in-process mode.
    #[must_use]
    pub const fn is_in_process(&self) -> bool {
        matches!(self, Self::InProcess)
    }
}

const fn default_timeout() -> Duration {
    Duration::from_secs(30)
}

impl Default for ApprovalPolicy {
    /// Destructive tools and tools of risk `high` or more need approval; 30 s timeout.
    fn default() -> Self {
        Self {
            destructive: true,
            min_risk: Some(RiskLevel::High),
            tools: BTreeSet::new(),
            exempt: BTreeSet::new(),
            timeout: default_timeout(),
            mode: ApprovalMode::InProcess,
        }
    }
}

impl ApprovalPolicy {
    /// A policy under which only tools annotated `requires_approval` need approval.
    #[must_use]
    pub fn annotated_only() -> Self {
        Self {
            destructive: false,
            min_risk: None,
            ..Self::default()
        }
    }

    /// Whether destructive tools need approval.
    #[must_use]
    pub fn with_destructive(mut self, required: bool) -> Self {
        self.destructive = required;
        self
    }

    /// Requires approval for tools of `level` and above (`None`: risk alone never does).
    #[must_use]
    pub fn with_min_risk(mut self, level: Option<RiskLevel>) -> Self {
        self.min_risk = level;
        self
    }

    /// Requires approval for every call of `tool` (and takes it off the exempt list).
    #[must_use]
    pub fn require(mut self, tool: ToolName) -> Self {
        self.exempt.remove(&tool);
        self.tools.insert(tool);
        self
    }

    /// Exempts `tool` from the policy's rules (its own `requires_approval` annotation still holds).
    #[must_use]
    pub fn exempt(mut self, tool: ToolName) -> Self {
        self.exempt.insert(tool);
        self
    }

    /// How long the engine waits for an approver before denying.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long the engine waits for an approver before denying.
    #[must_use]
    pub const fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How a call that needs approval waits for its verdict.
    #[must_use]
    pub const fn with_mode(mut self, mode: ApprovalMode) -> Self {
        self.mode = mode;
        self
    }

    /// How a call that needs approval waits for its verdict.
    #[must_use]
    pub const fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// Why a call of `spec`'s tool needs approval, or `None` if it does not.
    #[must_use]
    pub fn requires(&self, spec: &ToolSpec) -> Option<ApprovalReason> {
        let a = spec.annotations();
        if a.requires_approval() {
            return Some(ApprovalReason::Annotated);
        }
        if self.exempt.contains(spec.name()) {
            return None;
        }
        if self.tools.contains(spec.name()) {
            return Some(ApprovalReason::NamedTool);
        }
        if self.destructive && a.is_destructive() {
            return Some(ApprovalReason::Destructive);
        }
        match self.min_risk {
            Some(min) if a.risk_level() >= min => Some(ApprovalReason::Risk {
                level: a.risk_level(),
                threshold: min,
            }),
            _ => None,
        }
    }
}

/// Why a call needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum ApprovalReason {
    /// The tool is annotated `requires_approval`.
    Annotated,
    /// The policy names the tool.
    NamedTool,
    /// The tool is destructive.
    Destructive,
    /// The tool's risk is at or above the policy's threshold.
    Risk {
        /// The tool's risk.
        level: RiskLevel,
        /// The policy's threshold.
        threshold: RiskLevel,
    },
    /// A hook asked for approval of this call.
    Hook,
}

impl fmt::Display for ApprovalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Annotated => f.write_str("the tool is annotated as requiring approval"),
            Self::NamedTool => f.write_str("the approval policy names this tool"),
            Self::Destructive => f.write_str("the tool is destructive"),
            Self::Hook => f.write_str("a hook asked for approval of this call"),
            Self::Risk { level, threshold } => {
                write!(
                    f,
                    "the tool's risk ({level}) is at or above the threshold ({threshold})"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_tool::Annotations;

    fn spec(a: Annotations) -> ToolSpec {
        ToolSpec::new(ToolName::new("t").unwrap(), "").with_annotations(a)
    }

    #[test]
    fn annotation_wins_over_exemption() {
        let p = ApprovalPolicy::default().exempt(ToolName::new("t").unwrap());
        assert_eq!(
            p.requires(&spec(Annotations::read_only().with_approval_required())),
            Some(ApprovalReason::Annotated)
        );
        assert_eq!(p.requires(&spec(Annotations::destructive())), None);
    }

    #[test]
    fn risk_threshold_and_named_tools() {
        let p = ApprovalPolicy::annotated_only().with_min_risk(Some(RiskLevel::Medium));
        assert_eq!(
            p.requires(&spec(Annotations::side_effecting())),
            Some(ApprovalReason::Risk {
                level: RiskLevel::Medium,
                threshold: RiskLevel::Medium
            })
        );
        assert_eq!(p.requires(&spec(Annotations::read_only())), None);
        let named = ApprovalPolicy::annotated_only().require(ToolName::new("t").unwrap());
        assert_eq!(
            named.requires(&spec(Annotations::read_only())),
            Some(ApprovalReason::NamedTool)
        );
    }

    #[test]
    fn the_policy_round_trips_through_serde() {
        let p = ApprovalPolicy::default()
            .require(ToolName::new("x").unwrap())
            .with_timeout(Duration::from_millis(5));
        assert_eq!(
            serde_json::from_value::<ApprovalPolicy>(serde_json::to_value(&p).unwrap()).unwrap(),
            p
        );
    }
}

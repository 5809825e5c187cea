//! `PendingApproval`: a tool call a durable approval holds back, waiting for a verdict.

use serde::{Deserialize, Serialize};

use crate::{Digest, RunId, Timestamp, ToolName};
use rein_tool::RiskLevel;

/// A call that needs approval under a durable approval policy, recorded as part of the
/// run's persisted state while the run is paused for it. A verdict answers exactly this
/// call: the same run, step, tool and input hash.
///
/// ```
/// use rein_run::{Digest, PendingApproval, Timestamp};
/// use rein_tool::RiskLevel;
/// use serde_json::json;
///
/// let pending = PendingApproval {
///     run: "r1".parse()?,
///     step: 3,
///     tool: "deploy".parse()?,
///     input_hash: Digest::of_json(&json!({"env": "prod"})),
///     risk: RiskLevel::High,
///     reason: "the tool is destructive".into(),
///     requested_at: Timestamp::from_unix_millis(1_000),
/// };
/// assert!(!pending.is_expired(Timestamp::from_unix_millis(1_500), 500));
/// assert!(pending.is_expired(Timestamp::from_unix_millis(1_501), 500));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingApproval {
    /// The run that asks.
    pub run: RunId,
    /// The run's step when it asked (its step count after the call's decision).
    pub step: u32,
    /// The tool to be called.
    pub tool: ToolName,
    /// The SHA-256 of the exact input the call will run with.
    pub input_hash: Digest,
    /// The tool's risk.
    pub risk: RiskLevel,
    /// Why the call needs approval.
    pub reason: String,
    /// When the approval was requested, on the engine's clock.
    pub requested_at: Timestamp,
}

impl PendingApproval {
    /// Whether a verdict given at `now` comes too late: more than `timeout_ms` after the
    /// request.
    #[must_use]
    pub const fn is_expired(&self, now: Timestamp, timeout_ms: u64) -> bool {
        now.millis_since(self.requested_at) > timeout_ms
    }
}

//! Approvers: what one is asked (`ApprovalRequest`, one exact call), what it answers
//! (`ApprovalResponse`, covering that call only), and the `Approver` port with the two
//! approvers rein ships.

use std::future::Future;

use rein_run::{BoxFuture, Digest, PendingApproval, RunId, State, ToolName, ToolSpec};
use rein_tool::RiskLevel;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ApprovalReason;

/// What an approver is asked: one exact call.
///
/// It carries the SHA-256 of the exact input ([`ApprovalRequest::input_hash`]); a response
/// approves that hash only, so an approval can never be reused for another input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    run_id: RunId,
    step: u32,
    state: State,
    tool: ToolName,
    risk: RiskLevel,
    input: Value,
    input_hash: Digest,
    reason: ApprovalReason,
}

impl ApprovalRequest {
    /// A request to call `spec`'s tool with `input` at `step` of run `run_id`.
    #[must_use]
    pub fn new(
        run_id: RunId,
        step: u32,
        state: State,
        spec: &ToolSpec,
        input: Value,
        reason: ApprovalReason,
    ) -> Self {
        Self {
            run_id,
            step,
            state,
            tool: spec.name().clone(),
            risk: spec.annotations().risk_level(),
            input_hash: Digest::of_json(&input),
            input,
            reason,
        }
    }

    /// The run asking.
    #[must_use]
    pub const fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The run's step.
    #[must_use]
    pub const fn step(&self) -> u32 {
        self.step
    }

    /// The run's state.
    #[must_use]
    pub const fn state(&self) -> State {
        self.state
    }

    /// The tool to be called.
    #[must_use]
    pub const fn tool(&self) -> &ToolName {
        &self.tool
    }

    /// The tool's risk.
    #[must_use]
    pub const fn risk(&self) -> RiskLevel {
        self.risk
    }

    /// The exact input to be executed.
    #[must_use]
    pub const fn input(&self) -> &Value {
        &self.input
    }

    /// The SHA-256 of the canonical input.
    #[must_use]
    pub const fn input_hash(&self) -> Digest {
        self.input_hash
    }

    /// Why approval is needed.
    #[must_use]
    pub const fn reason(&self) -> ApprovalReason {
        self.reason
    }
}

/// Granted or denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The call may go ahead.
    Granted,
    /// The call may not.
    Denied,
}

/// An approver's answer: the verdict, who gave it and why, and the one call it covers — the
/// run, step and tool of the request it answers, and its input hash.
///
/// ```
/// use rein_policy::{ApprovalReason, ApprovalRequest, ApprovalResponse};
/// use rein_run::State;
/// use rein_tool::ToolSpec;
/// use serde_json::json;
///
/// let spec = ToolSpec::new("deploy".parse()?, "");
/// let req = ApprovalRequest::new("r1".parse()?, 4, State::Act, &spec, json!({"env": "prod"}), ApprovalReason::NamedTool);
/// let yes = ApprovalResponse::grant(&req, "alice", "change ticket 42");
/// assert!(yes.is_granted() && yes.covers(&req));
///
/// let other = ApprovalRequest::new("r1".parse()?, 5, State::Act, &spec, json!({"env": "dev"}), ApprovalReason::NamedTool);
/// assert!(!yes.covers(&other)); // an approval never carries over to another input
///
/// let drop = ToolSpec::new("drop_database".parse()?, "");
/// let same_input = ApprovalRequest::new("r1".parse()?, 4, State::Act, &drop, json!({"env": "prod"}), ApprovalReason::NamedTool);
/// assert!(!yes.covers(&same_input)); // …nor to another tool, step or run
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalResponse {
    verdict: Verdict,
    approver: String,
    reason: String,
    run_id: RunId,
    step: u32,
    tool: ToolName,
    input_hash: Digest,
}

impl ApprovalResponse {
    /// Grants `request`, signed by `approver`.
    #[must_use]
    pub fn grant(
        request: &ApprovalRequest,
        approver: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(Verdict::Granted, request, approver, reason)
    }

    /// Denies `request`, signed by `approver`.
    #[must_use]
    pub fn deny(
        request: &ApprovalRequest,
        approver: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(Verdict::Denied, request, approver, reason)
    }

    /// A verdict on a durable approval: `verdict` on exactly the call `pending` holds back
    /// (its run, step, tool and input hash), signed by `approver`. `Engine::approve` refuses
    /// it for any other call.
    ///
    /// ```
    /// use rein_policy::{ApprovalResponse, Verdict};
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
    ///     requested_at: Timestamp::from_unix_millis(0),
    /// };
    /// let yes = ApprovalResponse::answer(&pending, Verdict::Granted, "alice", "ticket 42");
    /// assert!(yes.is_granted() && yes.answers(&pending));
    /// let later = PendingApproval { step: 5, ..pending };
    /// assert!(!yes.answers(&later)); // a verdict never carries over to another call
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn answer(
        pending: &PendingApproval,
        verdict: Verdict,
        approver: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            verdict,
            approver: approver.into(),
            reason: reason.into(),
            run_id: pending.run.clone(),
            step: pending.step,
            tool: pending.tool.clone(),
            input_hash: pending.input_hash,
        }
    }

    /// Whether this response answers the durable approval `pending`: the same run, step,
    /// tool and exact input.
    #[must_use]
    pub fn answers(&self, pending: &PendingApproval) -> bool {
        self.input_hash == pending.input_hash
            && self.tool == pending.tool
            && self.step == pending.step
            && self.run_id == pending.run
    }

    /// The run of the call it covers.
    #[must_use]
    pub const fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The step of the call it covers.
    #[must_use]
    pub const fn step(&self) -> u32 {
        self.step
    }

    fn new(
        verdict: Verdict,
        request: &ApprovalRequest,
        approver: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            verdict,
            approver: approver.into(),
            reason: reason.into(),
            run_id: request.run_id.clone(),
            step: request.step,
            tool: request.tool.clone(),
            input_hash: request.input_hash,
        }
    }

    /// The verdict.
    #[must_use]
    pub const fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// Whether the call was granted.
    #[must_use]
    pub const fn is_granted(&self) -> bool {
        matches!(self.verdict, Verdict::Granted)
    }

    /// Who decided.
    #[must_use]
    pub fn approver(&self) -> &str {
        &self.approver
    }

    /// Why.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The hash of the input the verdict covers.
    #[must_use]
    pub const fn input_hash(&self) -> Digest {
        self.input_hash
    }

    /// The tool of the call it covers.
    #[must_use]
    pub const fn tool(&self) -> &ToolName {
        &self.tool
    }

    /// Whether this response answers `request`: the same run, step, tool and exact input. A
    /// response given for one call (and cached, or replayed) never covers another.
    #[must_use]
    pub fn covers(&self, request: &ApprovalRequest) -> bool {
        self.input_hash == request.input_hash
            && self.tool == request.tool
            && self.step == request.step
            && self.run_id == request.run_id
    }
}

/// An approver could not decide. The engine treats it as a denial (fail closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("approver failed: {message}")]
pub struct ApproverError {
    /// What went wrong.
    pub message: String,
}

impl ApproverError {
    /// An approver failure with a message.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Decides approval requests. Implement it with a plain `async fn`.
///
/// # Contract
/// - `decide` MUST answer with a response built from the request it was given
///   ([`ApprovalResponse::grant`] / [`ApprovalResponse::deny`]); the engine refuses a
///   response whose input hash does not match the call about to run.
/// - `decide` MAY take its time: the engine denies when the policy's timeout passes.
/// - An `Err` is a denial too: approvals fail closed.
///
/// ```
/// use rein_policy::{ApprovalRequest, ApprovalResponse, Approver, ApproverError};
/// use rein_tool::RiskLevel;
///
/// /// Grants anything below critical risk.
/// struct RiskGate;
///
/// impl Approver for RiskGate {
///     async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
///         Ok(if request.risk() < RiskLevel::Critical {
///             ApprovalResponse::grant(request, "risk-gate", "below critical")
///         } else {
///             ApprovalResponse::deny(request, "risk-gate", "critical needs a human")
///         })
///     }
/// }
/// # let _ = RiskGate;
/// ```
pub trait Approver: Send + Sync + 'static {
    /// Decides `request`.
    fn decide(
        &self,
        request: &ApprovalRequest,
    ) -> impl Future<Output = Result<ApprovalResponse, ApproverError>> + Send;

    /// The name the ledger records for this approver when it fails to answer (an error, a
    /// timeout, a panic) — its answers carry their own signature. Defaults to the type's
    /// name without its path.
    fn name(&self) -> &str {
        let full = std::any::type_name::<Self>();
        let plain = full.split('<').next().unwrap_or(full);
        plain.rsplit("::").next().unwrap_or(plain)
    }
}

/// The object-safe twin of [`Approver`], implemented for every approver.
pub trait DynApprover: Send + Sync + 'static {
    /// Boxed [`Approver::decide`].
    fn decide_boxed<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalResponse, ApproverError>>;

    /// [`Approver::name`].
    fn approver_name(&self) -> &str;
}

impl<A: Approver> DynApprover for A {
    fn decide_boxed<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalResponse, ApproverError>> {
        Box::pin(self.decide(request))
    }

    fn approver_name(&self) -> &str {
        Approver::name(self)
    }
}

/// Grants every request, signed `auto`. For tests and trusted, scripted environments.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprover;

impl Approver for AutoApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        Ok(ApprovalResponse::grant(
            request,
            "auto",
            "auto-approver grants every request",
        ))
    }

    fn name(&self) -> &str {
        "auto"
    }
}

/// Denies every request, signed `deny`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyApprover;

impl Approver for DenyApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        Ok(ApprovalResponse::deny(
            request,
            "deny",
            "deny-approver denies every request",
        ))
    }

    fn name(&self) -> &str {
        "deny"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_tool::Annotations;
    use serde_json::json;

    fn spec(a: Annotations) -> ToolSpec {
        ToolSpec::new(ToolName::new("t").unwrap(), "").with_annotations(a)
    }

    #[test]
    fn an_approver_is_named_by_its_type_unless_it_says_otherwise() {
        struct Pager;
        impl Approver for Pager {
            async fn decide(&self, _: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
                Err(ApproverError::new("offline"))
            }
        }
        assert_eq!(Approver::name(&Pager), "Pager");
        assert_eq!(Approver::name(&AutoApprover), "auto");
        assert_eq!(DenyApprover.approver_name(), "deny");
    }

    #[test]
    fn requests_and_responses_round_trip_through_serde() {
        let req = ApprovalRequest::new(
            RunId::new("r").unwrap(),
            1,
            State::Act,
            &spec(Annotations::destructive()),
            json!({"a": 1}),
            ApprovalReason::Destructive,
        );
        assert_eq!(
            serde_json::from_value::<ApprovalRequest>(serde_json::to_value(&req).unwrap()).unwrap(),
            req
        );
        let resp = ApprovalResponse::deny(&req, "bob", "no");
        assert_eq!(
            serde_json::from_value::<ApprovalResponse>(serde_json::to_value(&resp).unwrap())
                .unwrap(),
            resp
        );
    }

    fn _approvers_are_object_safe(_: &dyn DynApprover) {}
}

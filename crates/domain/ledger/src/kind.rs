//! `EntryKind`: what a ledger entry records, one variant per event of DESIGN.md §2.

use std::fmt;
use std::sync::Arc;

use crate::hooks::{HookPoint, HookRuling};
use rein_run::telemetry::TraceParent;
use rein_run::{
    ArtifactLink, BudgetName, ChildOutcome, Decision, Digest, Failure, LedgerHead, Payload,
    PendingApproval, PlannerAttempt, PlannerCall, PromptCompaction, RunId, Spend, State,
    StopRequest, ToolError, ToolName,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What happened, with its typed details. Serialized with a `type` tag in `snake_case`:
///
/// ```
/// use rein_ledger::EntryKind;
/// use rein_run::State;
/// use serde_json::json;
///
/// let kind = EntryKind::Transition { from: State::Intake, to: State::Explore, reason: "start".into() };
/// assert_eq!(kind.name(), "transition");
/// assert_eq!(
///     serde_json::to_value(&kind)?,
///     json!({"type": "transition", "from": "intake", "to": "explore", "reason": "start"})
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// The field names and order of every variant are part of the ledger's canonical encoding:
/// renaming, reordering or retyping a field changes the hash of every entry of that kind,
/// and ledgers already written would no longer verify. Add variants; never change one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum EntryKind {
    /// The run was created. Always the first entry.
    RunStarted {
        /// The run's goal.
        goal: String,
        /// The variables the run was started with.
        vars: Map<String, Value>,
        /// The policy the run started under (budget limits, eligibility, transitions,
        /// approvals), as the engine snapshots it. Shared, not copied: every run an engine
        /// starts records the one value (it serializes as the value itself).
        policy: Arc<Value>,
    },
    /// The run paused, waiting for a human.
    RunPaused {
        /// The question it waits on.
        question: String,
    },
    /// The run went on after a pause, an interrupt or a restart.
    RunResumed {
        /// Why it resumed ("answered", "restarted after a crash", …).
        note: String,
    },
    /// The run ended in `done`.
    RunCompleted {
        /// What was achieved.
        summary: String,
        /// The run's result.
        result: Value,
    },
    /// The run ended in `failed`.
    RunFailed {
        /// Why.
        failure: Failure,
    },
    /// The planner proposed a decision (recorded before it is checked and applied).
    Decision {
        /// The step, from 0.
        step: u32,
        /// The decision as proposed.
        decision: Decision,
    },
    /// The run moved from one state to another.
    Transition {
        /// The state it left.
        from: State,
        /// The state it entered.
        to: State,
        /// Why: shared with the decision that proposed the move.
        reason: Arc<str>,
    },
    /// A tool attempt started. An attempt without a result or error after it is *in doubt*.
    ToolCall {
        /// The tool.
        tool: ToolName,
        /// The input it was called with: shared with the decision that proposed the call
        /// (it serializes as the value itself).
        input: Arc<Value>,
        /// The canonical hash of `input` (what an approval covers).
        input_hash: Digest,
        /// The attempt number, from 1 (retries of idempotent tools count up).
        attempt: u32,
        /// Whether the tool is idempotent (so an in-doubt call may be retried).
        idempotent: bool,
    },
    /// A tool attempt returned.
    ToolResult {
        /// The tool.
        tool: ToolName,
        /// The attempt number, from 1.
        attempt: u32,
        /// How long the attempt took, in milliseconds (0 when cached).
        duration_ms: u64,
        /// Whether the output came from the cache instead of a call.
        cached: bool,
        /// What it returned, inline or as an artifact reference.
        output: Payload,
    },
    /// A tool attempt failed.
    ToolError {
        /// The tool.
        tool: ToolName,
        /// The attempt number, from 1.
        attempt: u32,
        /// How long the attempt took, in milliseconds.
        duration_ms: u64,
        /// Why it failed.
        error: ToolError,
        /// Whether the stack tried again after this attempt (a transient failure of an
        /// idempotent tool). The last attempt of a call has `false`.
        will_retry: bool,
    },
    /// A call needs approval and the approver was asked.
    ApprovalRequested {
        /// The tool.
        tool: ToolName,
        /// The hash of the input the approval would cover.
        input_hash: Digest,
        /// Why approval is needed (the approval policy's rule).
        reason: String,
    },
    /// The approver allowed the call.
    ApprovalGranted {
        /// The tool.
        tool: ToolName,
        /// The hash of the input the approval covers (and only that input).
        input_hash: Digest,
        /// Who decided.
        approver: String,
        /// Why.
        reason: String,
    },
    /// The approver refused the call, did not answer in time, failed, or none was
    /// configured (approvals fail closed).
    ApprovalDenied {
        /// The tool.
        tool: ToolName,
        /// The hash of the input that was refused.
        input_hash: Digest,
        /// Who decided (the engine, when no approver answered).
        approver: String,
        /// Why.
        reason: String,
    },
    /// A budget was charged.
    BudgetConsumed {
        /// The budget.
        name: BudgetName,
        /// The amount charged.
        amount: u64,
        /// What has been used of it after this charge.
        used: u64,
        /// Its limit, if it has one.
        limit: Option<u64>,
    },
    /// A provider reported more than a budget had left (a model call's usage, which no
    /// rein-side check can bound): the true amount is charged all the same, past the limit,
    /// and the run stops.
    BudgetOverrun {
        /// The budget.
        name: BudgetName,
        /// The amount charged: what the provider reported.
        amount: u64,
        /// What has been used of it after this charge (more than `limit`).
        used: u64,
        /// Its limit.
        limit: u64,
    },
    /// A charge was refused because it would exceed a budget's limit.
    BudgetExhausted {
        /// The budget.
        name: BudgetName,
        /// Its limit.
        limit: u64,
        /// What had been used of it (reservations included).
        used: u64,
        /// What was asked for.
        requested: u64,
    },
    /// The run asked a human a question.
    HumanInputRequested {
        /// The question.
        question: String,
        /// The answers offered; empty means any non-empty answer.
        options: Vec<String>,
    },
    /// A human answered the run's question.
    HumanInputReceived {
        /// The answer.
        answer: String,
        /// Who answered, when the caller named them (an operator of the console). Left out
        /// of the entry when unknown, so entries written before it existed hash the same.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// A decision was rejected by a policy.
    PolicyViolation {
        /// Which rule it broke.
        violation: Violation,
        /// What happened and what to do, as handed to the planner or the user.
        message: String,
        /// Whether it was handed back to the planner as evidence (so the run went on)
        /// instead of failing the run.
        handed_back: bool,
    },
    /// A person steered the run through its handle (advice to the planner).
    Steering {
        /// The note.
        note: String,
    },
    /// The run stopped after a graceful interrupt; it is `interrupted` and can be resumed.
    RunInterrupted {
        /// Why it stopped.
        reason: String,
    },
    /// The run was interrupted through its handle.
    Interrupt {
        /// Graceful, stop or abort.
        kind: InterruptKind,
    },
    /// The run's policy was narrowed while it was live: from this entry on, and after any
    /// restart, the run is held to `policy` (a policy snapshot, as in `run_started`).
    PolicyNarrowed {
        /// The whole policy the run is held to from now on.
        policy: Arc<Value>,
        /// Why, as the caller said.
        reason: String,
    },
    /// The planner called a model while deciding a step: what it sent (by hash), what it
    /// used and cost. The `tokens` and `cost` charges follow as `budget_consumed`.
    PlannerCall {
        /// The step being decided.
        step: u32,
        /// The call, as the planner reported it.
        call: PlannerCall,
    },
    /// A tool attempt returned a file beside its output (an image, a resource, the output
    /// past a cap); the engine stored it as an artifact. Comes right before that attempt's
    /// `tool_result`, one entry per attachment, in the order the tool gave them.
    ToolAttachment {
        /// The tool.
        tool: ToolName,
        /// The attempt number, from 1.
        attempt: u32,
        /// The attachment's name, as the tool gave it (the output's JSON may name it).
        name: String,
        /// Where the bytes are: the artifact's id, checksum, size and media type.
        link: ArtifactLink,
    },
    /// The planner is about to send a model call: recorded, durably, before it is sent. Its
    /// outcome follows as `planner_call` (then the charges) or `planner_attempt_failed`;
    /// one the ledger shows without an outcome is charged at its worst case on resume.
    PlannerAttempt {
        /// The step being decided.
        step: u32,
        /// The attempt, as the planner announced it.
        attempt: PlannerAttempt,
    },
    /// A model call's attempt failed (a server error, a timeout, a broken stream).
    PlannerAttemptFailed {
        /// The step being decided.
        step: u32,
        /// The attempt's number within its model call.
        attempt: u32,
        /// What went wrong.
        error: String,
    },
    /// A call that needs approval under a durable approval policy is held back and the run
    /// pauses until a verdict (`approval_granted` / `approval_denied`) settles it.
    ApprovalPending {
        /// The call waiting, and when it started waiting.
        pending: PendingApproval,
    },
    /// A child run was started for a `delegate` decision: its budget is carved out of this
    /// run's and reserved here until the child ends (recorded, and made durable, before
    /// the child's ledger exists).
    ChildStarted {
        /// The child's run id.
        child: RunId,
        /// The child's goal.
        goal: String,
        /// The child's budget limits, carved out of what this run had left.
        carved: Spend,
        /// The planner driving the child, by its registered name; none: this run's.
        planner: Option<String>,
    },
    /// The child run ended: its reservation is released and what it spent is charged to
    /// this run; its outcome is evidence for this run's planner.
    ChildEnded {
        /// The child's run id.
        child: RunId,
        /// The last entry of the child's ledger: verifying this run verifies the child's
        /// ledger up to exactly this entry.
        head: LedgerHead,
        /// How it ended.
        outcome: ChildOutcome,
        /// What it spent, by budget.
        spent: Spend,
    },
    /// This run is a child: the second entry of its ledger names its parent, the parent's
    /// `child_started` entry, and how deep in the tree it is.
    ChildOf {
        /// The parent's run id.
        parent: RunId,
        /// The parent's `child_started` entry for this run.
        parent_head: LedgerHead,
        /// The depth of this run in the tree (the root is 0).
        depth: u32,
        /// The planner driving this run, by its registered name; none: the parent's.
        planner: Option<String>,
    },
    /// A skill's body entered the context the planner is about to send: recorded once per
    /// run and skill version, at the step it first entered, before that step's
    /// `planner_attempt`.
    SkillEntered {
        /// The step being decided.
        step: u32,
        /// The skill's name.
        name: String,
        /// The SHA-256 of the skill's canonical JSON: exactly which text entered.
        checksum: Digest,
    },
    /// A member of the step's `sequence` decision is about to be applied: the entries that
    /// follow, up to the next `sequence_member` or `sequence_stopped`, are its own.
    SequenceMember {
        /// The step whose decision the sequence is.
        step: u32,
        /// The member's index in the sequence, from 0.
        index: u32,
        /// The member's kind, as in its `type` tag (for readers of the ledger).
        kind: String,
    },
    /// A `sequence` decision stopped before its last member: the member before these did
    /// not take effect (refused, its call failed) or the run was interrupted, so these
    /// members were not run.
    SequenceStopped {
        /// The step whose decision the sequence is.
        step: u32,
        /// The indexes of the members not run, from 0.
        not_run: Vec<u32>,
        /// Why the sequence stopped.
        reason: String,
    },
    /// This run follows up on a finished run: the second entry of its ledger (right after
    /// `run_started`) names the run it continues and the head of that run's ledger when
    /// this one started, so verifying this run verifies the earlier one up to exactly that
    /// entry (a conversation is a chain of chains).
    FollowUpOf {
        /// The run this one continues.
        previous: RunId,
        /// The last entry of the previous run's ledger when this run started.
        previous_head: LedgerHead,
        /// This run's place in its conversation: the first run is 0, its follow-up 1, …
        turn: u32,
    },
    /// The planner compacted the prompt it is about to send: what it dropped (by hash), the
    /// summary standing for it, and the settings it was built with. Comes before the
    /// `planner_attempt` that sends it, so the request rebuilds from the ledger.
    PromptCompacted {
        /// The step being decided.
        step: u32,
        /// The compaction, as the planner announced it.
        compaction: PromptCompaction,
    },
    /// An operator asked, from outside the process driving the run, to stop it (a stop
    /// request, persisted beside the run): the driving engine honours it here, and the
    /// `interrupt` entry and the run's end follow.
    StopRequested {
        /// The request: abort or interrupt, who asked, why, when.
        request: StopRequest,
    },
    /// The hooks asked at `point` answered something other than allow: every such verdict,
    /// in the hooks' order, recorded before the engine acts on them (a resume reads them
    /// back instead of asking again).
    HookVerdicts {
        /// The step the hooks were asked in.
        step: u32,
        /// Where they were asked.
        point: HookPoint,
        /// The tool, at the tool points.
        tool: Option<ToolName>,
        /// The hash of the call's input, at the tool points.
        input_hash: Option<Digest>,
        /// Each verdict other than allow.
        rulings: Vec<HookRuling>,
    },
    /// A drive of the run is exported as a trace: the W3C trace context of its
    /// `invoke_agent` span (two random ids, no secret). Recorded at the start of each drive
    /// only while telemetry is exported; the next drive's span links to the last one, so a
    /// resumed run's trace leads back to the trace before it.
    TraceStarted {
        /// The drive's span.
        traceparent: TraceParent,
    },
}

impl EntryKind {
    /// The kind's name, as in its serialized `type` tag.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::RunStarted { .. } => "run_started",
            Self::RunPaused { .. } => "run_paused",
            Self::RunResumed { .. } => "run_resumed",
            Self::RunCompleted { .. } => "run_completed",
            Self::RunFailed { .. } => "run_failed",
            Self::Decision { .. } => "decision",
            Self::Transition { .. } => "transition",
            Self::ToolCall { .. } => "tool_call",
            Self::ToolResult { .. } => "tool_result",
            Self::ToolError { .. } => "tool_error",
            Self::ApprovalRequested { .. } => "approval_requested",
            Self::ApprovalGranted { .. } => "approval_granted",
            Self::ApprovalDenied { .. } => "approval_denied",
            Self::BudgetConsumed { .. } => "budget_consumed",
            Self::BudgetExhausted { .. } => "budget_exhausted",
            Self::BudgetOverrun { .. } => "budget_overrun",
            Self::HumanInputRequested { .. } => "human_input_requested",
            Self::HumanInputReceived { .. } => "human_input_received",
            Self::PolicyViolation { .. } => "policy_violation",
            Self::Steering { .. } => "steering",
            Self::Interrupt { .. } => "interrupt",
            Self::RunInterrupted { .. } => "run_interrupted",
            Self::PolicyNarrowed { .. } => "policy_narrowed",
            Self::PlannerCall { .. } => "planner_call",
            Self::ToolAttachment { .. } => "tool_attachment",
            Self::PlannerAttempt { .. } => "planner_attempt",
            Self::PlannerAttemptFailed { .. } => "planner_attempt_failed",
            Self::ApprovalPending { .. } => "approval_pending",
            Self::ChildStarted { .. } => "child_started",
            Self::ChildEnded { .. } => "child_ended",
            Self::ChildOf { .. } => "child_of",
            Self::SkillEntered { .. } => "skill_entered",
            Self::SequenceMember { .. } => "sequence_member",
            Self::SequenceStopped { .. } => "sequence_stopped",
            Self::FollowUpOf { .. } => "follow_up_of",
            Self::PromptCompacted { .. } => "prompt_compacted",
            Self::StopRequested { .. } => "stop_requested",
            Self::HookVerdicts { .. } => "hook_verdicts",
            Self::TraceStarted { .. } => "trace_started",
        }
    }
}

/// Which rule a rejected decision broke.
///
/// ```
/// use rein_ledger::Violation;
/// assert_eq!(serde_json::to_string(&Violation::IneligibleTool)?, r#""ineligible_tool""#);
/// assert_eq!(Violation::MaxSteps.to_string(), "max_steps");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Violation {
    /// The planner named a tool that is not registered.
    UnknownTool,
    /// The input does not match the tool's input schema.
    InvalidInput,
    /// The tool may not run in the run's current state.
    IneligibleTool,
    /// The transition table does not allow the move.
    TransitionRefused,
    /// The approver (or the absence of one) refused the call.
    ApprovalDenied,
    /// A budget would be exceeded.
    BudgetExhausted,
    /// A human's answer is not among the options offered.
    InvalidAnswer,
    /// The run reached the engine's step limit.
    MaxSteps,
    /// The model's reply had no usable function call (prose, arguments that are not JSON,
    /// too large or too deep); the planner asked it again.
    InvalidReply,
    /// A delegation was refused: deeper than the engine's limit, an unknown planner, or
    /// an empty goal.
    DelegationRefused,
    /// The planner proposed to end the run while a steering note it had not seen was
    /// waiting: the note is handed over and the planner decides again, once per note.
    SteeringUnread,
    /// A hook denied it (or failed, and before-hooks fail closed).
    HookDenied,
}

impl Violation {
    /// The violation's `snake_case` name, as serialized.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidInput => "invalid_input",
            Self::IneligibleTool => "ineligible_tool",
            Self::TransitionRefused => "transition_refused",
            Self::ApprovalDenied => "approval_denied",
            Self::BudgetExhausted => "budget_exhausted",
            Self::InvalidAnswer => "invalid_answer",
            Self::MaxSteps => "max_steps",
            Self::InvalidReply => "invalid_reply",
            Self::DelegationRefused => "delegation_refused",
            Self::SteeringUnread => "steering_unread",
            Self::HookDenied => "hook_denied",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a run was interrupted through its handle.
///
/// ```
/// use rein_ledger::InterruptKind;
/// assert_eq!(serde_json::to_string(&InterruptKind::Abort)?, r#""abort""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptKind {
    /// No further tool calls; the planner gets one more step to finish or fail.
    Graceful,
    /// In-flight tool calls are dropped and the run fails as aborted.
    Abort,
    /// A model call in flight is cancelled (charged at its declared worst case), a tool
    /// call in progress finishes and is recorded, nothing new starts, and the run is left
    /// interrupted, to be resumed.
    Stop,
}

impl InterruptKind {
    /// The kind's name, as serialized.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Graceful => "graceful",
            Self::Abort => "abort",
            Self::Stop => "stop",
        }
    }
}

impl fmt::Display for InterruptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violation_names_match_their_serialization() {
        for v in [
            Violation::UnknownTool,
            Violation::InvalidInput,
            Violation::IneligibleTool,
            Violation::TransitionRefused,
            Violation::ApprovalDenied,
            Violation::BudgetExhausted,
            Violation::InvalidAnswer,
            Violation::MaxSteps,
            Violation::InvalidReply,
            Violation::DelegationRefused,
            Violation::SteeringUnread,
            Violation::HookDenied,
        ] {
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
        for k in [InterruptKind::Graceful, InterruptKind::Abort] {
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
    }
}

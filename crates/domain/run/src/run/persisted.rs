//! The persisted form of a `Run`: written from borrowed fields (saving a run copies
//! nothing) and read back through `RunRepr`, whose conversion checks the run's rules.

use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{Failure, PendingQuestion, Run};
use crate::{
    BudgetUsage, Evidence, LedgerHead, PendingApproval, RunError, RunId, RunStatus, State,
    Timestamp,
};

/// The persisted form, as written: the run's fields, borrowed (saving a run copies nothing).
/// Field for field the same as [`RunRepr`].
#[derive(Serialize)]
struct RunView<'a> {
    id: &'a RunId,
    goal: &'a str,
    state: State,
    status: RunStatus,
    evidence: &'a [Evidence],
    vars: &'a Map<String, Value>,
    usage: &'a BudgetUsage,
    summary: &'a Option<String>,
    result: &'a Option<Value>,
    failure: &'a Option<Failure>,
    pending: &'a Option<PendingQuestion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_approval: &'a Option<PendingApproval>,
    steps: u32,
    created_at: Timestamp,
    updated_at: Timestamp,
    policy: &'a Value,
    ledger_head: Option<LedgerHead>,
}

impl Serialize for Run {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RunView {
            id: &self.id,
            goal: &self.goal,
            state: self.state,
            status: self.status,
            evidence: &self.evidence[..],
            vars: &self.vars,
            usage: &self.usage,
            summary: &self.summary,
            result: &self.result,
            failure: &self.failure,
            pending: &self.pending,
            pending_approval: &self.approval,
            steps: self.steps,
            created_at: self.created_at,
            updated_at: self.updated_at,
            policy: &self.policy,
            ledger_head: self.ledger_head,
        }
        .serialize(serializer)
    }
}

/// The persisted form, as read; loading checks that its fields agree with each other.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunRepr {
    id: RunId,
    goal: String,
    state: State,
    status: RunStatus,
    evidence: Vec<Evidence>,
    vars: Map<String, Value>,
    usage: BudgetUsage,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    failure: Option<Failure>,
    #[serde(default)]
    pending: Option<PendingQuestion>,
    /// Absent unless the run waits for a durable approval.
    #[serde(default)]
    pending_approval: Option<PendingApproval>,
    steps: u32,
    created_at: Timestamp,
    updated_at: Timestamp,
    policy: Value,
    /// Absent from snapshots saved before rein recorded ledger heads.
    #[serde(default)]
    ledger_head: Option<LedgerHead>,
}

impl TryFrom<RunRepr> for Run {
    type Error = RunError;
    fn try_from(r: RunRepr) -> Result<Self, Self::Error> {
        let inconsistent =
            |what: &str| Err(RunError::Inconsistent(format!("run {}: {what}", r.id)));
        match (r.status, r.state) {
            (RunStatus::Completed, State::Done) | (RunStatus::Failed, State::Failed) => {}
            (RunStatus::Completed | RunStatus::Failed, _) => {
                return inconsistent("a finished status needs its terminal state");
            }
            (_, State::Done | State::Failed) => {
                return inconsistent("a terminal state needs a finished status");
            }
            _ => {}
        }
        if (r.status == RunStatus::Paused) != (r.pending.is_some() || r.pending_approval.is_some())
        {
            return inconsistent(
                "a run is paused exactly when it has a pending question or approval",
            );
        }
        if r.pending.is_some() && r.pending_approval.is_some() {
            return inconsistent("a run waits for a question or an approval, never both");
        }
        if (r.status == RunStatus::Failed) != r.failure.is_some() {
            return inconsistent("a run has a failure exactly when it failed");
        }
        if r.updated_at < r.created_at {
            return inconsistent("updated before it was created");
        }
        if r.ledger_head.is_some_and(|head| head.seq == 0) {
            return inconsistent("saved after ledger entry 0, but entries count from 1");
        }
        Ok(Self {
            id: r.id,
            goal: r.goal,
            state: r.state,
            status: r.status,
            evidence: Arc::new(r.evidence),
            vars: r.vars,
            usage: r.usage,
            summary: r.summary,
            result: r.result,
            failure: r.failure,
            pending: r.pending,
            approval: r.pending_approval,
            steps: r.steps,
            created_at: r.created_at,
            updated_at: r.updated_at,
            policy: Arc::new(r.policy),
            ledger_head: r.ledger_head,
        })
    }
}

//! Replay: feed a recorded ledger back through the engine — decisions from the ledger, tool
//! outputs from the ledger, no tool executed — and compare where the run goes.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use rein_ledger::{EntryKind, Ledger, RunOutline};
use rein_policy::{
    ApprovalRequest, ApprovalResponse, Approver, ApproverError, PolicySnapshot, Verdict,
};
use rein_run::{
    Decision, Payload, PlanRequest, Planner, PlannerError, RunStatus, ToolName, ToolSpec,
};
use rein_tool::{Tool, ToolError, ToolOutput};
use serde_json::Value;

use crate::clock::ManualClock;
use crate::engine::Engine;
use crate::error::{EngineError, RecordedPolicyError};
use crate::spec::RunSpec;

/// What a replay found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplayReport {
    /// Where the recorded run went.
    pub recorded: RunOutline,
    /// Where the replayed run went.
    pub replayed: RunOutline,
}

impl ReplayReport {
    /// Whether the replay reached the same states, decisions, status and result.
    #[must_use]
    pub fn matches(&self) -> bool {
        self.recorded == self.replayed
    }

    /// The first difference, in words, if any.
    #[must_use]
    pub fn divergence(&self) -> Option<String> {
        let (r, p) = (&self.recorded, &self.replayed);
        if let Some(i) = r.states.iter().zip(&p.states).position(|(a, b)| a != b) {
            return Some(format!(
                "state #{i}: recorded {}, replayed {}",
                r.states[i], p.states[i]
            ));
        }
        if r.states.len() != p.states.len() {
            return Some(format!(
                "recorded {} states, replayed {}",
                r.states.len(),
                p.states.len()
            ));
        }
        if r.status != p.status {
            return Some(format!(
                "recorded status {}, replayed {}",
                r.status, p.status
            ));
        }
        if r.result != p.result || r.failure != p.failure || r.decisions != p.decisions {
            return Some("same path, different outcome".to_owned());
        }
        None
    }
}

/// Serves recorded decisions by step.
#[derive(Debug)]
struct RecordedPlanner {
    decisions: HashMap<u32, Decision>,
}

impl Planner for RecordedPlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        self.decisions.get(&request.step()).cloned().ok_or_else(|| {
            PlannerError::failed(format!(
                "replay: the ledger has no decision for step {}",
                request.step()
            ))
        })
    }
}

/// Serves a tool's recorded outcomes in order.
#[derive(Debug)]
struct RecordedTool {
    spec: ToolSpec,
    outcomes: Mutex<VecDeque<Result<ToolOutput, ToolError>>>,
}

impl Tool for RecordedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _input: Value) -> Result<ToolOutput, ToolError> {
        let next = self
            .outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        next.unwrap_or_else(|| {
            Err(ToolError::failed(
                "replay: the ledger records no further outcome of this tool",
            ))
        })
    }
}

/// Serves recorded approval verdicts in order.
#[derive(Debug)]
struct RecordedApprover {
    verdicts: Mutex<VecDeque<(Verdict, String, String)>>,
}

impl Approver for RecordedApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        let next = self
            .verdicts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        match next {
            Some((Verdict::Granted, who, why)) => Ok(ApprovalResponse::grant(request, who, why)),
            Some((Verdict::Denied, who, why)) => Ok(ApprovalResponse::deny(request, who, why)),
            None => Err(ApproverError::new(
                "replay: the ledger records no further approval",
            )),
        }
    }
}

impl Engine {
    /// Replays a recorded ledger: the recorded decisions are proposed again, tool outputs and
    /// approvals are served from the ledger (no tool runs, nothing leaves the process), under
    /// the policy the run recorded. Reports whether the run reaches the same states and result.
    ///
    /// # Errors
    /// [`EngineError::InvalidRecordedPolicy`] when the ledger does not start with a readable
    /// `run_started`; an artifact store error when a recorded output cannot be read back.
    pub async fn replay(&self, recorded: &Ledger) -> Result<ReplayReport, EngineError> {
        let id = recorded.run_id().clone();
        let invalid = |source| EngineError::InvalidRecordedPolicy {
            id: id.clone(),
            source,
        };
        let Some(EntryKind::RunStarted { goal, vars, policy }) =
            recorded.entries().first().map(|e| e.event())
        else {
            return Err(invalid(RecordedPolicyError::NoRunStarted));
        };
        let policy = PolicySnapshot::from_value(policy)
            .map_err(|e| invalid(RecordedPolicyError::Unreadable(e)))?;
        // A durable approval's verdict is served like any other: by the recorded approver.
        let policy = PolicySnapshot {
            approvals: (policy.approvals.clone()).with_mode(rein_policy::ApprovalMode::InProcess),
            ..policy
        };

        let mut decisions = HashMap::new();
        let mut outcomes: HashMap<ToolName, VecDeque<Result<ToolOutput, ToolError>>> =
            HashMap::new();
        let mut verdicts = VecDeque::new();
        let mut answers = VecDeque::new();
        for entry in recorded.entries() {
            match entry.event() {
                EntryKind::Decision { step, decision } => {
                    decisions.insert(*step, decision.clone());
                }
                EntryKind::ToolResult {
                    tool,
                    cached: false,
                    output,
                    ..
                } => {
                    let value = match output {
                        Payload::Inline(value) => value.clone(),
                        Payload::Artifact(link) => self.artifact_json(&link.id).await?,
                    };
                    outcomes
                        .entry(tool.clone())
                        .or_default()
                        .push_back(Ok(ToolOutput::new(value)));
                }
                EntryKind::ToolError { tool, error, .. } => {
                    outcomes
                        .entry(tool.clone())
                        .or_default()
                        .push_back(Err(error.clone()));
                }
                EntryKind::ApprovalGranted {
                    approver, reason, ..
                } => {
                    verdicts.push_back((Verdict::Granted, approver.clone(), reason.clone()));
                }
                EntryKind::ApprovalDenied {
                    approver, reason, ..
                } => {
                    verdicts.push_back((Verdict::Denied, approver.clone(), reason.clone()));
                }
                EntryKind::HumanInputReceived { answer } => answers.push_back(answer.clone()),
                _ => {}
            }
        }

        let shared = self.shared();
        let mut builder = Engine::builder()
            .planner(RecordedPlanner { decisions })
            .approver(RecordedApprover {
                verdicts: Mutex::new(verdicts),
            })
            .policy(policy)
            .resilience(shared.resilience.clone())
            .clock(ManualClock::starting_at(
                recorded
                    .entries()
                    .first()
                    .map_or(0, |e| e.at().as_unix_millis()),
            ))
            .on_tool_error(shared.config.on_tool_error)
            // The recorded batches fit; one call at a time serves each tool's outcomes in
            // the batch's order.
            .max_batch(shared.config.max_batch)
            .batch_concurrency(1)
            .inline_output_limit(usize::MAX);
        for spec in shared.tools.specs() {
            let outcomes = Mutex::new(outcomes.remove(spec.name()).unwrap_or_default());
            builder = builder.tool(RecordedTool {
                spec: spec.clone(),
                outcomes,
            });
        }
        let replayer = builder
            .build()
            .map_err(|e| invalid(RecordedPolicyError::Replay(Box::new(e))))?;
        let mut run = replayer
            .run(RunSpec {
                goal: goal.clone(),
                vars: vars.clone(),
                id: Some(id.clone()),
                deadline: None,
            })
            .await?;
        while run.status() == RunStatus::Paused {
            let Some(answer) = answers.pop_front() else {
                break;
            };
            run = replayer.resume_with_input(&id, &answer).await?;
        }
        let replayed = replayer.ledger(&id).await?;
        Ok(ReplayReport {
            recorded: recorded.outline(),
            replayed: replayed.outline(),
        })
    }

    async fn artifact_json(&self, id: &str) -> Result<Value, EngineError> {
        let id: rein_artifact::ArtifactId =
            id.parse().map_err(|e: rein_artifact::ArtifactIdError| {
                EngineError::ArtifactStore(rein_artifact::ArtifactError::InvalidId(e))
            })?;
        let (_, bytes) = self.shared().artifacts.get_boxed(&id).await?;
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

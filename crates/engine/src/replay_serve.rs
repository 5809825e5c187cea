//! What a replay serves the replaying engine, read from a recorded tree of ledgers: each
//! run's decisions (by run and step), the tools' outcomes and the approvals' verdicts in the
//! order the tree ran them, and the recorded children's ids in the order they were opened.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rein_ledger::{EntryKind, Ledger};
use rein_policy::{ApprovalRequest, ApprovalResponse, Approver, ApproverError, Verdict};
use rein_run::{Decision, Payload, PlanRequest, Planner, PlannerError, RunId, ToolName, ToolSpec};
use rein_tool::{Tool, ToolError, ToolOutput};
use serde_json::Value;

use crate::clock::{IdGenerator, UuidV7Ids};
use crate::engine::Engine;
use crate::error::{EngineError, TreeError};
use crate::load::load_ledger;

/// A run's ledger and the ledgers of the children it started, in the order they started.
#[derive(Debug)]
pub(crate) struct LedgerTree {
    pub(crate) ledger: Ledger,
    pub(crate) children: Vec<LedgerTree>,
}

/// Whether a child named by a `child_started` entry but absent from the store is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// The recorded tree must be whole: replaying a child needs its recorded ledger.
    Refused,
    /// A replayed child that was never created is left out (its report says so).
    Skipped,
}

type TreeFuture<'a> = Pin<Box<dyn Future<Output = Result<LedgerTree, EngineError>> + Send + 'a>>;

/// Loads the ledgers of every child below `ledger` from `engine`'s stores.
///
/// # Errors
/// [`EngineError::TreeBroken`] when a ledger's entries about its children break the rules
/// of a tree ([`TreeError::Recorded`]), or with [`TreeError::Missing`] or
/// [`TreeError::NotStored`] for a child whose ledger is not stored (under
/// [`Missing::Refused`]); the store's error otherwise.
pub(crate) fn load_tree(engine: &Engine, ledger: Ledger, missing: Missing) -> TreeFuture<'_> {
    Box::pin(async move {
        let parent = ledger.run_id();
        let links = ledger.child_links().map_err(|e| EngineError::TreeBroken {
            parent: parent.clone(),
            child: e.child().clone(),
            reason: TreeError::Recorded(e),
        })?;
        let mut children = Vec::new();
        for link in links {
            match load_ledger(engine.shared(), &link.child).await {
                Ok(loaded) => {
                    children.push(load_tree(engine, loaded.loaded.ledger, missing).await?);
                }
                Err(EngineError::RunNotFound { .. }) if missing == Missing::Skipped => {}
                Err(EngineError::RunNotFound { .. }) => {
                    return Err(EngineError::TreeBroken {
                        parent: parent.clone(),
                        child: link.child,
                        reason: match link.ended {
                            Some(_) => TreeError::Missing,
                            None => TreeError::NotStored {
                                started: link.started,
                            },
                        },
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(LedgerTree { ledger, children })
    })
}

/// Everything a replay serves, gathered from a recorded tree in the order it ran.
#[derive(Debug, Default)]
pub(crate) struct Served {
    pub(crate) decisions: HashMap<(RunId, u32), Decision>,
    pub(crate) outcomes: HashMap<ToolName, VecDeque<Result<ToolOutput, ToolError>>>,
    pub(crate) verdicts: VecDeque<(Verdict, String, String)>,
    /// The root's answers (a child's question is answered through its root).
    pub(crate) answers: VecDeque<String>,
    /// The children's ids, in the order they were opened (depth first).
    pub(crate) children: VecDeque<RunId>,
    /// Every planner name a recorded delegation or link used.
    pub(crate) planners: BTreeSet<String>,
}

impl Served {
    /// Gathers what `tree` recorded, walking it as it ran: a child's entries come between
    /// its parent's `child_started` and what follows.
    pub(crate) async fn gather(engine: &Engine, tree: &LedgerTree) -> Result<Self, EngineError> {
        let mut served = Self::default();
        let mut stack: Vec<(&LedgerTree, usize, usize)> = vec![(tree, 0, 0)];
        while let Some((node, at, child)) = stack.pop() {
            let Some(entry) = node.ledger.entries().get(at) else {
                continue;
            };
            stack.push((node, at + 1, child));
            let id = node.ledger.run_id();
            match entry.event() {
                EntryKind::Decision { step, decision } => {
                    served
                        .decisions
                        .insert((id.clone(), *step), decision.clone());
                }
                EntryKind::ToolResult {
                    tool,
                    cached: false,
                    output,
                    ..
                } => {
                    let value = match output {
                        Payload::Inline(value) => value.clone(),
                        Payload::Artifact(link) => engine.artifact_json(&link.id).await?,
                    };
                    served.outcome(tool, Ok(ToolOutput::new(value)));
                }
                EntryKind::ToolError { tool, error, .. } => {
                    served.outcome(tool, Err(error.clone()));
                }
                EntryKind::ApprovalGranted {
                    approver, reason, ..
                } => (served.verdicts).push_back((
                    Verdict::Granted,
                    approver.clone(),
                    reason.clone(),
                )),
                EntryKind::ApprovalDenied {
                    approver, reason, ..
                } => {
                    (served.verdicts).push_back((
                        Verdict::Denied,
                        approver.clone(),
                        reason.clone(),
                    ));
                }
                EntryKind::HumanInputReceived { answer, .. } if stack.len() == 1 => {
                    served.answers.push_back(answer.clone());
                }
                EntryKind::ChildOf {
                    planner: Some(name),
                    ..
                } => {
                    served.planners.insert(name.clone());
                }
                EntryKind::ChildStarted {
                    child: started,
                    planner,
                    ..
                } => {
                    served.planners.extend(planner.iter().cloned());
                    served.children.push_back(started.clone());
                    // Its entries come next; this run goes on after them.
                    if let Some(next) = node.children.get(child) {
                        if let Some(top) = stack.last_mut() {
                            top.2 += 1;
                        }
                        stack.push((next, 0, 0));
                    }
                }
                _ => {}
            }
        }
        Ok(served)
    }

    fn outcome(&mut self, tool: &ToolName, outcome: Result<ToolOutput, ToolError>) {
        self.outcomes
            .entry(tool.clone())
            .or_default()
            .push_back(outcome);
    }
}

/// Serves recorded decisions by run and step.
#[derive(Debug, Clone)]
pub(crate) struct RecordedPlanner {
    pub(crate) decisions: Arc<HashMap<(RunId, u32), Decision>>,
}

impl Planner for RecordedPlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let key = (request.run().id().clone(), request.step());
        self.decisions.get(&key).cloned().ok_or_else(|| {
            PlannerError::failed(format!(
                "replay: the ledger of run {} has no decision for step {}",
                key.0, key.1
            ))
        })
    }
}

/// Hands out the recorded children's ids in the order they were opened, so each replayed
/// child has its recorded id (and is served its own decisions); fresh ids after them.
#[derive(Debug)]
pub(crate) struct RecordedIds {
    pub(crate) ids: Mutex<VecDeque<RunId>>,
}

impl IdGenerator for RecordedIds {
    fn run_id(&self) -> RunId {
        let next = self
            .ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        next.unwrap_or_else(|| UuidV7Ids.run_id())
    }
}

/// Serves a tool's recorded outcomes in order.
#[derive(Debug)]
pub(crate) struct RecordedTool {
    pub(crate) spec: ToolSpec,
    pub(crate) outcomes: Mutex<VecDeque<Result<ToolOutput, ToolError>>>,
}

impl Tool for RecordedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _input: Value) -> Result<ToolOutput, ToolError> {
        let next = self
            .outcomes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
pub(crate) struct RecordedApprover {
    pub(crate) verdicts: Mutex<VecDeque<(Verdict, String, String)>>,
}

impl Approver for RecordedApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        let next = self
            .verdicts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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

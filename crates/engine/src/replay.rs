//! Replay: feed a recorded ledger back through the engine — decisions from the ledger, tool
//! outputs from the ledger, no tool executed — and compare where the run goes. A run that
//! delegated is replayed as the tree it was: each child is served its own recorded ledger.

use std::sync::{Arc, Mutex};

use rein_ledger::{EntryKind, Ledger, RunOutline};
use rein_policy::PolicySnapshot;
use rein_run::{RunId, RunStatus};
use serde_json::Value;

use crate::clock::ManualClock;
use crate::engine::Engine;
use crate::error::{EngineError, RecordedPolicyError};
use crate::replay_serve::{
    LedgerTree, Missing, RecordedApprover, RecordedIds, RecordedPlanner, RecordedTool, Served,
    load_tree,
};
use crate::spec::RunSpec;

/// What a replay found: for the run replayed and, in [`children`](Self::children), for
/// every child run it delegated to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplayReport {
    /// Where the recorded run went.
    pub recorded: RunOutline,
    /// Where the replayed run went.
    pub replayed: RunOutline,
    /// The run this report is about.
    pub run: RunId,
    /// One report per child run, in the order they started: the recorded children, then
    /// any the replay started beyond them. A child only one side has is a divergence.
    pub children: Vec<ReplayReport>,
    /// Which sides started this run: both, or only the record or only the replay.
    sides: Sides,
    /// Whether this run is a child (its divergence names it).
    child: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sides {
    Both,
    RecordedOnly,
    ReplayedOnly,
}

impl ReplayReport {
    /// Whether the replay reached the same states, decisions, status and result, in this
    /// run and in every child run below it.
    #[must_use]
    pub fn matches(&self) -> bool {
        self.sides == Sides::Both
            && self.recorded == self.replayed
            && self.children.iter().all(Self::matches)
    }

    /// The first difference, in words, if any. A child run's difference comes first
    /// (what a child ends with is what its parent goes on from) and names the child.
    #[must_use]
    pub fn divergence(&self) -> Option<String> {
        let replayed = |c: &&Self| c.sides == Sides::Both;
        if let Some(found) = self
            .children
            .iter()
            .filter(replayed)
            .find_map(Self::divergence)
        {
            return Some(found);
        }
        if let Some(found) = self.own_divergence() {
            return Some(if self.child {
                format!("child run {}: {found}", self.run)
            } else {
                found
            });
        }
        self.children
            .iter()
            .filter(|c| !replayed(c))
            .find_map(Self::divergence)
    }

    /// Every report of the tree, this one first, depth first.
    pub fn reports(&self) -> Box<dyn Iterator<Item = &Self> + '_> {
        Box::new(std::iter::once(self).chain(self.children.iter().flat_map(Self::reports)))
    }

    fn own_divergence(&self) -> Option<String> {
        match self.sides {
            Sides::RecordedOnly => return Some("the replay never started it".to_owned()),
            Sides::ReplayedOnly => {
                return Some("the replay started it; the record has no such child".to_owned());
            }
            Sides::Both => {}
        }
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

impl Engine {
    /// Replays a recorded ledger: the recorded decisions are proposed again, tool outputs and
    /// approvals are served from the ledger (no tool runs, nothing leaves the process), under
    /// the policy the run recorded. Reports whether the run reaches the same states and result.
    ///
    /// A run that delegated is replayed as a tree: each child's recorded ledger is read from
    /// this engine's ledger store, each child is served its own recorded decisions (under
    /// every planner name the record used), tools' outcomes and approvals are served in the
    /// order the tree ran them, and the report holds one report per child.
    ///
    /// # Errors
    /// [`EngineError::InvalidRecordedPolicy`] when the ledger does not start with a readable
    /// `run_started`; [`EngineError::TreeBroken`] naming the child when a child's recorded
    /// ledger is not in this engine's store; an artifact store error when a recorded output
    /// cannot be read back.
    pub async fn replay(&self, recorded: &Ledger) -> Result<ReplayReport, EngineError> {
        let id = recorded.run_id().clone();
        let invalid = |source| EngineError::InvalidRecordedPolicy {
            id: id.clone(),
            source,
        };
        let Some(EntryKind::RunStarted { goal, vars, policy }) =
            recorded.entries().first().map(rein_ledger::Entry::event)
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
        let tree = load_tree(self, recorded.clone(), Missing::Refused).await?;
        let Served {
            decisions,
            mut outcomes,
            verdicts,
            mut answers,
            children,
            planners,
        } = Served::gather(self, &tree).await?;

        // The recorded hooks, answering what the ledger says they answered.
        let hooks = crate::replay_hooks::recorded_hooks(&tree, &policy.hooks);
        let shared = self.shared();
        let planner = RecordedPlanner {
            decisions: Arc::new(decisions),
        };
        let mut builder = Engine::builder()
            .planner(planner.clone())
            .approver(RecordedApprover {
                verdicts: Mutex::new(verdicts),
            })
            .ids(RecordedIds {
                ids: Mutex::new(children),
            })
            .policy(policy)
            .resilience(shared.resilience.clone())
            .clock(ManualClock::starting_at(
                recorded
                    .entries()
                    .first()
                    .map_or(0, |e| e.at().as_unix_millis()),
            ))
            .max_depth(shared.config.max_depth)
            // The recorded batches fit; one call at a time serves each tool's outcomes in
            // the batch's order.
            .max_batch(shared.config.max_batch)
            .batch_concurrency(1)
            .inline_output_limit(usize::MAX);
        for name in planners {
            builder = builder.planner_named(name, planner.clone());
        }
        for hook in hooks {
            builder = builder.hook(hook);
        }
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
        let replayed = load_tree(&replayer, replayed, Missing::Skipped).await?;
        Ok(report(Some(&tree), Some(&replayed), &id, false))
    }

    pub(crate) async fn artifact_json(&self, id: &str) -> Result<Value, EngineError> {
        let id: rein_artifact::ArtifactId =
            id.parse().map_err(|e: rein_artifact::ArtifactIdError| {
                EngineError::ArtifactStore(rein_artifact::ArtifactError::InvalidId(e))
            })?;
        let (_, bytes) = self.shared().artifacts.get_boxed(&id).await?;
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

/// The report on a run the record and the replay have (one of them, for a child only one
/// side started), its children paired by the order they started.
fn report(
    recorded: Option<&LedgerTree>,
    replayed: Option<&LedgerTree>,
    run: &RunId,
    child: bool,
) -> ReplayReport {
    let outline =
        |t: Option<&LedgerTree>| t.map_or_else(|| RunOutline::of(&[]), |t| t.ledger.outline());
    let sides = match (recorded.is_some(), replayed.is_some()) {
        (true, false) => Sides::RecordedOnly,
        (false, true) => Sides::ReplayedOnly,
        _ => Sides::Both,
    };
    let (r, p) = (children_of(recorded), children_of(replayed));
    let children = (0..r.len().max(p.len()))
        .filter_map(|i| {
            let (a, b) = (r.get(i), p.get(i));
            let run = a.or(b)?.ledger.run_id();
            Some(report(a, b, run, true))
        })
        .collect();
    ReplayReport {
        recorded: outline(recorded),
        replayed: outline(replayed),
        run: run.clone(),
        children,
        sides,
        child,
    }
}

fn children_of(tree: Option<&LedgerTree>) -> &[LedgerTree] {
    tree.map_or(&[], |t| &t.children)
}

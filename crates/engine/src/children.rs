//! What a run's ledger says about its place in a tree of runs (its open child, its parent),
//! and what the tree entries do to a run: kept apart from the sub-run mechanism (subrun.rs)
//! so the projection and the driver hold this state without importing the driver's code.

use std::sync::Arc;

use rein_ledger::EntryKind;
use rein_run::{DynPlanner, EvidenceKind, LedgerHead, Run, RunId, Spend, Timestamp};

use crate::error::ProjectionError;

/// What a run's ledger says about its place in a tree (kept by the projection).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tree {
    /// The child started and not yet ended, if any.
    pub(crate) open: Option<OpenChild>,
    /// This run's parent, when it is a child.
    pub(crate) link: Option<ParentLink>,
}

/// A child the ledger shows started and not ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenChild {
    pub(crate) child: RunId,
    pub(crate) goal: String,
    pub(crate) carved: Spend,
    pub(crate) planner: Option<String>,
    /// Where its `child_started` entry is in this run's ledger, once sealed there.
    pub(crate) started: Option<LedgerHead>,
}

/// This run's parent, from its `child_of` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParentLink {
    pub(crate) depth: u32,
    pub(crate) planner: Option<String>,
}

impl Tree {
    /// This run's depth in its tree (the root is 0).
    pub(crate) fn depth(&self) -> u32 {
        self.link.as_ref().map_or(0, |l| l.depth)
    }
}

/// What the driver keeps for sub-runs: the planner a child is driven by, and a child to
/// settle first when the run was reopened with one open.
#[derive(Default)]
pub(crate) struct SubState {
    pub(crate) planner: Option<Arc<dyn DynPlanner>>,
    pub(crate) resume: Option<(OpenChild, Option<String>)>,
}

/// What the tree entries do to a run (called by the projection).
pub(crate) fn apply(
    tree: &mut Tree,
    run: &mut Run,
    kind: &EntryKind,
    at: Timestamp,
) -> Result<(), ProjectionError> {
    match kind {
        EntryKind::ChildStarted {
            child,
            goal,
            carved,
            planner,
        } => {
            if let Some(open) = &tree.open {
                return Err(ProjectionError::ChildMismatch {
                    open: Some(open.child.clone()),
                    entry: child.clone(),
                });
            }
            tree.open = Some(OpenChild {
                child: child.clone(),
                goal: goal.clone(),
                carved: carved.clone(),
                planner: planner.clone(),
                started: None,
            });
        }
        EntryKind::ChildEnded {
            child,
            outcome,
            spent,
            ..
        } => {
            if tree.open.as_ref().is_none_or(|open| open.child != *child) {
                return Err(ProjectionError::ChildMismatch {
                    open: tree.open.as_ref().map(|o| o.child.clone()),
                    entry: child.clone(),
                });
            }
            tree.open = None;
            // What the child spent is charged whatever the parent's limits say now: it was
            // spent, within the carve, and a budget never under-counts.
            let usage = run.usage_mut()?;
            for (name, &amount) in spent {
                let charge = usage.reserve(name, amount, None)?;
                usage.commit(charge);
            }
            run.add_evidence(
                EvidenceKind::Child {
                    child: child.clone(),
                    outcome: outcome.clone(),
                    spent: spent.clone(),
                },
                at,
            )?;
        }
        EntryKind::ChildOf { depth, planner, .. } => {
            tree.link = Some(ParentLink {
                depth: *depth,
                planner: planner.clone(),
            });
        }
        _ => {}
    }
    Ok(())
}

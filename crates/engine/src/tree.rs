//! `RunTree`: a run and the child runs it delegated to, each ledger verified and every link
//! between them checked (`Engine::verify_tree`).

use rein_ledger::EntryKind;
use rein_run::{RunId, RunStatus, Spend};

use crate::config::MAX_DEPTH_CEILING;
use crate::engine::Engine;
use crate::error::{EngineError, TreeError};
use crate::load::load_ledger;

/// A run and its children, as their ledgers link them, every ledger verified: from
/// [`Engine::verify_tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunTree {
    /// The run.
    pub id: RunId,
    /// Its status, as its ledger describes it.
    pub status: RunStatus,
    /// How many entries its ledger holds.
    pub entries: u64,
    /// What its parent charged for it when it ended (`None` for the root, and for a child
    /// not settled yet).
    pub spent: Option<Spend>,
    /// The children it delegated to, in the order they started.
    pub children: Vec<RunTree>,
}

impl RunTree {
    /// Every run of the tree, this one first, depth first.
    pub fn runs(&self) -> Box<dyn Iterator<Item = &Self> + '_> {
        Box::new(std::iter::once(self).chain(self.children.iter().flat_map(Self::runs)))
    }
}

impl Engine {
    /// Verifies run `id` and every child run below it: each ledger's hash chain; each
    /// parent's entries about its children ([`rein_ledger::ChildLink::of`]: a child starts
    /// once, ends at most once and after it started, nothing about a child after the parent
    /// ended); that each child's `child_of` names its parent's `child_started` entry; that
    /// each settled child's ledger ends exactly at the head its parent recorded.
    ///
    /// # Errors
    /// [`EngineError::TreeBroken`] naming the parent, the child and the broken link (a
    /// child whose end the parent recorded must be stored); or as
    /// [`Engine::ledger`] for any ledger of the tree.
    pub async fn verify_tree(&self, id: &RunId) -> Result<RunTree, EngineError> {
        verify(self, id, None, 0).await
    }
}

/// Verifies run `id`, `depth` levels below the run verified. Recursive, so bounded: no
/// tree rein grows is deeper than [`MAX_DEPTH_CEILING`], and ledgers that say otherwise
/// (runs naming each other as children, in a loop) are refused at it.
fn verify<'a>(
    engine: &'a Engine,
    id: &'a RunId,
    spent: Option<Spend>,
    depth: u32,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<RunTree, EngineError>> + Send + 'a>>
{
    Box::pin(async move {
        let ledger = engine.ledger(id).await?;
        ledger.verify().map_err(|source| {
            EngineError::LedgerStore(rein_ledger::LedgerStoreError::Broken {
                run_id: id.clone(),
                source,
            })
        })?;
        let links = ledger.child_links().map_err(|e| EngineError::TreeBroken {
            parent: id.clone(),
            child: e.child().clone(),
            reason: TreeError::Recorded(e),
        })?;
        let status = engine.load_run(id).await?.status();
        let mut children = Vec::new();
        for link in links {
            let child = &link.child;
            let broken = |reason| EngineError::TreeBroken {
                parent: id.clone(),
                child: child.clone(),
                reason,
            };
            let child_ledger = match load_ledger(engine.shared(), child).await {
                Ok(loaded) => loaded.loaded.ledger,
                // Started on record, never created: the process stopped in between, and
                // resuming the parent starts it.
                Err(EngineError::RunNotFound { .. }) if link.ended.is_none() => continue,
                Err(EngineError::RunNotFound { .. }) => return Err(broken(TreeError::Missing)),
                Err(e) => return Err(e),
            };
            if depth >= MAX_DEPTH_CEILING {
                return Err(broken(TreeError::TooDeep {
                    ceiling: MAX_DEPTH_CEILING,
                }));
            }
            let linked = child_ledger.entries().iter().any(|e| {
                matches!(e.event(), EntryKind::ChildOf { parent, parent_head, .. }
                    if parent == id && *parent_head == link.started)
            });
            if !linked {
                return Err(broken(TreeError::NotLinked {
                    started: link.started,
                }));
            }
            let spent = match link.ended {
                Some(end) => {
                    if child_ledger.head() != Some(end.head) {
                        return Err(broken(TreeError::HeadMismatch {
                            recorded: end.head,
                            found: child_ledger.head(),
                        }));
                    }
                    Some(end.spent)
                }
                None => None,
            };
            children.push(verify(engine, child, spent, depth + 1).await?);
        }
        Ok(RunTree {
            id: id.clone(),
            status,
            entries: ledger.len() as u64,
            spent,
            children,
        })
    })
}

//! Reading a conversation back: from a run, the `follow_up_of` links to the run that
//! started the conversation, each ledger verified, each link checked (the earlier ledger
//! ends exactly at the head the later one recorded; turns count down by one), and each
//! run rebuilt from its ledger for the planner's view.

use std::sync::Arc;

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{EarlierRun, LedgerHead, RunId};

use super::MAX_CONVERSATION_RUNS;
use crate::error::{ConversationError, EngineError};
use crate::load::load_ledger;
use crate::open;
use crate::shared::Shared;

/// The `follow_up_of` link a ledger records: the run it continues, that run's head, and
/// this run's turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) previous: RunId,
    pub(crate) previous_head: LedgerHead,
    pub(crate) turn: u32,
}

/// The `follow_up_of` link among a run's first entries, if the run follows up on one.
pub(crate) fn link_of(entries: &[Entry]) -> Option<Link> {
    // It is the second entry; a run rebuilt by hand may hold it a little later.
    entries.iter().take(4).find_map(|e| match e.event() {
        EntryKind::FollowUpOf {
            previous,
            previous_head,
            turn,
        } => Some(Link {
            previous: previous.clone(),
            previous_head: *previous_head,
            turn: *turn,
        }),
        _ => None,
    })
}

/// The run `ledger` records, rebuilt as a later run of its conversation shows it to its
/// planner: under the policy it recorded, with its dialogue.
pub(crate) fn earlier_run(shared: &Shared, ledger: &Ledger) -> Result<EarlierRun, EngineError> {
    let id = ledger.run_id();
    let (budget, _) = open::recorded_policy(shared, id, ledger)?;
    let proj = open::rebuild(id, ledger, budget)?;
    Ok(EarlierRun::new(proj.run, proj.dialogue))
}

/// A run of a conversation, read back: its ledger verified and its run rebuilt.
pub(crate) struct ChainRun {
    pub(crate) ledger: Ledger,
    pub(crate) earlier: EarlierRun,
}

/// The runs of the conversation that ends with run `last` (its ledger read too), oldest
/// first, each ledger verified and each link checked.
///
/// # Errors
/// [`ConversationError`] naming the run and the broken link, a run not found, a ledger that does not verify, or a conversation longer than
/// [`MAX_CONVERSATION_RUNS`].
pub(crate) async fn read(
    shared: &Arc<Shared>,
    last: &RunId,
) -> Result<Vec<ChainRun>, ConversationError> {
    let mut runs: Vec<ChainRun> = Vec::new();
    let mut id = last.clone();
    // What the run read before this one (the later one) recorded of this one.
    let mut expected: Option<(RunId, Link)> = None;
    loop {
        if runs.len() >= MAX_CONVERSATION_RUNS as usize {
            return Err(ConversationError::TooLong {
                limit: MAX_CONVERSATION_RUNS,
            });
        }
        let ledger = match load_ledger(shared, &id).await {
            Ok(loaded) => loaded.loaded.ledger,
            Err(EngineError::RunNotFound { .. }) => {
                return Err(match expected {
                    Some((later, _)) => ConversationError::Missing {
                        run: later,
                        previous: id,
                    },
                    None => ConversationError::NotFound { run: id },
                });
            }
            Err(source) => {
                return Err(ConversationError::Unverified {
                    run: id,
                    source: Box::new(source),
                });
            }
        };
        let unverified = |source: EngineError| ConversationError::Unverified {
            run: id.clone(),
            source: Box::new(source),
        };
        ledger.verify().map_err(|source| {
            unverified(EngineError::LedgerStore(
                rein_ledger::LedgerStoreError::Broken {
                    run_id: id.clone(),
                    source,
                },
            ))
        })?;
        let link = link_of(ledger.entries());
        if let Some((later, recorded)) = &expected {
            if ledger.head() != Some(recorded.previous_head) {
                return Err(ConversationError::HeadMismatch {
                    run: later.clone(),
                    previous: id,
                    recorded: recorded.previous_head,
                    found: ledger.head(),
                });
            }
            let turn = link.as_ref().map_or(0, |l| l.turn);
            if recorded.turn != turn.saturating_add(1) {
                return Err(ConversationError::TurnMismatch {
                    run: later.clone(),
                    previous: id,
                    recorded: recorded.turn,
                    found: turn,
                });
            }
        }
        let earlier = earlier_run(shared, &ledger).map_err(unverified)?;
        runs.push(ChainRun { ledger, earlier });
        match link {
            Some(link) => {
                let previous = link.previous.clone();
                expected = Some((std::mem::replace(&mut id, previous), link));
            }
            None => break,
        }
    }
    runs.reverse();
    Ok(runs)
}

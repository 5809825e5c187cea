//! `LedgerWriter`: the end of one run's ledger as the engine writes it — the chain, the
//! store, the subscribers — and nothing of what was written: the store keeps that.

use std::sync::Arc;

use rein_ledger::{Chain, Entry, EntryKind};
use rein_run::{LedgerHead, State, Timestamp};
use tokio::sync::broadcast;

use crate::error::EngineError;
use crate::events::RunEvent;
use crate::shared::Shared;

/// The end of one run's ledger as the engine writes it: seals each entry on the chain,
/// appends it to the store and tells subscribers. The recorder writes through it, and so
/// does a step's planning (`plan_link`) while the projection is lent to the planner.
pub(crate) struct LedgerWriter {
    pub(crate) shared: Arc<Shared>,
    chain: Chain,
    pub(crate) events: Option<broadcast::Sender<RunEvent>>,
}

impl LedgerWriter {
    pub(crate) const fn new(
        shared: Arc<Shared>,
        chain: Chain,
        events: Option<broadcast::Sender<RunEvent>>,
    ) -> Self {
        Self {
            shared,
            chain,
            events,
        }
    }

    /// Seals `kind` (recorded `at`, in `state`) as the chain's next entry, appends it to the
    /// store and tells subscribers; returns the entry.
    pub(crate) async fn append(
        &mut self,
        at: Timestamp,
        state: State,
        kind: EntryKind,
    ) -> Result<Entry, EngineError> {
        let entry = self.chain.seal(at, state, kind);
        // A store that can append without waiting does so here: no future, no allocation.
        match self.shared.ledgers.try_append_now_dyn(&entry) {
            Some(appended) => appended?,
            None => self.shared.ledgers.append_boxed(&entry).await?,
        }
        if let Some(events) = &self.events
            && events.receiver_count() > 0
        {
            let _ = events.send(RunEvent::Recorded(Arc::new(entry.clone())));
        }
        Ok(entry)
    }

    /// The number of entries the ledger has.
    pub(crate) const fn len(&self) -> u64 {
        self.chain.len()
    }

    /// The ledger's head; `None` before its first entry.
    pub(crate) fn head(&self) -> Option<LedgerHead> {
        self.chain.head()
    }
}

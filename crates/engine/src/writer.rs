//! `LedgerWriter`: the end of one run's ledger as the engine writes it — the chain, the
//! store, the subscribers — and nothing of what was written: the store keeps that.

use std::sync::Arc;

use rein_ledger::{Chain, Entry, EntryKind};
use rein_run::{LedgerHead, State, Timestamp};
use tokio::sync::broadcast;

use crate::error::EngineError;
use crate::events::{Published, Subscribers};
use crate::shared::Shared;

/// The end of one run's ledger as the engine writes it: seals each entry on the chain,
/// appends it to the store and tells subscribers. The recorder writes through it, and so
/// does a step's planning (`plan_link`) while the projection is lent to the planner.
pub(crate) struct LedgerWriter {
    pub(crate) shared: Arc<Shared>,
    chain: Chain,
    /// The run's subscribers, when it has a handle (shared with each step's meter, which
    /// publishes a streaming reply to them).
    pub(crate) events: Option<Arc<Subscribers>>,
}

impl LedgerWriter {
    pub(crate) fn new(
        shared: Arc<Shared>,
        chain: Chain,
        events: Option<broadcast::Sender<Published>>,
    ) -> Self {
        let events = events.map(|tx| Arc::new(Subscribers::new(tx, chain.run_id().clone())));
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
        match self.seal(at, state, kind)? {
            Sealed::Stored(entry) => Ok(entry),
            Sealed::Waiting(entry) => Box::pin(self.store(entry)).await,
        }
    }

    /// [`append`](Self::append)'s work as far as it goes without waiting: seals `kind` and,
    /// when the store can append it now (a memory store always can), appends it and tells
    /// subscribers. Synchronous, so the common path moves no future: a recorded entry is
    /// 300 bytes, and an `async` layer per step of the way would copy it, and itself, again.
    pub(crate) fn seal(
        &mut self,
        at: Timestamp,
        state: State,
        kind: EntryKind,
    ) -> Result<Sealed, EngineError> {
        let entry = self.chain.seal(at, state, kind);
        crate::telemetry::entry_recorded(&entry);
        match self.shared.ledgers.try_append_now_dyn(&entry) {
            Some(appended) => {
                appended?;
                self.tell(&entry);
                Ok(Sealed::Stored(entry))
            }
            None => Ok(Sealed::Waiting(entry)),
        }
    }

    /// Appends an entry [`seal`](Self::seal) left waiting for its store, and tells subscribers.
    pub(crate) async fn store(&mut self, entry: Entry) -> Result<Entry, EngineError> {
        self.shared.ledgers.append_boxed(&entry).await?;
        self.tell(&entry);
        Ok(entry)
    }

    fn tell(&self, entry: &Entry) {
        if let Some(events) = &self.events {
            events.recorded(entry);
        }
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

/// A sealed entry, and whether its store has it yet.
pub(crate) enum Sealed {
    /// Appended and told.
    Stored(Entry),
    /// The store must be waited for: [`LedgerWriter::store`] appends it.
    Waiting(Entry),
}

impl Sealed {
    /// The entry.
    pub(crate) const fn entry(&self) -> &Entry {
        match self {
            Self::Stored(entry) | Self::Waiting(entry) => entry,
        }
    }
}

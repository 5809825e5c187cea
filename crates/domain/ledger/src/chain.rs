//! `Chain`: the end of a run's hash chain — all that appending needs — without the entries.

use std::fmt;

use rein_run::{Digest, LedgerHead, RunId, State, Timestamp};

use crate::line::LineBuffer;
use crate::{Entry, EntryKind, Ledger};

/// Where a run's ledger ends: its run, how many entries it has, and the hash of the last.
///
/// A writer that hands each sealed [`Entry`] to a store needs no more than this to number,
/// link and seal the next one, so it need not keep the entries it wrote: the store keeps
/// them (a [`Ledger`] is the same chain with its entries in memory). Sealing through a
/// `Chain` gives exactly the entries [`Ledger::append`] gives.
///
/// ```
/// use rein_ledger::{Chain, EntryKind, Ledger};
/// use rein_run::{State, Timestamp};
///
/// let t = Timestamp::from_unix_millis(7);
/// let mut ledger = Ledger::new("run-1".parse()?);
/// ledger.append(t, State::Intake, EntryKind::Steering { note: "one".into() });
///
/// // Go on from where the ledger ends, without its entries.
/// let mut chain = ledger.chain();
/// let two = chain.seal(t, State::Intake, EntryKind::Steering { note: "two".into() });
/// assert_eq!((two.seq(), two.prev()), (2, ledger.last_hash()));
/// assert_eq!(chain.head(), Some(two.head()));
///
/// // The same entry as the ledger's own append.
/// let same = ledger.append(t, State::Intake, EntryKind::Steering { note: "two".into() });
/// assert_eq!(same, &two);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A chain seals its lines into one buffer of its own, reused from one entry to the next
/// once the previous entry is dropped (see [`SharedLine`](crate::SharedLine)): a writer
/// that hands each entry to its store and drops it makes no allocation per line. Two
/// chains are equal when they end at the same place; the buffer is not compared or cloned.
pub struct Chain {
    run_id: RunId,
    len: u64,
    last: Digest,
    buffer: LineBuffer,
}

impl Clone for Chain {
    fn clone(&self) -> Self {
        Self {
            run_id: self.run_id.clone(),
            len: self.len,
            last: self.last,
            buffer: LineBuffer::EMPTY,
        }
    }
}

impl PartialEq for Chain {
    fn eq(&self, other: &Self) -> bool {
        (&self.run_id, self.len, self.last) == (&other.run_id, other.len, other.last)
    }
}

impl Eq for Chain {}

#[expect(
    clippy::missing_fields_in_debug,
    reason = "the line buffer is the last entry's line, not part of where the chain ends"
)]
impl fmt::Debug for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chain")
            .field("run_id", &self.run_id)
            .field("len", &self.len)
            .field("last", &self.last)
            .finish()
    }
}

impl Chain {
    /// The chain of a ledger with no entries yet.
    #[must_use]
    pub const fn new(run_id: RunId) -> Self {
        Self {
            run_id,
            len: 0,
            last: Digest::ZERO,
            buffer: LineBuffer::EMPTY,
        }
    }

    /// Records `event`, happened `at` while the run was in `state`: numbers the entry, links
    /// it to the last one, seals it, and moves the chain's end to it.
    #[inline]
    pub fn seal(&mut self, at: Timestamp, state: State, event: EntryKind) -> Entry {
        let entry = Entry::seal_into(
            &mut self.buffer,
            self.len + 1,
            at,
            self.run_id.clone(),
            state,
            event,
            self.last,
        );
        self.len = entry.seq();
        self.last = entry.hash();
        entry
    }

    /// The run this chain records.
    #[must_use]
    pub const fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The number of entries sealed so far (the last one's sequence number).
    #[must_use]
    pub const fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing has been sealed yet.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The head: the last entry's sequence number and hash; `None` before the first.
    #[must_use]
    pub fn head(&self) -> Option<LedgerHead> {
        (self.len > 0).then(|| LedgerHead::new(self.len, self.last))
    }
}

impl Ledger {
    /// Where this ledger ends, to go on appending without its entries (see [`Chain`]).
    #[must_use]
    pub fn chain(&self) -> Chain {
        Chain {
            run_id: self.run_id().clone(),
            len: self.len() as u64,
            last: self.last_hash(),
            buffer: LineBuffer::EMPTY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_seals_what_the_ledger_appends() {
        let t = Timestamp::from_unix_millis(3);
        let mut ledger = Ledger::new("r".parse().unwrap());
        let mut chain = Chain::new("r".parse().unwrap());
        assert_eq!((chain.head(), chain.is_empty()), (None, true));
        for i in 0..5 {
            let kind = EntryKind::Steering {
                note: format!("note {i}"),
            };
            let sealed = chain.seal(t, State::Explore, kind.clone());
            assert_eq!(ledger.append(t, State::Explore, kind), &sealed);
            assert_eq!(ledger.chain(), chain);
        }
        assert_eq!(chain.len(), 5);
        assert_eq!(chain.head(), ledger.head());
        ledger.verify().unwrap();
    }

    #[test]
    fn a_line_still_held_is_never_overwritten() {
        let t = Timestamp::from_unix_millis(3);
        let mut ledger = Ledger::new("r".parse().unwrap());
        let mut chain = Chain::new("r".parse().unwrap());
        let kind = |i: usize| EntryKind::Steering {
            note: format!("note {i}"),
        };
        // Dropped at once: the next entry reuses the buffer.
        drop(chain.seal(t, State::Explore, kind(0)));
        ledger.append(t, State::Explore, kind(0));
        // Held, the lines of the entries sealed after them are their own.
        let held: Vec<Entry> = (1..4)
            .map(|i| chain.seal(t, State::Explore, kind(i)))
            .collect();
        for (i, entry) in (1..4).zip(&held) {
            assert_eq!(ledger.append(t, State::Explore, kind(i)), entry);
            assert_eq!(entry.json_line(), ledger.entries()[i].json_line());
        }
        drop(held);
        let last = chain.seal(t, State::Explore, kind(4));
        assert_eq!(ledger.append(t, State::Explore, kind(4)), &last);
        ledger.verify().unwrap();
    }
}

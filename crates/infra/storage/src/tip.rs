//! `Tip`: the end of a stored ledger chain, and the check that an appended entry follows it.

use std::io;

use rein_ledger::{Entry, LedgerStoreError};
use rein_run::Digest;

/// Where an entry sits in its chain: what a store needs to check an append, without the
/// entry's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    seq: u64,
    prev: Digest,
    hash: Digest,
}

impl Link {
    /// The link of `entry`.
    pub(crate) fn of(entry: &Entry) -> Self {
        Self {
            seq: entry.seq(),
            prev: entry.prev(),
            hash: entry.hash(),
        }
    }

    /// The entry's sequence number.
    pub(crate) const fn seq(&self) -> u64 {
        self.seq
    }
}

/// Where a run's stored chain ends: the number and `prev` the next entry must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tip {
    /// The number the next entry must carry (1 for an empty ledger).
    pub(crate) next_seq: u64,
    /// The hash the next entry must link to ([`Digest::ZERO`] for an empty ledger).
    pub(crate) last_hash: Digest,
}

impl Tip {
    /// The tip of an empty ledger.
    pub(crate) const EMPTY: Self = Self {
        next_seq: 1,
        last_hash: Digest::ZERO,
    };

    /// The tip after the entry linked by `link`.
    pub(crate) const fn after(link: Link) -> Self {
        Self {
            next_seq: link.seq.saturating_add(1),
            last_hash: link.hash,
        }
    }

    /// Checks that `link` continues the chain here; `location` names the ledger (called only
    /// when the check fails).
    ///
    /// The port allows stores to skip this check; the stores here make it because it is
    /// nearly free and it stops a second writer (a stale engine, a second process) from
    /// forking a run's chain on disk.
    pub(crate) fn check(
        &self,
        link: Link,
        location: impl FnOnce() -> String,
    ) -> Result<(), LedgerStoreError> {
        if link.seq == self.next_seq && link.prev == self.last_hash {
            return Ok(());
        }
        let (seq, last) = (link.seq, self.next_seq.saturating_sub(1));
        let why = if seq == self.next_seq && last == 0 {
            format!("entry {seq} starts the ledger but does not link to the zero hash")
        } else if seq == self.next_seq {
            format!("entry {seq} does not link to the hash of entry {last}")
        } else if last == 0 {
            format!("entry {seq} cannot start a ledger, entry 1 must")
        } else {
            format!("entry {seq} does not follow the last stored entry, {last}")
        };
        Err(LedgerStoreError::Io {
            context: format!("appending entry {seq} to {}", location()),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{why}; only the run's own ledger may append to it, is another writer \
                     appending to this run?"
                ),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use rein_ledger::{EntryKind, Ledger};
    use rein_run::{State, Timestamp};

    use super::*;

    fn ledger(run: &str, notes: &[&str]) -> Ledger {
        let mut ledger = Ledger::new(run.parse().unwrap());
        for note in notes {
            let event = EntryKind::Steering {
                note: (*note).into(),
            };
            ledger.append(Timestamp::from_unix_millis(0), State::Intake, event);
        }
        ledger
    }

    /// Checks entry `index` of `ledger` against `tip`; `Ok` or the error's message.
    fn check(tip: Tip, ledger: &Ledger, index: usize) -> Result<(), String> {
        tip.check(Link::of(&ledger.entries()[index]), || "L".to_owned())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn only_the_next_linked_entry_follows() {
        let chain = ledger("r", &["a", "b", "c"]);
        let other = ledger("r", &["x", "y"]);
        let after_first = Tip::after(Link::of(&chain.entries()[0]));
        assert_eq!(check(Tip::EMPTY, &chain, 0), Ok(()));
        assert_eq!(check(after_first, &chain, 1), Ok(()));
        let refused = |result: Result<(), String>, needle: &str| {
            let message = result.unwrap_err();
            assert!(
                message.starts_with("ledger store failed while appending entry"),
                "{message}"
            );
            assert!(message.contains(needle), "{message}");
        };
        refused(
            check(after_first, &chain, 2),
            "entry 3 does not follow the last stored entry, 1",
        );
        refused(
            check(after_first, &chain, 0),
            "entry 1 does not follow the last stored entry, 1",
        );
        refused(
            check(after_first, &other, 1),
            "entry 2 does not link to the hash of entry 1",
        );
        refused(
            check(Tip::EMPTY, &chain, 1),
            "entry 2 cannot start a ledger",
        );
    }
}

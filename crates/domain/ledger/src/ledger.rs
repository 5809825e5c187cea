//! The `Ledger` aggregate: a run's append-only hash chain, and how it is verified.

use rein_run::{Digest, LedgerHead, RunId, State, Timestamp};
use serde::{Deserialize, Serialize};

use crate::{Entry, EntryKind, Problem, VerifyError};

/// The audit trail of one run: entries numbered from 1, each holding the hash of the one
/// before it and sealed with its own.
///
/// The only change a ledger allows is [`append`](Self::append): there is no way to remove,
/// edit or reorder an entry. A ledger read back from storage is rebuilt with
/// [`from_entries`](Self::from_entries), which verifies the whole chain first; deserializing
/// a `Ledger` verifies it too.
///
/// ```
/// use rein_ledger::{EntryKind, Ledger, Problem};
/// use rein_run::{State, Timestamp};
///
/// let t = Timestamp::from_unix_millis(1_700_000_000_000);
/// let mut ledger = Ledger::new("run-1".parse()?);
/// ledger.append(t, State::Intake, EntryKind::Steering { note: "one".into() });
/// ledger.append(t, State::Intake, EntryKind::Steering { note: "two".into() });
/// assert_eq!(ledger.len(), 2);
/// assert_eq!(ledger.entries()[1].prev(), ledger.entries()[0].hash());
/// ledger.verify()?;
///
/// // Dropping the first entry is found, and located.
/// let rest = ledger.entries()[1..].to_vec();
/// let err = Ledger::from_entries(ledger.run_id().clone(), rest).unwrap_err();
/// assert_eq!((err.seq, err.problem), (1, Problem::Dropped { missing: 1 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # What verification can and cannot see
///
/// Verification detects any single edited, dropped, reordered or inserted entry *inside*
/// the chain. The chain alone cannot tell that entries were cut from its end, or that its
/// last entry was rewritten and re-hashed (or a well-formed entry appended): a prefix of
/// a valid chain is missing no link. To catch those, record the [`head`](Self::head)
/// elsewhere and check later that the ledger still [`reaches`](Self::reaches) it — the
/// engine records it in every run snapshot it saves. What was appended after the recorded
/// head stays as unprovable as before.
///
/// ```
/// use rein_ledger::{EntryKind, Ledger};
/// use rein_run::{State, Timestamp};
///
/// let t = Timestamp::from_unix_millis(0);
/// let mut ledger = Ledger::new("run-1".parse()?);
/// for note in ["one", "two", "three"] {
///     ledger.append(t, State::Intake, EntryKind::Steering { note: note.into() });
/// }
/// let head = ledger.head().expect("three entries");
/// let cut = Ledger::from_entries(ledger.run_id().clone(), ledger.entries()[..2].to_vec())?;
/// cut.verify()?; // a shorter chain verifies …
/// assert!(!cut.reaches(&head)); // … but no longer reaches the head recorded before
/// assert!(ledger.reaches(&head));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LedgerRepr", deny_unknown_fields)]
pub struct Ledger {
    run_id: RunId,
    entries: Vec<Entry>,
}

impl Ledger {
    /// An empty ledger for `run_id`.
    #[must_use]
    pub const fn new(run_id: RunId) -> Self {
        Self {
            run_id,
            entries: Vec::new(),
        }
    }

    /// Rebuilds a ledger from stored entries, after verifying them.
    ///
    /// # Errors
    /// [`VerifyError`] at the first broken sequence number when the entries are not an
    /// untouched chain of `run_id` (see [`Ledger::verify_entries`]).
    pub fn from_entries(run_id: RunId, entries: Vec<Entry>) -> Result<Self, VerifyError> {
        Self::verify_entries(&run_id, &entries)?;
        Ok(Self { run_id, entries })
    }

    /// Records `event`, happened `at` while the run was in `state`: numbers the entry, links
    /// it to the last one and seals it. Returns the new entry (for the store to append).
    pub fn append(&mut self, at: Timestamp, state: State, event: EntryKind) -> &Entry {
        let seq = self.entries.len() as u64 + 1;
        let entry = Entry::seal(seq, at, self.run_id.clone(), state, event, self.last_hash());
        self.entries.push(entry);
        &self.entries[self.entries.len() - 1]
    }

    /// The run this ledger records.
    #[must_use]
    pub const fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// Every entry, oldest first; `entries()[i].seq() == i + 1`.
    #[must_use]
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The number of entries.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing has been recorded yet.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The hash of the last entry (what the next entry will link to); [`Digest::ZERO`] for
    /// an empty ledger. Recorded elsewhere, it anchors the end of the chain.
    #[must_use]
    pub fn last_hash(&self) -> Digest {
        self.entries.last().map_or(Digest::ZERO, Entry::hash)
    }

    /// The head: the last entry's sequence number and hash; `None` for an empty ledger.
    #[must_use]
    pub fn head(&self) -> Option<LedgerHead> {
        self.entries.last().map(Entry::head)
    }

    /// Whether this ledger holds the entry `head` names: an entry numbered `head.seq` whose
    /// hash is `head.hash`. A ledger cut before that entry, or rewritten from it on, does not.
    #[must_use]
    pub fn reaches(&self, head: &LedgerHead) -> bool {
        Self::entries_reach(&self.entries, head)
    }

    /// As [`Ledger::reaches`], for entries read but not (yet) made into a ledger: whether
    /// `entries` (numbered from 1, as a verified chain is) hold the entry `head` names.
    #[must_use]
    pub fn entries_reach(entries: &[Entry], head: &LedgerHead) -> bool {
        usize::try_from(head.seq)
            .ok()
            .and_then(|seq| seq.checked_sub(1))
            .and_then(|index| entries.get(index))
            .is_some_and(|entry| entry.head() == *head)
    }

    /// Checks the whole chain again.
    ///
    /// # Errors
    /// [`VerifyError`] at the first broken sequence number (see [`Ledger::verify_entries`]).
    pub fn verify(&self) -> Result<(), VerifyError> {
        Self::verify_entries(&self.run_id, &self.entries)
    }

    /// Checks that `entries` are an untouched hash chain of run `run_id`: entry `i` (from 0)
    /// is numbered `i + 1`, belongs to `run_id`, matches its own hash, and links to the hash
    /// of entry `i - 1` (to [`Digest::ZERO`] for the first).
    ///
    /// # Errors
    /// [`VerifyError`] naming the first broken sequence number and the [`Problem`] there:
    /// - an entry of another run: [`Problem::WrongRun`];
    /// - an entry whose hash does not match its content: [`Problem::Edited`];
    /// - a wrong number: [`Problem::Inserted`] if it goes backwards or the number appears
    ///   again later (a duplicate), else [`Problem::Reordered`] if the expected entry
    ///   appears later, else [`Problem::Dropped`]; but a wrong number on an entry that
    ///   links in and is followed by the next number is [`Problem::BrokenLink`] (the
    ///   number was rewritten and re-hashed);
    /// - a right number but a `prev` that does not link: [`Problem::BrokenLink`] at the
    ///   entry that was rewritten — the previous one if the next entry links to this one
    ///   (or this is the last), this one if the next entry does not link to it — and
    ///   [`Problem::Inserted`] if the next entry links to the previous one, skipping it.
    ///
    /// A forged entry that carries the expected number and links correctly is seen only at
    /// the entry after it, whose number then repeats: the forged entry itself is a
    /// well-formed link, and only what follows proves that it was not there before.
    pub fn verify_entries(run_id: &RunId, entries: &[Entry]) -> Result<(), VerifyError> {
        let mut link = Digest::ZERO;
        for (index, entry) in entries.iter().enumerate() {
            if let Some(error) = check(run_id, entries, index, link) {
                return Err(error);
            }
            link = entry.hash();
        }
        Ok(())
    }
}

/// Checks the entry at `index`, given that every entry before it passed and the last of
/// them has hash `link`. `None` when it is in order.
fn check(run_id: &RunId, entries: &[Entry], index: usize, link: Digest) -> Option<VerifyError> {
    let entry = &entries[index];
    let seq = index as u64 + 1;
    let broken = |seq, problem| Some(VerifyError { seq, problem });

    if entry.run_id() != run_id {
        return broken(
            seq,
            Problem::WrongRun {
                found: entry.run_id().clone(),
            },
        );
    }
    if entry.computed_hash() != entry.hash() {
        return broken(seq, Problem::Edited);
    }
    let links_in = entry.prev() == link;
    let next = entries.get(index + 1);

    let found = entry.seq();
    if found != seq {
        // In its place (links in, the next number follows) with another number: rewritten.
        if links_in && next.is_none_or(|next| next.seq() == seq + 1) {
            return broken(seq, Problem::BrokenLink);
        }
        let later = &entries[index + 1..];
        let problem = if found < seq || later.iter().any(|e| e.seq() == found) {
            Problem::Inserted { found }
        } else if later.iter().any(|e| e.seq() == seq) {
            Problem::Reordered { found }
        } else {
            Problem::Dropped { missing: seq }
        };
        return broken(seq, problem);
    }
    if links_in {
        return None;
    }
    // The right number, matching its own hash, but not linked to the entry before it.
    match next {
        // The next entry vouches for this one: the previous entry was rewritten (or, for the
        // first entry, the chain does not start at zero).
        Some(next) if next.prev() == entry.hash() => {
            broken(seq.saturating_sub(1).max(1), Problem::BrokenLink)
        }
        // The last entry: a rewritten previous entry and a rewritten `prev` here look the
        // same; the earlier is reported.
        None => broken(seq.saturating_sub(1).max(1), Problem::BrokenLink),
        // The chain links around this entry: it was slipped in.
        Some(next) if next.prev() == link => broken(seq, Problem::Inserted { found }),
        // Linked to neither neighbour: this entry was rewritten.
        Some(_) => broken(seq, Problem::BrokenLink),
    }
}

/// The serialized form of a [`Ledger`], verified on the way in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerRepr {
    run_id: RunId,
    entries: Vec<Entry>,
}

impl TryFrom<LedgerRepr> for Ledger {
    type Error = VerifyError;
    fn try_from(repr: LedgerRepr) -> Result<Self, Self::Error> {
        Self::from_entries(repr.run_id, repr.entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(n: usize) -> Ledger {
        let mut ledger = Ledger::new("r".parse().unwrap());
        for i in 0..n {
            ledger.append(
                Timestamp::from_unix_millis(i as u64),
                State::Explore,
                EntryKind::Steering {
                    note: format!("note {i}"),
                },
            );
        }
        ledger
    }

    #[test]
    fn append_numbers_links_and_seals() {
        let l = ledger(3);
        assert_eq!(l.entries()[0].prev(), Digest::ZERO);
        for (i, e) in l.entries().iter().enumerate() {
            assert_eq!(e.seq(), i as u64 + 1);
            assert_eq!(e.hash(), e.computed_hash());
            if i > 0 {
                assert_eq!(e.prev(), l.entries()[i - 1].hash());
            }
        }
        assert_eq!(l.last_hash(), l.entries()[2].hash());
        assert_eq!(Ledger::new("r".parse().unwrap()).last_hash(), Digest::ZERO);
        l.verify().unwrap();
    }

    #[test]
    fn a_first_entry_not_linked_to_zero_is_a_broken_link_at_1() {
        let l = ledger(3);
        // A chain that starts from the middle of another (its first two entries cut, the
        // third renumbered and re-sealed on its old prev).
        let e = &l.entries()[2];
        let cut = Entry::seal(
            1,
            e.at(),
            e.run_id().clone(),
            e.state(),
            e.event().clone(),
            e.prev(),
        );
        let err = Ledger::verify_entries(l.run_id(), &[cut]).unwrap_err();
        assert_eq!((err.seq, err.problem), (1, Problem::BrokenLink));
    }
}

//! `ChainVerifier`: verifies a ledger's hash chain entry by entry, as it is read, holding
//! two entries at most — the streaming twin of [`Ledger::verify_entries`], with the same
//! verdicts.

use rein_run::{Digest, LedgerHead, RunId};

use crate::{Entry, Problem, VerifyError};

/// Verifies a hash chain fed one entry at a time, in bounded memory.
///
/// [`Ledger::verify_entries`](crate::Ledger::verify_entries) needs every entry in memory;
/// this needs the one being checked and the one after it (which says whether a broken link
/// is the entry's fault or its predecessor's), so a ledger of any length verifies in the
/// memory of its two largest entries. Its verdict is the same, problem for problem: after a
/// wrongly numbered entry it goes on reading only the numbers of the entries after it, to
/// tell an inserted entry from a reordered or a dropped one.
///
/// ```
/// use rein_ledger::{ChainVerifier, EntryKind, Ledger};
/// use rein_run::{State, Timestamp};
///
/// let mut ledger = Ledger::new("run-1".parse()?);
/// for note in ["a", "b", "c"] {
///     ledger.append(Timestamp::from_unix_millis(0), State::Intake, EntryKind::Steering { note: note.into() });
/// }
/// let mut verifier = ChainVerifier::new(ledger.run_id().clone());
/// for entry in ledger.entries() {
///     verifier.push(entry.clone());
/// }
/// let verified = verifier.finish();
/// assert_eq!(verified.result, Ok(()));
/// assert_eq!((verified.count, verified.head), (3, ledger.head()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ChainVerifier {
    run_id: RunId,
    /// The entry waiting for the one after it before it can be judged.
    pending: Option<Entry>,
    /// How many entries were judged in order, and the hash of the last of them.
    checked: u64,
    link: Digest,
    count: u64,
    last: Option<LedgerHead>,
    anchor: Option<Anchor>,
    verdict: Verdict,
}

/// What a [`ChainVerifier`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// `Ok` when the chain is intact; else the first broken sequence number and its problem,
    /// exactly as [`Ledger::verify_entries`](crate::Ledger::verify_entries) names them.
    pub result: Result<(), VerifyError>,
    /// How many entries were fed.
    pub count: u64,
    /// The last entry fed: its sequence number and hash.
    pub head: Option<LedgerHead>,
    /// Whether the entry at the anchor's sequence number has the anchor's hash (`None`
    /// without an anchor): see [`ChainVerifier::with_anchor`].
    pub reaches: Option<bool>,
}

/// A head the ledger must reach, and whether the entry at its number matched it.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    head: LedgerHead,
    reached: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Intact,
    Broken(VerifyError),
    /// Entry `seq` carries number `found`: what it is depends on the numbers after it.
    Misnumbered {
        seq: u64,
        found: u64,
        found_later: bool,
        expected_later: bool,
    },
}

impl ChainVerifier {
    /// A verifier of the chain of run `run_id`.
    #[must_use]
    pub const fn new(run_id: RunId) -> Self {
        Self {
            run_id,
            pending: None,
            checked: 0,
            link: Digest::ZERO,
            count: 0,
            last: None,
            anchor: None,
            verdict: Verdict::Intact,
        }
    }

    /// Also checks whether the chain reaches `head` (holds an entry with its number and
    /// hash), as [`Ledger::entries_reach`](crate::Ledger::entries_reach) does.
    #[must_use]
    pub const fn with_anchor(mut self, head: LedgerHead) -> Self {
        self.anchor = Some(Anchor {
            head,
            reached: false,
        });
        self
    }

    /// Feeds the next entry, in file order.
    pub fn push(&mut self, entry: Entry) {
        self.count += 1;
        let head = entry.head();
        self.last = Some(head);
        if let Some(anchor) = &mut self.anchor
            && anchor.head.seq == self.count
        {
            anchor.reached = head == anchor.head;
        }
        match &mut self.verdict {
            Verdict::Broken(_) => {}
            Verdict::Misnumbered {
                seq,
                found,
                found_later,
                expected_later,
            } => {
                *found_later |= entry.seq() == *found;
                *expected_later |= entry.seq() == *seq;
            }
            Verdict::Intact => {
                if let Some(previous) = self.pending.take() {
                    self.judge(&previous, Some(&entry));
                }
                if self.verdict == Verdict::Intact {
                    self.pending = Some(entry);
                } else if let Verdict::Misnumbered {
                    seq,
                    found,
                    found_later,
                    expected_later,
                } = &mut self.verdict
                {
                    // The entry after the misnumbered one is the first of those after it.
                    *found_later |= entry.seq() == *found;
                    *expected_later |= entry.seq() == *seq;
                }
            }
        }
    }

    /// Ends the chain: judges the last entry and gives the verdict.
    #[must_use]
    pub fn finish(mut self) -> Verified {
        if let Some(last) = self.pending.take() {
            self.judge(&last, None);
        }
        let result = match self.verdict {
            Verdict::Intact => Ok(()),
            Verdict::Broken(error) => Err(error),
            Verdict::Misnumbered {
                seq,
                found,
                found_later,
                expected_later,
            } => {
                let problem = if found < seq || found_later {
                    Problem::Inserted { found }
                } else if expected_later {
                    Problem::Reordered { found }
                } else {
                    Problem::Dropped { missing: seq }
                };
                Err(VerifyError { seq, problem })
            }
        };
        Verified {
            result,
            count: self.count,
            head: self.last,
            reaches: self.anchor.map(|a| a.reached),
        }
    }

    /// Judges `entry`, the next in order, knowing the one after it: the check of
    /// `Ledger::verify_entries`, entry for entry.
    fn judge(&mut self, entry: &Entry, next: Option<&Entry>) {
        let seq = self.checked + 1;
        let link = self.link;
        let broken = |seq, problem| Verdict::Broken(VerifyError { seq, problem });
        self.verdict = if entry.run_id() != &self.run_id {
            broken(
                seq,
                Problem::WrongRun {
                    found: entry.run_id().clone(),
                },
            )
        } else if entry.computed_hash() != entry.hash() {
            broken(seq, Problem::Edited)
        } else {
            let links_in = entry.prev() == link;
            let found = entry.seq();
            if found != seq {
                if links_in && next.is_none_or(|next| next.seq() == seq + 1) {
                    broken(seq, Problem::BrokenLink)
                } else {
                    Verdict::Misnumbered {
                        seq,
                        found,
                        found_later: false,
                        expected_later: false,
                    }
                }
            } else if links_in {
                Verdict::Intact
            } else {
                match next {
                    Some(next) if next.prev() == entry.hash() => {
                        broken(seq.saturating_sub(1).max(1), Problem::BrokenLink)
                    }
                    None => broken(seq.saturating_sub(1).max(1), Problem::BrokenLink),
                    Some(next) if next.prev() == link => broken(seq, Problem::Inserted { found }),
                    Some(_) => broken(seq, Problem::BrokenLink),
                }
            }
        };
        if self.verdict == Verdict::Intact {
            self.checked = seq;
            self.link = entry.hash();
        }
    }
}

#[cfg(test)]
mod tests {
    use rein_run::{State, Timestamp};

    use super::*;
    use crate::{EntryKind, Ledger};

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

    fn streamed(run: &RunId, entries: &[Entry]) -> Result<(), VerifyError> {
        let mut verifier = ChainVerifier::new(run.clone());
        for entry in entries {
            verifier.push(entry.clone());
        }
        let verified = verifier.finish();
        assert_eq!(verified.count, entries.len() as u64);
        verified.result
    }

    fn reseal(entry: &Entry, seq: u64, prev: Digest) -> Entry {
        Entry::seal(
            seq,
            entry.at(),
            entry.run_id().clone(),
            entry.state(),
            entry.event().clone(),
            prev,
        )
    }

    /// Every way of breaking a short chain gets the verdict the in-memory check gives.
    #[test]
    fn every_tampering_gets_the_in_memory_verdict() {
        let l = ledger(6);
        let e = l.entries().to_vec();
        let other = {
            let mut o = Ledger::new("other".parse().unwrap());
            o.append(
                Timestamp::from_unix_millis(0),
                State::Intake,
                EntryKind::Steering { note: "x".into() },
            );
            o.entries()[0].clone()
        };
        let edited: Entry = {
            let mut v = serde_json::to_value(&e[2]).unwrap();
            v["event"]["note"] = "changed".into();
            serde_json::from_value(v).unwrap()
        };
        let mut cases: Vec<Vec<Entry>> = vec![
            e.clone(),
            Vec::new(),
            e[..1].to_vec(),
            vec![e[0].clone(), e[2].clone(), e[3].clone()],
            vec![e[0].clone(), e[2].clone(), e[1].clone(), e[3].clone()],
            vec![e[0].clone(), e[1].clone(), e[1].clone(), e[2].clone()],
            vec![e[0].clone(), e[1].clone(), e[2].clone(), e[1].clone()],
            vec![e[0].clone(), other, e[1].clone()],
            vec![e[0].clone(), e[1].clone(), edited, e[3].clone()],
            vec![reseal(&e[3], 1, e[3].prev())],
            vec![e[0].clone(), reseal(&e[1], 2, Digest::ZERO), e[2].clone()],
            vec![e[0].clone(), reseal(&e[1], 7, e[0].hash()), e[2].clone()],
            vec![e[0].clone(), e[1].clone(), reseal(&e[2], 3, e[0].hash())],
            vec![e[0].clone(), reseal(&e[4], 2, e[0].hash()), e[1].clone()],
            e[1..].to_vec(),
            e[..5].iter().rev().cloned().collect(),
        ];
        // Each entry dropped in turn, and each pair swapped.
        for i in 0..e.len() {
            let mut dropped = e.clone();
            dropped.remove(i);
            cases.push(dropped);
            if i + 1 < e.len() {
                let mut swapped = e.clone();
                swapped.swap(i, i + 1);
                cases.push(swapped);
            }
        }
        for (i, case) in cases.iter().enumerate() {
            assert_eq!(
                streamed(l.run_id(), case),
                Ledger::verify_entries(l.run_id(), case),
                "case {i}"
            );
        }
    }

    #[test]
    fn the_anchor_is_reached_only_by_its_entry() {
        let l = ledger(4);
        let check = |head: LedgerHead| {
            let mut verifier = ChainVerifier::new(l.run_id().clone()).with_anchor(head);
            l.entries().iter().for_each(|e| verifier.push(e.clone()));
            verifier.finish().reaches
        };
        assert_eq!(check(l.entries()[2].head()), Some(true));
        assert_eq!(
            check(LedgerHead::new(3, l.entries()[1].hash())),
            Some(false)
        );
        assert_eq!(check(LedgerHead::new(9, l.last_hash())), Some(false));
        // The same answer as the in-memory check, for every head of the ledger and a few
        // that are not.
        let heads = l.entries().iter().map(Entry::head).chain([
            LedgerHead::new(0, Digest::ZERO),
            LedgerHead::new(2, l.last_hash()),
        ]);
        for head in heads {
            assert_eq!(Some(Ledger::entries_reach(l.entries(), &head)), check(head));
        }
    }
}

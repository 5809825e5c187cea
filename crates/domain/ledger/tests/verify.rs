//! Verification: a ledger verifies iff it is untouched, and a broken one is located.
//!
//! Every case goes through `check(entries, expect)`. Tampering works on the entries' JSON,
//! the way a stored ledger is really changed.

mod common;

use common::{edit, entry_kind, from_lines, ledger, reseal, run_id};
use proptest::prelude::*;
use rein_ledger::{ChainVerifier, Entry, EntryKind, Ledger, Problem, VerifyError};
use rein_run::{Digest, RunId, State, Timestamp};
use serde_json::json;

/// Verifies `entries` as a ledger of the test run, through every entry point: in memory,
/// and streamed entry by entry through a `ChainVerifier` (same verdict, problem for problem).
fn check(entries: &[Entry], expect: Result<(), VerifyError>) -> Result<(), TestCaseError> {
    let verified = Ledger::verify_entries(&run_id(), entries);
    prop_assert_eq!(&verified, &expect);
    let mut streaming = ChainVerifier::new(run_id());
    entries.iter().for_each(|e| streaming.push(e.clone()));
    let streamed = streaming.finish();
    prop_assert_eq!(&streamed.result, &expect);
    prop_assert_eq!(streamed.count, entries.len() as u64);
    prop_assert_eq!(streamed.head, entries.last().map(Entry::head));
    let rebuilt = Ledger::from_entries(run_id(), entries.to_vec());
    prop_assert_eq!(rebuilt.map(|l| l.verify()), expect.map(|()| Ok(())));
    Ok(())
}

fn broken(seq: u64, problem: Problem) -> Result<(), VerifyError> {
    Err(VerifyError { seq, problem })
}

/// A field of an entry a tamperer can change.
#[derive(Debug, Clone, Copy)]
enum Field {
    Seq,
    At,
    RunId,
    State,
    Event,
    Prev,
    Hash,
}

/// One change to a stored ledger. Indices are raw and reduced to the ledger's length.
#[derive(Debug, Clone)]
enum Tamper {
    /// Change `field` of one entry; `reseal` recomputes that entry's own hash afterwards.
    Edit {
        index: usize,
        field: Field,
        reseal: bool,
        value: u64,
        event: EntryKind,
    },
    /// Remove one entry.
    Drop { index: usize },
    /// Swap two adjacent entries.
    Swap { index: usize },
    /// Insert a copy of an existing entry.
    Duplicate { of: usize, at: usize },
    /// Insert a forged entry with a correct hash; `linked` gives it the right `prev`,
    /// otherwise an arbitrary one.
    Forge {
        at: usize,
        linked: bool,
        prev: u64,
        event: EntryKind,
    },
}

fn tamper() -> impl Strategy<Value = Tamper> {
    let field = prop::sample::select(vec![
        Field::Seq,
        Field::At,
        Field::RunId,
        Field::State,
        Field::Event,
        Field::Prev,
        Field::Hash,
    ]);
    let index = any::<usize>();
    prop_oneof![
        (index, field, any::<bool>(), any::<u64>(), entry_kind()).prop_map(
            |(index, field, reseal, value, event)| {
                // Re-sealing a changed hash is no change at all.
                let reseal = reseal && !matches!(field, Field::Hash);
                Tamper::Edit {
                    index,
                    field,
                    reseal,
                    value,
                    event,
                }
            }
        ),
        index.prop_map(|index| Tamper::Drop { index }),
        index.prop_map(|index| Tamper::Swap { index }),
        (index, index).prop_map(|(of, at)| Tamper::Duplicate { of, at }),
        (index, any::<bool>(), any::<u64>(), entry_kind()).prop_map(|(at, linked, prev, event)| {
            Tamper::Forge {
                at,
                linked,
                prev,
                event,
            }
        }),
    ]
}

/// Applies `tamper` to `ledger`: the entries a store would then hold, and the error that
/// verification must report. `None` when the change does not apply to a ledger this short,
/// or is one the chain alone cannot see (see `tail_changes_need_an_anchor`).
fn apply(ledger: &Ledger, tamper: &Tamper) -> Option<(Vec<Entry>, Result<(), VerifyError>)> {
    let mut entries = ledger.entries().to_vec();
    let len = entries.len();
    let seq_at = |i: usize| i as u64 + 1;
    let expect = match tamper.clone() {
        Tamper::Edit {
            index,
            field,
            reseal: resealed,
            value,
            event,
        } => {
            // A re-sealed edit of the last entry is invisible without an anchor, unless it
            // changes the number or the run (which the position and the ledger pin).
            let visible_at_end = !resealed || matches!(field, Field::Seq | Field::RunId);
            let i = if visible_at_end {
                index % len
            } else {
                index % len.checked_sub(1).filter(|&n| n > 0)?
            };
            let old = &entries[i];
            let changed = edit(old, |json| match field {
                Field::Seq => {
                    json["seq"] = json!(if value == seq_at(i) {
                        value.wrapping_add(1)
                    } else {
                        value
                    });
                }
                Field::At => json["at"] = json!(old.at().as_unix_millis() ^ (value | 1)),
                Field::RunId => json["run_id"] = json!("another-run"),
                Field::State => {
                    let next = State::ALL[(old.state().index() + 1) % State::ALL.len()];
                    json["state"] = json!(next);
                }
                Field::Event => {
                    let event = if &event == old.event() {
                        EntryKind::Steering {
                            note: "forged".into(),
                        }
                    } else {
                        event
                    };
                    let event = if &event == old.event() {
                        EntryKind::Steering {
                            note: "forged!".into(),
                        }
                    } else {
                        event
                    };
                    json["event"] = serde_json::to_value(event).unwrap();
                }
                Field::Prev => json["prev"] = json!(flip(old.prev(), value)),
                Field::Hash => json["hash"] = json!(flip(old.hash(), value)),
            });
            entries[i] = if resealed { reseal(&changed) } else { changed };
            let problem = match (field, resealed) {
                (Field::RunId, _) => Problem::WrongRun {
                    found: "another-run".parse().unwrap(),
                },
                (_, false) => Problem::Edited,
                (_, true) => Problem::BrokenLink,
            };
            broken(seq_at(i), problem)
        }
        Tamper::Drop { index } => {
            // Dropping the last entry leaves a valid, shorter chain: invisible without an anchor.
            let i = index % len.checked_sub(1).filter(|&n| n > 0)?;
            entries.remove(i);
            broken(seq_at(i), Problem::Dropped { missing: seq_at(i) })
        }
        Tamper::Swap { index } => {
            let i = index % len.checked_sub(1).filter(|&n| n > 0)?;
            entries.swap(i, i + 1);
            broken(
                seq_at(i),
                Problem::Reordered {
                    found: seq_at(i + 1),
                },
            )
        }
        Tamper::Duplicate { of, at } => {
            let (j, p) = (of % len, at % (len + 1));
            entries.insert(p, entries[j].clone());
            // A copy of the entry that follows it is itself a well-formed link: the next
            // one, whose number then repeats, gives it away.
            let seq = if j == p { seq_at(p + 1) } else { seq_at(p) };
            broken(seq, Problem::Inserted { found: seq_at(j) })
        }
        Tamper::Forge {
            at,
            linked,
            prev,
            event,
        } => {
            // Appending a well-formed entry is what `append` does: invisible without an anchor.
            // One with a wrong `prev` at the end looks like a re-sealed `prev`: also skipped.
            let p = at % len;
            let head = Ledger::from_entries(run_id(), entries[..p].to_vec()).unwrap();
            let mut forged_ledger = head;
            let forged = forged_ledger
                .append(Timestamp::from_unix_millis(0), State::Act, event)
                .clone();
            let forged = if linked {
                forged
            } else {
                reseal(&edit(&forged, |json| {
                    json["prev"] = json!(flip(forged.prev(), prev));
                }))
            };
            entries.insert(p, forged);
            // A forged entry that links in is a well-formed link: only the entry after it,
            // whose number then repeats and whose `prev` skips it, proves it was not there.
            let seq = if linked { seq_at(p + 1) } else { seq_at(p) };
            broken(seq, Problem::Inserted { found: seq_at(p) })
        }
    };
    Some((entries, expect))
}

/// `digest` with some bits flipped (never unchanged).
fn flip(digest: Digest, value: u64) -> Digest {
    let mut bytes = *digest.as_bytes();
    bytes[(value % 32) as usize] ^= (value >> 8) as u8 | 1;
    Digest::from_bytes(bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Untouched ledgers verify, also after a round trip through JSON lines.
    #[test]
    fn untouched_ledgers_verify(ledger in ledger(0..12)) {
        check(ledger.entries(), Ok(()))?;
        let lines: String = ledger.entries().iter().map(Entry::to_json_line).collect();
        let read_back = from_lines(&lines);
        prop_assert_eq!(&read_back[..], ledger.entries());
        check(&read_back, Ok(()))?;
    }

    /// Any single edit, drop, swap or insertion fails verification, at the right place.
    #[test]
    fn any_single_change_is_found_and_located(ledger in ledger(1..10), tamper in tamper()) {
        let Some((entries, expect)) = apply(&ledger, &tamper) else {
            return Err(TestCaseError::reject("change not applicable to this ledger"));
        };
        prop_assert!(expect.is_err());
        check(&entries, expect)?;
    }
}

fn sample(len: usize) -> Ledger {
    let mut ledger = Ledger::new(run_id());
    for i in 0..len {
        ledger.append(
            Timestamp::from_unix_millis(1_700_000_000_000 + i as u64),
            State::Explore,
            EntryKind::Steering {
                note: format!("note {i}"),
            },
        );
    }
    ledger
}

fn other_run() -> RunId {
    "other-run".parse().unwrap()
}

#[test]
fn an_entry_from_another_run_is_wrong_run() -> Result<(), TestCaseError> {
    let mine = sample(4);
    let mut theirs = Ledger::new(other_run());
    theirs.append(
        Timestamp::EPOCH,
        State::Intake,
        EntryKind::Steering {
            note: "theirs".into(),
        },
    );
    theirs.append(
        Timestamp::EPOCH,
        State::Intake,
        EntryKind::Steering {
            note: "theirs".into(),
        },
    );

    // Swapped in for one of mine, with its own well-formed hash.
    let mut entries = mine.entries().to_vec();
    entries[1] = theirs.entries()[1].clone();
    check(
        &entries,
        broken(2, Problem::WrongRun { found: other_run() }),
    )?;

    // Slipped in between mine.
    let mut entries = mine.entries().to_vec();
    entries.insert(3, theirs.entries()[0].clone());
    check(
        &entries,
        broken(4, Problem::WrongRun { found: other_run() }),
    )?;

    // A whole ledger of another run.
    check(
        theirs.entries(),
        broken(1, Problem::WrongRun { found: other_run() }),
    )?;
    Ok(())
}

#[test]
fn tail_changes_need_an_anchor() -> Result<(), TestCaseError> {
    // The chain alone cannot see changes at its very end: a prefix of a valid chain, a
    // valid chain with its last entry re-sealed, and a valid chain with one more
    // well-formed entry are all valid chains. Only a head recorded elsewhere (a run
    // snapshot's) catches the first two; an entry appended after the recorded head is
    // what `append` does, and no head can tell it from a genuine one.
    let ledger = sample(3);
    let head = ledger.head().expect("a head");
    assert_eq!((head.seq, head.hash), (3, ledger.last_hash()));
    assert!(ledger.reaches(&head));

    let cut = Ledger::from_entries(run_id(), ledger.entries()[..2].to_vec()).unwrap();
    check(cut.entries(), Ok(()))?;
    assert!(!cut.reaches(&head));
    assert!(!Ledger::entries_reach(&[], &head));

    let mut rewritten = ledger.entries().to_vec();
    rewritten[2] = reseal(&edit(&rewritten[2], |json| {
        json["event"]["note"] = json!("rewritten");
    }));
    check(&rewritten, Ok(()))?;
    assert!(!Ledger::entries_reach(&rewritten, &head));

    let mut extended = ledger;
    extended.append(
        Timestamp::EPOCH,
        State::Done,
        EntryKind::Steering {
            note: "forged".into(),
        },
    );
    check(extended.entries(), Ok(()))?;
    assert!(extended.reaches(&head));
    assert_ne!(extended.head(), Some(head));
    Ok(())
}

#[test]
fn the_end_of_the_chain_reports_the_earlier_of_two_lookalikes() -> Result<(), TestCaseError> {
    // Re-sealing entry 2's content and re-sealing entry 3's prev (the last) leave the
    // same trace: entry 3 does not link to entry 2. The earlier, 2, is reported.
    let ledger = sample(3);
    let mut content = ledger.entries().to_vec();
    content[1] = reseal(&edit(&content[1], |json| {
        json["event"]["note"] = json!("rewritten");
    }));
    check(&content, broken(2, Problem::BrokenLink))?;

    let mut prev = ledger.entries().to_vec();
    prev[2] = reseal(&edit(&prev[2], |json| {
        json["prev"] = json!(Digest::of_bytes(b"x"));
    }));
    check(&prev, broken(2, Problem::BrokenLink))?;
    Ok(())
}

#[test]
fn the_first_entry_must_link_to_zero() -> Result<(), TestCaseError> {
    let ledger = sample(2);
    let mut entries = ledger.entries().to_vec();
    entries[0] = reseal(&edit(&entries[0], |json| {
        json["prev"] = json!(Digest::of_bytes(b"x"));
    }));
    check(&entries, broken(1, Problem::BrokenLink))?;
    check(&entries[..1], broken(1, Problem::BrokenLink))?;
    Ok(())
}

#[test]
fn errors_say_where_and_what() {
    let ledger = sample(8);
    let mut entries = ledger.entries().to_vec();
    entries[6] = edit(&entries[6], |json| json["at"] = json!(0));
    let err = Ledger::from_entries(run_id(), entries).unwrap_err();
    assert_eq!(
        err.to_string(),
        "entry 7 was edited after it was written: its hash does not match its content"
    );

    let mut entries = ledger.entries().to_vec();
    entries.remove(4);
    let err = Ledger::from_entries(run_id(), entries).unwrap_err();
    assert_eq!(
        err.to_string(),
        "entry 5 was dropped: the chain skips it and it appears nowhere later"
    );
}

#[test]
fn a_deserialized_ledger_is_verified() {
    let ledger = sample(3);
    let mut json = serde_json::to_value(&ledger).unwrap();
    assert_eq!(
        serde_json::from_value::<Ledger>(json.clone()).unwrap(),
        ledger
    );
    json["entries"][1]["at"] = json!(1);
    let err = serde_json::from_value::<Ledger>(json).unwrap_err();
    assert!(err.to_string().starts_with("entry 2 was edited"), "{err}");
}

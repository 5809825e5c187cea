//! Golden vectors for what operators add to a ledger: `stop_requested`, and who answered in
//! `human_input_received` — canonical bytes and hashes, pinned. An answer recorded without
//! `by` encodes exactly as before the field existed, so older ledgers still verify.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY LEDGER ALREADY STORED THAT HOLDS THESE
//! KINDS: fix the encoding, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{RunId, State, StopKind, StopRequest, Timestamp};

const AT: u64 = 1_700_000_000_000;

fn one(kind: EntryKind) -> Ledger {
    let run: RunId = "golden-run".parse().unwrap();
    let mut ledger = Ledger::new(run);
    ledger.append(Timestamp::from_unix_millis(AT), State::Explore, kind);
    ledger
}

fn check(kind: EntryKind, bytes: &str, hash: &str) {
    let ledger = one(kind);
    let entry = &ledger.entries()[0];
    assert_eq!(String::from_utf8(entry.canonical_bytes()).unwrap(), bytes);
    assert_eq!(entry.hash().to_string(), hash);
    // Read back from its JSON line, it verifies.
    let line = serde_json::to_string(entry).unwrap();
    let back: Entry = serde_json::from_str(&line).unwrap();
    assert_eq!(&back, entry);
    Ledger::from_entries("golden-run".parse().unwrap(), vec![back])
        .unwrap()
        .verify()
        .unwrap();
}

#[test]
fn a_stop_requested_entry_encodes_and_hashes_as_pinned() {
    check(
        EntryKind::StopRequested {
            request: StopRequest::new(
                StopKind::Abort,
                "alice",
                "runaway",
                Timestamp::from_unix_millis(AT - 5),
            ),
        },
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"explore","event":{"type":"stop_requested","request":{"kind":"abort","by":"alice","reason":"runaway","requested_at":1699999999995}},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#,
        "93195b46e58313ef0ea237c817b89c610692ea2e18c48e964a4fab85634f8479",
    );
}

#[test]
fn an_answer_with_who_gave_it_encodes_and_hashes_as_pinned() {
    check(
        EntryKind::HumanInputReceived {
            answer: "yes".into(),
            by: Some("alice".into()),
        },
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"explore","event":{"type":"human_input_received","answer":"yes","by":"alice"},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#,
        "9e835603aec0b1748a2199a6bb21a9fb624b21af18c2dc2751e59bc98c6a6d6b",
    );
}

#[test]
fn an_answer_without_who_gave_it_encodes_as_before_the_field_existed() {
    let ledger = one(EntryKind::HumanInputReceived {
        answer: "yes".into(),
        by: None,
    });
    let bytes = String::from_utf8(ledger.entries()[0].canonical_bytes()).unwrap();
    assert!(
        bytes.contains(r#""event":{"type":"human_input_received","answer":"yes"}"#),
        "{bytes}"
    );
    // A line written before `by` existed reads back as an answer by nobody named.
    let old = r#"{"type":"human_input_received","answer":"yes"}"#;
    assert_eq!(
        serde_json::from_str::<EntryKind>(old).unwrap(),
        EntryKind::HumanInputReceived {
            answer: "yes".into(),
            by: None
        }
    );
}

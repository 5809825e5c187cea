//! Golden vector for a `follow_up_of` entry (a follow-up's link to the run it continues) and
//! a `policy_violation` of kind `steering_unread`: their canonical bytes and hashes, pinned.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY LEDGER ALREADY STORED THAT HOLDS THIS KIND:
//! fix the encoding, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger, Violation};
use rein_run::{Digest, LedgerHead, RunId, State, Timestamp};

fn ledger() -> Ledger {
    let run: RunId = "golden-run".parse().unwrap();
    let mut ledger = Ledger::new(run);
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_000),
        State::Intake,
        EntryKind::FollowUpOf {
            previous: "golden-previous".parse().unwrap(),
            previous_head: LedgerHead::new(12, Digest::of_bytes(b"entry 12")),
            turn: 1,
        },
    );
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_001),
        State::Decide,
        EntryKind::PolicyViolation {
            violation: Violation::SteeringUnread,
            message: "a steering note arrived".into(),
            handed_back: true,
        },
    );
    ledger
}

#[test]
fn the_conversation_kinds_encode_and_hash_as_pinned() {
    let ledger = ledger();
    let [link, refusal] = ledger.entries() else {
        unreachable!("two entries were appended")
    };
    assert_eq!(
        String::from_utf8(link.canonical_bytes()).unwrap(),
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"intake","event":{"type":"follow_up_of","previous":"golden-previous","previous_head":{"seq":12,"hash":"1e073457ecc052bb527759f80ae0f4859494f5b909eb447ce3b8b6fbc0907838"},"turn":1},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
    );
    assert_eq!(
        link.hash().to_string(),
        "83b6b77bc00be92d8a79c912cb8a3ba6f197e8fd33e5e452b982a7b3b376f29e"
    );
    assert_eq!(
        String::from_utf8(refusal.canonical_bytes()).unwrap(),
        r#"{"seq":2,"at":1700000000001,"run_id":"golden-run","state":"decide","event":{"type":"policy_violation","violation":"steering_unread","message":"a steering note arrived","handed_back":true},"prev":"83b6b77bc00be92d8a79c912cb8a3ba6f197e8fd33e5e452b982a7b3b376f29e"}"#
    );
    assert_eq!(
        refusal.hash().to_string(),
        "2fa10c3e7e6f8ab6d75de6733b61367f6d9acead53144e3df54d9757f2ca6ec1"
    );
    let lines: Vec<Entry> = ledger
        .entries()
        .iter()
        .map(|e| serde_json::from_str(&serde_json::to_string(e).unwrap()).unwrap())
        .collect();
    let run: RunId = "golden-run".parse().unwrap();
    Ledger::from_entries(run, lines).unwrap().verify().unwrap();
}

//! Golden vector for the `skill_entered` kind: its canonical bytes and hash, pinned.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY LEDGER ALREADY STORED THAT HOLDS THIS KIND:
//! fix the encoding, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{Digest, RunId, State, Timestamp};

fn ledger() -> Ledger {
    let run: RunId = "golden-run".parse().unwrap();
    let mut ledger = Ledger::new(run);
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_000),
        State::Explore,
        EntryKind::SkillEntered {
            step: 3,
            name: "release-notes".into(),
            checksum: Digest::of_bytes(b"test"),
        },
    );
    ledger
}

#[test]
fn a_skill_entered_entry_encodes_and_hashes_as_pinned() {
    let ledger = ledger();
    let entry = &ledger.entries()[0];
    assert_eq!(entry.event().name(), "skill_entered");
    assert_eq!(
        String::from_utf8(entry.canonical_bytes()).unwrap(),
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"explore","event":{"type":"skill_entered","step":3,"name":"release-notes","checksum":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
    );
    assert_eq!(
        entry.hash().to_string(),
        "78d7f7663572ebf915a4a49d34a36684d942268edb123391d242fb718599d977"
    );
    // Read back from its JSON line, it verifies.
    let line = serde_json::to_string(entry).unwrap();
    let back: Entry = serde_json::from_str(&line).unwrap();
    let run: RunId = "golden-run".parse().unwrap();
    Ledger::from_entries(run, vec![back])
        .unwrap()
        .verify()
        .unwrap();
}

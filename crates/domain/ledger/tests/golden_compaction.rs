//! Golden vectors for the `prompt_compacted` kind: an entry as an earlier version wrote it
//! (a hash for each message left out) reads back to the same bytes and verifies, and one as
//! this version writes it (where it cut) encodes and hashes as pinned.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY LEDGER ALREADY STORED THAT HOLDS THIS KIND:
//! fix the encoding, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{CompactionReason, Digest, PromptCompaction, RunId, State, Timestamp};

/// A `prompt_compacted` line as the version before `kept_from` wrote it: `dropped` holds
/// the SHA-256 of each message left out.
const EARLIER: &str = r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"explore","event":{"type":"prompt_compacted","step":7,"compaction":{"reason":"over_limit","keep_last":4,"max_item_chars":4000,"replies":3,"results":3,"dropped":["ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb","3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"],"summary":"761b7ad8ad439b2855fcbb611331c646ef0870b0631247bba3f3025cb6df5a53","tokens_before":9120,"tokens_after":3050}},"prev":"0000000000000000000000000000000000000000000000000000000000000000","hash":"0d324165d22ea64d04b4383a55b4aeea8f80132ab96e963eee95f854ae3c9468"}"#;

fn run() -> RunId {
    "golden-run".parse().unwrap()
}

#[test]
fn an_entry_written_before_the_cut_was_recorded_reads_back_as_written_and_verifies() {
    let entry: Entry = serde_json::from_str(EARLIER).unwrap();
    // Encoded again from what was read: the same bytes, so the same hash.
    assert_eq!(entry.json_line(), format!("{EARLIER}\n").as_bytes());
    let EntryKind::PromptCompacted { step, compaction } = entry.event() else {
        panic!("not a prompt_compacted entry: {:?}", entry.event());
    };
    assert_eq!(*step, 7);
    assert_eq!(
        compaction.dropped,
        Some(vec![Digest::of_bytes(b"a"), Digest::of_bytes(b"b")])
    );
    assert_eq!(compaction.kept_from, None);
    assert_eq!(compaction.tokens_before, 9_120);
    Ledger::from_entries(run(), vec![entry])
        .unwrap()
        .verify()
        .unwrap();
}

#[test]
fn a_compaction_with_its_cut_encodes_and_hashes_as_pinned() {
    let mut ledger = Ledger::new(run());
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_000),
        State::Explore,
        EntryKind::PromptCompacted {
            step: 7,
            compaction: PromptCompaction {
                reason: CompactionReason::OverLimit,
                keep_last: 4,
                max_item_chars: 4_000,
                replies: 3,
                results: 3,
                dropped: None,
                kept_from: Some(4),
                summary: Digest::of_bytes(b"summary"),
                tokens_before: 5_334,
                tokens_after: 3_050,
            },
        },
    );
    let entry = &ledger.entries()[0];
    assert_eq!(entry.event().name(), "prompt_compacted");
    assert_eq!(
        String::from_utf8(entry.canonical_bytes()).unwrap(),
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"explore","event":{"type":"prompt_compacted","step":7,"compaction":{"reason":"over_limit","keep_last":4,"max_item_chars":4000,"replies":3,"results":3,"kept_from":4,"summary":"761b7ad8ad439b2855fcbb611331c646ef0870b0631247bba3f3025cb6df5a53","tokens_before":5334,"tokens_after":3050}},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
    );
    assert_eq!(
        entry.hash().to_string(),
        "28d88816580ade6fd9fe0451a8503445b49f27274c62c084621acffcf1fa608f"
    );
    let back: Entry = serde_json::from_str(&entry.to_json_line()).unwrap();
    assert_eq!(back.event(), entry.event());
    Ledger::from_entries(run(), vec![back])
        .unwrap()
        .verify()
        .unwrap();
}

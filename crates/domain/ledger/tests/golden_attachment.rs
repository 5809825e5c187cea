//! Golden vector for the `tool_attachment` kind: its canonical bytes and hash, pinned.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY LEDGER ALREADY STORED THAT HOLDS THIS KIND:
//! fix the encoding, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{ArtifactLink, RunId, State, Timestamp};

fn ledger() -> Ledger {
    let run: RunId = "golden-run".parse().unwrap();
    let mut ledger = Ledger::new(run);
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_000),
        State::Act,
        EntryKind::ToolAttachment {
            tool: "shell.run".parse().unwrap(),
            attempt: 1,
            name: "stdout".into(),
            link: ArtifactLink {
                id: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
                checksum: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
                    .into(),
                size: 4,
                content_type: "text/plain".into(),
            },
        },
    );
    ledger
}

#[test]
fn a_tool_attachment_entry_encodes_and_hashes_as_pinned() {
    let ledger = ledger();
    let entry = &ledger.entries()[0];
    assert_eq!(entry.event().name(), "tool_attachment");
    assert_eq!(
        String::from_utf8(entry.canonical_bytes()).unwrap(),
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"act","event":{"type":"tool_attachment","tool":"shell.run","attempt":1,"name":"stdout","link":{"id":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","checksum":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","size":4,"content_type":"text/plain"}},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
    );
    assert_eq!(
        entry.hash().to_string(),
        "0dc6a0502866a1a2faf5e6ef9426bddf1704082938bddfbf10622e8eb2d16fdf"
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

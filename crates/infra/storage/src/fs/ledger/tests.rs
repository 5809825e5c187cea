//! Tests of the filesystem ledger store: parsing, torn tails, the chain tip, eviction.

use rein_ledger::EntryKind;
use rein_run::{State, Timestamp};

use super::read::{parse, tip_of};
use super::*;

fn lines(n: u64) -> (Ledger, Vec<u8>) {
    let mut ledger = Ledger::new("r".parse().unwrap());
    let mut bytes = Vec::new();
    for i in 0..n {
        let event = EntryKind::Steering {
            note: format!("n{i}"),
        };
        let entry = ledger.append(Timestamp::from_unix_millis(i), State::Intake, event);
        entry.write_json_line(&mut bytes);
    }
    (ledger, bytes)
}

#[test]
fn parse_and_tip_read_complete_lines() {
    let path = Path::new("L");
    assert_eq!(parse(path, LedgerLines::split(b"")).unwrap(), []);
    assert_eq!(tip_of(path, b"").unwrap(), Tip::EMPTY);
    let (ledger, bytes) = lines(3);
    assert_eq!(
        parse(path, LedgerLines::split(&bytes)).unwrap(),
        ledger.entries()
    );
    let tip = tip_of(path, &bytes).unwrap();
    assert_eq!(
        tip,
        Tip {
            next_seq: 4,
            last_hash: ledger.last_hash()
        }
    );
}

#[test]
fn a_reading_store_reads_around_a_torn_line_and_leaves_the_file_to_its_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (ledger, mut bytes) = lines(3);
    bytes.extend_from_slice(b"{\"seq\":4,\"at\":");
    let run_id = ledger.run_id().clone();
    let reader = FsLedgerStore::new(dir.path().to_path_buf(), FsyncPolicy::Relaxed, 4).reading();
    std::fs::write(reader.inner.path(&run_id), &bytes).unwrap();
    let loaded = reader
        .inner
        .load(&run_id, &reader.inner.slot(&run_id))
        .unwrap();
    assert_eq!(loaded.ledger.entries(), ledger.entries());
    assert!(loaded.torn_tail.is_some());
    // The reader holds no lock: the process that resumes the run still takes the file over.
    let writer = FsLedgerStore::new(dir.path().to_path_buf(), FsyncPolicy::Relaxed, 4);
    let taken = writer.inner.load(&run_id, &writer.inner.slot(&run_id));
    assert!(taken.is_ok(), "{taken:?}");
    assert_eq!(
        std::fs::read(reader.inner.path(&run_id)).unwrap(),
        bytes,
        "nothing cut"
    );
}

#[test]
fn a_second_process_cannot_append_to_a_ledger_another_one_writes() {
    let dir = tempfile::tempdir().unwrap();
    // Two stores over one folder stand for two processes: each opens its own handle.
    let first = FsLedgerStore::new(dir.path().to_path_buf(), FsyncPolicy::Relaxed, 4);
    let second = FsLedgerStore::new(dir.path().to_path_buf(), FsyncPolicy::Relaxed, 4);
    let (ledger, _) = lines(3);
    let run_id = ledger.run_id().clone();
    let append = |store: &FsLedgerStore, entry: &rein_ledger::Entry| {
        store.inner.append(
            &run_id,
            &store.inner.slot(&run_id),
            Link::of(entry),
            entry.to_json_line().as_bytes(),
        )
    };
    append(&first, &ledger.entries()[0]).unwrap();
    // The second reads what the first wrote, then tries to write on.
    let loaded = second
        .inner
        .load(&run_id, &second.inner.slot(&run_id))
        .unwrap();
    assert_eq!(loaded.ledger.len(), 1);
    let err = append(&second, &ledger.entries()[1]).unwrap_err();
    assert!(err.to_string().contains("another process"), "{err}");
    append(&first, &ledger.entries()[1]).unwrap();
    // Once the first process is gone, the second's stale view is refused, not forked...
    drop(first);
    let err = append(&second, &ledger.entries()[1]).unwrap_err();
    assert!(err.to_string().contains("changed since"), "{err}");
    // ...and after loading again it writes on.
    let loaded = second
        .inner
        .load(&run_id, &second.inner.slot(&run_id))
        .unwrap();
    assert_eq!(loaded.ledger.len(), 2);
    append(&second, &ledger.entries()[2]).unwrap();
    let loaded = second
        .inner
        .load(&run_id, &second.inner.slot(&run_id))
        .unwrap();
    assert_eq!(loaded.ledger, ledger);
}

#[test]
fn a_bad_line_is_named_by_number() {
    let (_, mut bytes) = lines(2);
    bytes.extend_from_slice(b"\n");
    let err = parse(Path::new("L"), LedgerLines::split(&bytes)).unwrap_err();
    assert!(
        matches!(err, LedgerStoreError::Corrupt { line: 3, .. }),
        "{err}"
    );
    let err = tip_of(Path::new("L"), &bytes).unwrap_err();
    assert!(
        matches!(err, LedgerStoreError::Corrupt { line: 3, .. }),
        "{err}"
    );
}

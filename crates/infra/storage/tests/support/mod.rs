//! Fixtures shared by the integration tests: runs, ledgers, stores on a temporary root.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part of it

use std::path::Path;

use rein_ledger::{EntryKind, Ledger};
use rein_run::{Run, RunId, State, Timestamp};
use rein_storage::{FsConfig, FsStores, FsyncPolicy};

/// A fixed instant: tests never read the clock.
pub fn at(millis: u64) -> Timestamp {
    Timestamp::from_unix_millis(1_700_000_000_000 + millis)
}

/// Parses a run id the test knows to be valid.
pub fn id(text: &str) -> RunId {
    text.parse().expect("test run ids are valid")
}

/// A fresh run `id` in intake.
pub fn run(id_text: &str) -> Run {
    Run::new(
        id(id_text),
        format!("goal of {id_text}"),
        serde_json::Map::new(),
        serde_json::json!({"budgets": {"tool_calls": 10}}),
        at(0),
    )
}

/// A ledger of run `id` with `n` entries whose notes say which entry they are.
pub fn ledger(id_text: &str, n: u64) -> Ledger {
    let mut ledger = Ledger::new(id(id_text));
    for i in 1..=n {
        push(&mut ledger, i);
    }
    ledger
}

/// Appends entry `i` (a steering note) to `ledger`.
pub fn push(ledger: &mut Ledger, i: u64) {
    ledger.append(
        at(i),
        State::Explore,
        EntryKind::Steering {
            note: format!("note number {i}"),
        },
    );
}

/// Opens the filesystem stores at `root` with `fsync`.
pub fn fs_stores(root: &Path, fsync: FsyncPolicy) -> FsStores {
    FsStores::open_with(root, FsConfig::default().with_fsync(fsync)).expect("a temp dir opens")
}

/// Every fsync policy, for tests that must hold under all of them.
pub const POLICIES: [FsyncPolicy; 3] = [
    FsyncPolicy::EveryEntry,
    FsyncPolicy::EveryStep,
    FsyncPolicy::Relaxed,
];

/// The names of the files in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the directory exists")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

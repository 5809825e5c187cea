//! Fixtures shared by the integration tests: runs, ledgers, stores on a temporary root.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part of it

use std::path::Path;

use rein_storage::{FsConfig, FsStores, FsyncPolicy};

// The fixtures the contract suite defines, so both read the same runs and ledgers.
#[allow(unused_imports)] // not every test file uses them through here
pub use crate::contract::{at, id, ledger, push, run};

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

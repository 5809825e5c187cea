//! The read side of [`FsLedgerStore`](super::FsLedgerStore): loading a run's ledger (its
//! complete lines, parsed and verified), listing the runs that have one, and reading the tip
//! of a chain from its last line.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::Path;

use rein_ledger::{Entry, Ledger, LedgerLines, LedgerStoreError, LoadedLedger};
use rein_run::RunId;

use super::{Inner, Slot};
use crate::fs::file::{self, Opened};
use crate::memory::shard::lock;
use crate::tip::{Link, Tip};

impl Inner {
    /// Reads, parses and verifies the ledger of `run_id`.
    pub(super) fn load(
        &self,
        run_id: &RunId,
        slot: &Slot,
    ) -> Result<LoadedLedger, LedgerStoreError> {
        let path = self.path(run_id);
        let (bytes, torn_tail) = {
            let mut guard = lock(&slot.file);
            match guard.as_mut() {
                // This handle is the writer: the file ends where it last wrote.
                Some(open) if open.locked => (read_complete(&path, open.len)?, open.torn),
                // Only read through so far: another process may be the writer and have
                // appended since. Read what the file holds now, up to its last complete line
                // (a line being written is the writer's, not ours to cut), and remember that
                // length, so a later append by this handle still finds any change since.
                Some(open) => {
                    let now = open
                        .file
                        .metadata()
                        .map_err(|source| LedgerStoreError::Io {
                            context: format!("reading {}", path.display()),
                            source,
                        })?
                        .len();
                    let mut bytes = read_complete(&path, now)?;
                    let complete = LedgerLines::split(&bytes).complete().len();
                    bytes.truncate(complete);
                    open.len = complete as u64;
                    (bytes, open.torn)
                }
                None => {
                    let Some((open, bytes)) = self.open(run_id, &path, false)? else {
                        return Err(LedgerStoreError::NotFound {
                            run_id: run_id.clone(),
                        });
                    };
                    let torn = open.torn;
                    *guard = Some(open);
                    (bytes, torn)
                }
            }
        };
        let entries = parse(&path, LedgerLines::split(&bytes))?;
        let ledger = Ledger::from_entries(run_id.clone(), entries).map_err(|source| {
            LedgerStoreError::Broken {
                run_id: run_id.clone(),
                source,
            }
        })?;
        Ok(LoadedLedger { ledger, torn_tail })
    }

    /// The runs that have a ledger file, in order.
    pub(super) fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        let io_error = |source| LedgerStoreError::Io {
            context: format!("listing {}", self.dir.display()),
            source,
        };
        let mut ids = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io_error)? {
            let name = entry.map_err(io_error)?.file_name();
            let Some(name) = name.to_str() else { continue };
            match crate::fs::FsLayout::ledger_run(name) {
                Some(id) => ids.push(id),
                None => tracing::debug!(file = name, dir = %self.dir.display(),
                    "skipping a file that is not a ledger"),
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }
}

/// Reads the first `len` bytes of the ledger at `path`: its complete lines, as the open
/// handle knows them.
pub(super) fn read_complete(path: &Path, len: u64) -> Result<Vec<u8>, LedgerStoreError> {
    let io_error = |source| LedgerStoreError::Io {
        context: format!("reading {}", path.display()),
        source,
    };
    match file::open_regular(path, OpenOptions::new().read(true)).map_err(io_error)? {
        Opened::File(file, _) => file::read_up_to(file, len).map_err(io_error),
        Opened::Missing => Err(io_error(io::Error::new(
            io::ErrorKind::NotFound,
            "the ledger file was removed while the store had it open",
        ))),
        Opened::Foreign(found) => Err(io_error(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it was replaced by {found} while the store had it open"),
        ))),
    }
}

/// Parses every complete line as an [`Entry`], naming the first that is not one.
pub(super) fn parse(path: &Path, lines: LedgerLines<'_>) -> Result<Vec<Entry>, LedgerStoreError> {
    lines
        .entries()
        .map(|entry| entry.map_err(|e| corrupt(path, &e)))
        .collect()
}

/// The error for a complete line of the ledger at `path` that is not an entry.
fn corrupt(path: &Path, e: &rein_ledger::LineError) -> LedgerStoreError {
    LedgerStoreError::Corrupt {
        location: path.display().to_string(),
        line: e.line,
        reason: format!("it is not a valid ledger entry: {}", e.source),
    }
}

/// The tip of the chain whose complete lines are `bytes`: read from the last line only.
pub(super) fn tip_of(path: &Path, bytes: &[u8]) -> Result<Tip, LedgerStoreError> {
    let Some((number, last)) = LedgerLines::split(bytes).last() else {
        return Ok(Tip::EMPTY);
    };
    LedgerLines::parse(number, last)
        .map(|last| Tip::after(Link::of(&last)))
        .map_err(|e| corrupt(path, &e))
}

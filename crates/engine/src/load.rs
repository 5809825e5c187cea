//! Loading a run's ledger and checking it against the run's snapshot: the ledger must reach
//! the head the snapshot was saved after, and how the snapshot stood is told to whoever
//! opens the run.

use std::sync::Arc;

use rein_ledger::LedgerStoreError;
use rein_run::{RunId, RunStoreError};

use crate::error::EngineError;
use crate::shared::Shared;

/// Loads and verifies the ledger of run `id`, and checks it against the run's snapshot:
/// the ledger must reach the head the snapshot was saved after.
///
/// The snapshot is read first. The engine appends entries before it saves a snapshot,
/// so a ledger read after the snapshot reaches its head even while the run is being
/// driven. A snapshot that cannot be read does not stop a load (the ledger is the source
/// of truth); the check is then skipped, and said so in `unchecked`.
pub(crate) async fn load_ledger(shared: &Arc<Shared>, id: &RunId) -> Result<Loaded, EngineError> {
    let snapshot = shared.runs.load_boxed(id).await;
    let loaded = match shared.ledgers.load_boxed(id).await {
        Ok(loaded) => Some(loaded),
        Err(LedgerStoreError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let missing_snapshot = matches!(snapshot, Err(RunStoreError::NotFound { .. }));
    let (head, unchecked) = match snapshot {
        Ok(run) => (run.ledger_head(), None),
        Err(RunStoreError::NotFound { .. }) => (None, None),
        Err(e) => (None, Some(e)),
    };
    let last = loaded
        .as_ref()
        .and_then(|l| l.ledger.head())
        .map_or(0, |h| h.seq);
    if let Some(head) = head
        && !loaded.as_ref().is_some_and(|l| l.ledger.reaches(&head))
        // No entry under a snapshot saved after the first one only: `begin` saves that
        // snapshot before the entry is synced, so it proves no more than the ledger.
        && !(last == 0 && head.seq == 1)
    {
        return Err(EngineError::LedgerBehindSnapshot {
            id: id.clone(),
            head,
            last,
        });
    }
    let snapshot = match (&unchecked, head) {
        (Some(_), _) => SnapshotStanding::Unreadable,
        (None, None) if missing_snapshot => SnapshotStanding::Missing,
        (None, Some(head)) if head.seq < last => SnapshotStanding::Behind {
            saved: head.seq,
            last,
        },
        (None, _) => SnapshotStanding::Current,
    };
    match loaded {
        Some(loaded) if !loaded.ledger.is_empty() => Ok(Loaded {
            loaded,
            unchecked,
            snapshot,
        }),
        // No ledger, or a file with no entry (the process died writing the first, and
        // the torn line was cut): the run never started.
        _ => Err(EngineError::RunNotFound { id: id.clone() }),
    }
}

/// A ledger loaded for a run, and why it could not be checked against the run's snapshot,
/// if it could not.
pub(crate) struct Loaded {
    pub(crate) loaded: rein_ledger::LoadedLedger,
    pub(crate) unchecked: Option<RunStoreError>,
    /// How the run's snapshot stood against the ledger.
    pub(crate) snapshot: SnapshotStanding,
}

/// How a run's snapshot stands against its ledger when the run is opened. The snapshot is
/// a cache (DESIGN.md §7): it is not synced, so after a power cut it may be missing, behind
/// its ledger or unreadable, and the run is rebuilt from its ledger all the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SnapshotStanding {
    /// It records the ledger's last entry (or one the ledger does not have yet: a run
    /// driven elsewhere).
    Current,
    /// There is none.
    Missing,
    /// It was saved after entry `saved`; the ledger ends at entry `last`.
    Behind { saved: u64, last: u64 },
    /// It could not be read (said separately, with the reason).
    Unreadable,
}

impl SnapshotStanding {
    /// What a resume's `run_resumed` note adds about the snapshot: nothing when it was
    /// current or is said elsewhere.
    pub(crate) fn note(self) -> String {
        match self {
            Self::Current | Self::Unreadable => String::new(),
            Self::Missing => "; the run snapshot was missing, so the run was rebuilt from its \
                              ledger"
                .to_owned(),
            Self::Behind { saved, last } => format!(
                "; the run snapshot was behind its ledger (saved after entry {saved}, the \
                 ledger ends at entry {last}), so the run was rebuilt from its ledger"
            ),
        }
    }
}

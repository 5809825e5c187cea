//! The `LedgerStore` port: where ledgers are appended to as a run goes, and read back.

use std::future::Future;

use rein_run::{BoxError, BoxFuture, Fenced, RunId};
use serde::{Deserialize, Serialize};

use crate::{Entry, Ledger, VerifyError};

/// A ledger read back from a store, with what the store had to cut to read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadedLedger {
    /// The verified ledger.
    pub ledger: Ledger,
    /// The torn final line that was cut, if there was one (the process died while writing
    /// it, so the entry it held was never acknowledged).
    pub torn_tail: Option<TornTail>,
}

/// A torn final line: an incomplete write at the end of a ledger, cut when it was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TornTail {
    /// The line number (from 1) of the torn line.
    pub line: u64,
    /// How many bytes were cut.
    pub bytes: u64,
}

/// Why a ledger store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerStoreError {
    /// No ledger exists for this run.
    #[error("no ledger for run {run_id}; list the ledgers to see which exist")]
    NotFound {
        /// The run asked for.
        run_id: RunId,
    },
    /// The stored entries parse, but do not form an untouched chain: the store refuses them.
    #[error("the ledger of run {run_id} fails verification and was not loaded: {source}")]
    Broken {
        /// The run.
        run_id: RunId,
        /// Where and how the chain breaks.
        #[source]
        source: VerifyError,
    },
    /// A stored entry cannot be read (bad JSON, unknown fields) and is not a torn final line.
    #[error("the ledger at {location} is unreadable at line {line}: {reason}")]
    Corrupt {
        /// Where it is stored (a path, a key).
        location: String,
        /// The line (from 1) that cannot be read.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The backing store failed.
    #[error("ledger store failed while {context}: {source}")]
    Io {
        /// What the store was doing.
        context: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The backing service failed (a database, a remote store): what a store that does not
    /// do file I/O reports, with the cause as the source.
    #[error("ledger store failed while {context}: {source}")]
    Backend {
        /// What the store was doing.
        context: String,
        /// The failure.
        #[source]
        source: BoxError,
    },
    /// The run belongs to another writer now: the entry was not appended.
    #[error(transparent)]
    FencedOut(#[from] Fenced),
}

/// Keeps ledgers: one append-only sequence of entries per run. Implement it with plain
/// `async fn`s.
///
/// The engine appends each entry as the run's [`Ledger`] produces it, calls
/// [`sync`](Self::sync) at every step boundary, and loads a ledger to resume, replay or
/// verify a run.
///
/// # Contract
/// - Append-only. `append` MUST store `entry` after the run's entries already stored, and a
///   store MUST NOT rewrite, reorder or remove a stored entry — with one exception: a torn
///   final line (an incomplete last write after a crash) MAY be cut when loading, and then
///   MUST be reported in [`LoadedLedger::torn_tail`]. Nothing else is ever rewritten.
/// - `append` MUST NOT return before the entry is as durable as the store's policy promises
///   (with fsync per entry: on disk). A store MAY check that `entry` follows the stored
///   entries; it is not required to, because [`Ledger::append`] only makes entries that do.
/// - `sync` marks a step boundary: a store whose policy is "fsync per step" MUST make every
///   entry appended so far for `run_id` durable before returning; other stores MAY return
///   at once. Syncing a run with nothing appended is not an error.
/// - `load` MUST verify the chain ([`Ledger::from_entries`]) and return
///   [`LedgerStoreError::Broken`] with the [`VerifyError`] when it fails: a store never
///   repairs or skips entries. It MUST return [`LedgerStoreError::NotFound`] for a run with
///   no ledger and [`LedgerStoreError::Corrupt`] for an entry that cannot be read and is
///   not the torn final line.
/// - Stores MAY be called concurrently for different runs; the engine never appends to the
///   same run from two tasks at once.
pub trait LedgerStore: Send + Sync + 'static {
    /// Appends `entry` to the ledger of `entry.run_id()`, creating it on the first entry.
    fn append(&self, entry: &Entry) -> impl Future<Output = Result<(), LedgerStoreError>> + Send;

    /// Appends `entry` at once, on the caller's thread, when the store can do it without
    /// waiting on anything: `Some` with what [`append`](Self::append) would have returned,
    /// or `None`, having done nothing, when the caller must call `append` instead.
    ///
    /// A caller on a hot path tries this first, so that an append with nothing to wait for
    /// (an in-memory store; a file already open with no fsync due) costs no future, and no
    /// allocation behind an object-safe port. `Some` MUST mean exactly what `append`
    /// returning would: the same checks, the same durability. The default returns `None`,
    /// which is always correct; a store whose appends may block (on a lock held across I/O,
    /// on the disk) keeps it.
    fn try_append_now(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        let _ = entry;
        None
    }

    /// Makes everything appended for `run_id` as durable as a step boundary requires.
    fn sync(&self, run_id: &RunId) -> impl Future<Output = Result<(), LedgerStoreError>> + Send;

    /// Loads and verifies the ledger of `run_id`.
    fn load(
        &self,
        run_id: &RunId,
    ) -> impl Future<Output = Result<LoadedLedger, LedgerStoreError>> + Send;

    /// The ids of every run with a ledger, oldest first where the store knows the order.
    fn list(&self) -> impl Future<Output = Result<Vec<RunId>, LedgerStoreError>> + Send;
}

/// The object-safe twin of [`LedgerStore`], implemented for every ledger store.
pub trait DynLedgerStore: Send + Sync + 'static {
    /// Boxed [`LedgerStore::append`].
    fn append_boxed<'a>(&'a self, entry: &'a Entry) -> BoxFuture<'a, Result<(), LedgerStoreError>>;
    /// [`LedgerStore::try_append_now`]: `None` (the default) means "call `append_boxed`".
    fn try_append_now_dyn(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        let _ = entry;
        None
    }
    /// Boxed [`LedgerStore::sync`].
    fn sync_boxed<'a>(&'a self, run_id: &'a RunId) -> BoxFuture<'a, Result<(), LedgerStoreError>>;
    /// Boxed [`LedgerStore::load`].
    fn load_boxed<'a>(
        &'a self,
        run_id: &'a RunId,
    ) -> BoxFuture<'a, Result<LoadedLedger, LedgerStoreError>>;
    /// Boxed [`LedgerStore::list`].
    fn list_boxed(&self) -> BoxFuture<'_, Result<Vec<RunId>, LedgerStoreError>>;
}

impl<S: LedgerStore> DynLedgerStore for S {
    fn append_boxed<'a>(&'a self, entry: &'a Entry) -> BoxFuture<'a, Result<(), LedgerStoreError>> {
        Box::pin(self.append(entry))
    }
    fn try_append_now_dyn(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        self.try_append_now(entry)
    }
    fn sync_boxed<'a>(&'a self, run_id: &'a RunId) -> BoxFuture<'a, Result<(), LedgerStoreError>> {
        Box::pin(self.sync(run_id))
    }
    fn load_boxed<'a>(
        &'a self,
        run_id: &'a RunId,
    ) -> BoxFuture<'a, Result<LoadedLedger, LedgerStoreError>> {
        Box::pin(self.load(run_id))
    }
    fn list_boxed(&self) -> BoxFuture<'_, Result<Vec<RunId>, LedgerStoreError>> {
        Box::pin(self.list())
    }
}

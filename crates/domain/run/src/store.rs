//! The `RunStore` port: where run snapshots are kept between steps and across restarts.

use std::future::Future;

use crate::{BoxFuture, Run, RunId};

/// Why a run store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunStoreError {
    /// No run has this id.
    #[error("no run with id {id}; list the runs to see which exist")]
    NotFound {
        /// The id asked for.
        id: RunId,
    },
    /// A stored snapshot could not be read back (bad JSON, broken invariants).
    #[error("run {id} is stored but unreadable at {location}: {reason}")]
    Corrupt {
        /// The run.
        id: RunId,
        /// Where it is stored (a path, a key).
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// The backing store failed.
    #[error("run store failed while {context}: {source}")]
    Io {
        /// What the store was doing.
        context: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

/// Keeps run snapshots. Implement it with plain `async fn`s.
///
/// # Contract
/// - `save` MUST replace the stored snapshot of `run.id()` as a whole or not at all: after a
///   crash, `load` returns either the old or the new snapshot, never a mix.
/// - `save` MUST NOT return before the snapshot is as durable as the store promises.
/// - `load` MUST return [`RunStoreError::NotFound`] for an unknown id and
///   [`RunStoreError::Corrupt`] for a snapshot that does not parse (it never guesses).
/// - Stores MAY be called concurrently for different runs; the engine never saves the same
///   run from two tasks at once.
pub trait RunStore: Send + Sync + 'static {
    /// Stores `run`, replacing its previous snapshot.
    fn save(&self, run: &Run) -> impl Future<Output = Result<(), RunStoreError>> + Send;

    /// Loads the snapshot of run `id`.
    fn load(&self, id: &RunId) -> impl Future<Output = Result<Run, RunStoreError>> + Send;

    /// The ids of every stored run, oldest first where the store knows the order.
    fn list(&self) -> impl Future<Output = Result<Vec<RunId>, RunStoreError>> + Send;
}

/// The object-safe twin of [`RunStore`], implemented for every run store.
pub trait DynRunStore: Send + Sync + 'static {
    /// Boxed [`RunStore::save`].
    fn save_boxed<'a>(&'a self, run: &'a Run) -> BoxFuture<'a, Result<(), RunStoreError>>;
    /// Boxed [`RunStore::load`].
    fn load_boxed<'a>(&'a self, id: &'a RunId) -> BoxFuture<'a, Result<Run, RunStoreError>>;
    /// Boxed [`RunStore::list`].
    fn list_boxed(&self) -> BoxFuture<'_, Result<Vec<RunId>, RunStoreError>>;
}

impl<S: RunStore> DynRunStore for S {
    fn save_boxed<'a>(&'a self, run: &'a Run) -> BoxFuture<'a, Result<(), RunStoreError>> {
        Box::pin(self.save(run))
    }
    fn load_boxed<'a>(&'a self, id: &'a RunId) -> BoxFuture<'a, Result<Run, RunStoreError>> {
        Box::pin(self.load(id))
    }
    fn list_boxed(&self) -> BoxFuture<'_, Result<Vec<RunId>, RunStoreError>> {
        Box::pin(self.list())
    }
}

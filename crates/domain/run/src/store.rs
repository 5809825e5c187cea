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
    /// The backing service failed (a database, a remote store): what a store that does not
    /// do file I/O reports, with the cause as the source.
    #[error("run store failed while {context}: {source}")]
    Backend {
        /// What the store was doing.
        context: String,
        /// The failure.
        #[source]
        source: BoxError,
    },
    /// The run belongs to another writer now: nothing was saved.
    #[error(transparent)]
    FencedOut(#[from] Fenced),
}

/// A boxed error of any backend, the source of a `Backend` store error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A write refused because the run's lease belongs to another writer: the writer's fencing
/// token was superseded by a takeover, or it holds no lease for a run someone else holds.
/// Nothing was written; the writer must stop driving the run.
///
/// ```
/// use rein_run::Fenced;
/// let fenced = Fenced { run_id: "r1".parse()?, held: Some(3), current: Some(4) };
/// assert_eq!(
///     fenced.to_string(),
///     "run r1 is fenced out: this writer holds lease token 3 but the run's lease is at token \
///      4 now (another worker took it over); nothing was written, stop driving the run"
/// );
/// # Ok::<(), rein_run::RunIdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    /// The run written to.
    pub run_id: RunId,
    /// The fencing token the writer holds, if it holds one.
    pub held: Option<u64>,
    /// The run's fencing token now, if the run has a lease.
    pub current: Option<u64>,
}

impl std::fmt::Display for Fenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let run = &self.run_id;
        match (self.held, self.current) {
            (Some(held), Some(current)) => write!(
                f,
                "run {run} is fenced out: this writer holds lease token {held} but the run's \
                 lease is at token {current} now (another worker took it over); nothing was \
                 written, stop driving the run"
            ),
            (Some(held), None) => write!(
                f,
                "run {run} is fenced out: this writer holds lease token {held} but the run has \
                 no lease any more; nothing was written, stop driving the run"
            ),
            (None, current) => {
                write!(f, "run {run} is leased to another worker")?;
                if let Some(current) = current {
                    write!(f, " (lease token {current})")?;
                }
                write!(
                    f,
                    "; nothing was written, take the run's lease before writing to it"
                )
            }
        }
    }
}

impl std::error::Error for Fenced {}

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

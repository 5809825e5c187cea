//! Where the console reads: the run, ledger and artifact store ports, so the filesystem
//! stores of `rein run` and any other store behind the same ports can be shown.

use std::path::Path;
use std::sync::Arc;

use rein::ledger::LoadedLedger;
use rein::postgres::{PgLedgerStore, PgRunStore, PgStores};
use rein::store::{
    DynArtifactStore, DynLedgerStore, DynRunStore, DynStopRequestStore, FsConfig, FsLayout,
    FsRunIndex, FsStores, LedgerStoreError, RunStoreError,
};
use rein::{Run, RunId};

use crate::ConsoleError;
use crate::kept::KeptIndex;

/// The stores a console reads (the same the engine writes).
#[derive(Clone)]
pub struct Stores {
    pub(crate) runs: Arc<dyn DynRunStore>,
    pub(crate) ledgers: Arc<dyn DynLedgerStore>,
    pub(crate) artifacts: Arc<dyn DynArtifactStore>,
    /// Where operators' stop requests go (none: the console cannot stop runs).
    pub(crate) stops: Option<Arc<dyn DynStopRequestStore>>,
    /// The console's run index, on a filesystem store: listings read only what changed.
    /// Shared by every clone, so a console keeps one in memory.
    pub(crate) index: Option<Arc<KeptIndex>>,
    /// The run store, on a `PostgreSQL` store: listings are paged by the database.
    pub(crate) pg: Option<PgRunStore>,
    /// The ledger store, on a `PostgreSQL` store: a page's ledgers are read in one query.
    pub(crate) pg_ledgers: Option<PgLedgerStore>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}

impl Stores {
    /// The stores behind the three ports.
    #[must_use]
    pub fn new(
        runs: Arc<dyn DynRunStore>,
        ledgers: Arc<dyn DynLedgerStore>,
        artifacts: Arc<dyn DynArtifactStore>,
    ) -> Self {
        Self {
            runs,
            ledgers,
            artifacts,
            stops: None,
            index: None,
            pg: None,
            pg_ledgers: None,
        }
    }

    /// The stores of a `PostgreSQL` database (as `rein run --store postgres://…` writes it).
    /// The runs list and the inbox are filtered, ordered and paged by the database, from the
    /// columns it keeps beside each snapshot; only a page's snapshots and ledgers are read.
    #[must_use]
    pub fn postgres(stores: &PgStores) -> Self {
        let mut out = Self::new(
            Arc::new(stores.runs().clone()),
            Arc::new(stores.ledgers().clone()),
            Arc::new(stores.artifacts().clone()),
        );
        out.pg = Some(stores.runs().clone());
        out.pg_ledgers = Some(stores.ledgers().clone());
        out
    }

    /// Keeps operators' stop requests (abort, interrupt) in `store`: the one the engines
    /// that drive the runs look in (`EngineBuilder::stop_request_store`).
    #[must_use]
    pub fn with_stop_requests(mut self, store: Arc<dyn DynStopRequestStore>) -> Self {
        self.stops = Some(store);
        self
    }

    /// The filesystem stores of data directory `dir` (as `rein run --data-dir` writes it).
    ///
    /// # Errors
    /// [`ConsoleError::DataDir`] when `dir` is not a directory or cannot be opened.
    pub fn filesystem(dir: &Path) -> Result<Self, ConsoleError> {
        if !dir.is_dir() {
            return Err(ConsoleError::DataDir {
                path: dir.to_path_buf(),
                reason: "it is not a directory; runs are stored where `rein run --data-dir DIR` put them (default ./.rein)".to_owned(),
            });
        }
        // Opened to read: a ledger a crashed or live writer left with a torn last line is
        // read around, never locked, so the console never stands in a writer's way.
        let config = FsConfig::default().reading();
        let stores = FsStores::open_with(dir, config).map_err(|e| ConsoleError::DataDir {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
        let stops = Arc::new(stores.stop_requests());
        let index = FsRunIndex::named(&FsLayout::new(dir), crate::summary::INDEX_FILE);
        let (runs, ledgers, artifacts) = stores.into_parts();
        let mut stores = Self::new(Arc::new(runs), Arc::new(ledgers), Arc::new(artifacts))
            .with_stop_requests(stops);
        stores.index = Some(Arc::new(KeptIndex::new(index)));
        Ok(stores)
    }

    /// Every run id either store knows, oldest first (v7 ids sort by time).
    pub(crate) async fn ids(&self) -> Result<Vec<RunId>, String> {
        let mut ids = self.runs.list_boxed().await.map_err(|e| e.to_string())?;
        ids.extend(self.ledgers.list_boxed().await.map_err(|e| e.to_string())?);
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// Run `id`'s snapshot (a cache of its ledger, cheap to read).
    pub(crate) async fn snapshot(&self, id: &RunId) -> Result<Run, RunStoreError> {
        self.runs.load_boxed(id).await
    }

    /// Run `id`'s ledger, verified by the store.
    pub(crate) async fn ledger(&self, id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        self.ledgers.load_boxed(id).await
    }
}

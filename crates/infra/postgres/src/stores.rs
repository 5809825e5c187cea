//! `PgStores`: one pool, the three stores on it, and the leases this process holds.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Hook, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};

use crate::lease::Held;
use crate::pending::Pending;
use crate::{
    PgArtifactStore, PgConfig, PgError, PgLedgerStore, PgRunStore, PgStopRequests, schema,
};

/// The `PostgreSQL` stores of one database: run snapshots ([`PgRunStore`]), ledgers
/// ([`PgLedgerStore`]), artifacts ([`PgArtifactStore`]) and stop requests
/// ([`PgStopRequests`]) over one connection pool, and
/// the run leases this process holds ([`acquire_lease`](Self::acquire_lease)).
///
/// Cheap to clone: clones share the pool and the leases. Two `PgStores` (in one process
/// or in two) are two writers: each holds its own leases, and each is fenced out of a run
/// the other took over.
#[derive(Clone)]
pub struct PgStores {
    pub(crate) shared: Arc<Shared>,
    runs: PgRunStore,
    ledgers: PgLedgerStore,
    artifacts: PgArtifactStore,
    stops: PgStopRequests,
}

/// What the three stores share.
pub(crate) struct Shared {
    pub(crate) pool: Pool,
    pub(crate) config: PgConfig,
    pub(crate) held: Held,
    /// Appends waiting for their step's commit ([`CommitPolicy::EveryStep`](crate::CommitPolicy)),
    /// and the last entry this process wrote to each run.
    pub(crate) pending: Arc<Pending>,
}

impl Shared {
    pub(crate) async fn client(&self) -> Result<Object, deadpool_postgres::PoolError> {
        self.pool.get().await
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PgStores {
    /// Connects to the database `config` names, and brings its schema to this rein's
    /// version (see [`SCHEMA_VERSION`](crate::SCHEMA_VERSION)): the migrations run in one
    /// transaction under an advisory lock, so processes starting at once are safe.
    ///
    /// # Errors
    /// [`PgError::Connect`] when no connection can be made; [`PgError::SchemaTooNew`] for
    /// a database a newer rein migrated; [`PgError::Migrate`] when a migration fails.
    pub async fn connect(config: PgConfig) -> Result<Self, PgError> {
        let target = config.target();
        let mut pg = config.pg.clone();
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(Duration::from_secs(10));
        }
        let manager = Manager::from_config(
            pg,
            config.tls.connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pending = Arc::new(Pending::default());
        // A new connection may reach another database than the last one did (a failover to
        // a replica that had not received every commit): what this process knows it wrote
        // is forgotten, and each run's next batch is checked against the stored tip again.
        let forget = Arc::clone(&pending);
        let pool = Pool::builder(manager)
            .post_create(Hook::sync_fn(move |_, _| {
                forget.forget_written();
                Ok(())
            }))
            .max_size(config.pool_size())
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(30)))
            .create_timeout(Some(Duration::from_secs(15)))
            .build()
            .map_err(|source| PgError::connect(&target, source))?;
        schema::migrate(&pool, &target).await?;
        let shared = Arc::new(Shared {
            pool,
            config,
            held: Held::default(),
            pending,
        });
        Ok(Self {
            runs: PgRunStore::new(Arc::clone(&shared)),
            ledgers: PgLedgerStore::new(Arc::clone(&shared)),
            artifacts: PgArtifactStore::new(Arc::clone(&shared)),
            stops: PgStopRequests::new(Arc::clone(&shared)),
            shared,
        })
    }

    /// Parses `url` ([`PgConfig::from_url`]) and connects ([`connect`](Self::connect)).
    ///
    /// # Errors
    /// [`PgError::InvalidUrl`], and those of [`connect`](Self::connect).
    pub async fn connect_url(url: &str) -> Result<Self, PgError> {
        Self::connect(PgConfig::from_url(url)?).await
    }

    /// The run store.
    #[must_use]
    pub const fn runs(&self) -> &PgRunStore {
        &self.runs
    }

    /// The ledger store.
    #[must_use]
    pub const fn ledgers(&self) -> &PgLedgerStore {
        &self.ledgers
    }

    /// The artifact store.
    #[must_use]
    pub const fn artifacts(&self) -> &PgArtifactStore {
        &self.artifacts
    }

    /// The stop request store: give it to every engine on these stores
    /// (`EngineBuilder::stop_request_store`), so that an abort asked for on any machine
    /// reaches the worker driving the run.
    #[must_use]
    pub const fn stop_requests(&self) -> &PgStopRequests {
        &self.stops
    }

    /// The configuration the stores were opened with.
    #[must_use]
    pub fn config(&self) -> &PgConfig {
        &self.shared.config
    }

    /// The schema version the database is at.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn schema_version(&self) -> Result<i32, PgError> {
        let client = self.client().await?;
        let row = client
            .query_one("SELECT version FROM rein_schema", &[])
            .await
            .map_err(|e| PgError::query("reading the schema version", e))?;
        Ok(row.get(0))
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<Object, PgError> {
        self.shared
            .client()
            .await
            .map_err(|source| PgError::Connect {
                target: self.shared.config.target(),
                source: Box::new(source),
            })
    }
}

impl fmt::Debug for PgStores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStores")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

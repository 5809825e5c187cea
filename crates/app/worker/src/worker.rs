//! The worker loop: claim, drive, repeat; wake on `NOTIFY`, poll as well; stop on shutdown.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rein::postgres::{PgError, PgStores};
use rein::{Engine, EngineError, RunId, RunSpec};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::drive::{Driven, drive};

/// The error an application gives when it cannot build a run's engine.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What [`Engines`] hands a worker for one run: the engine, and what to do once the
/// worker is done with the run (shut down the MCP servers the engine's tools talk to).
pub struct Opened {
    pub(crate) engine: Engine,
    pub(crate) release: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Opened {
    /// `engine`, with nothing to do afterwards.
    #[must_use]
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            release: None,
        }
    }

    /// Runs `release` once the worker is done with the run.
    #[must_use]
    pub fn with_release(mut self, release: impl Future<Output = ()> + Send + 'static) -> Self {
        self.release = Some(Box::pin(release));
        self
    }
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opened")
            .field("engine", &self.engine)
            .field("release", &self.release.is_some())
            .finish()
    }
}

/// How a worker rebuilds the engine that drives a run it claimed: from the configuration
/// stored with the run ([`PgStores::run_config`]), with this worker's own tools and keys.
/// The engine must use the worker's stores ([`PgStores::runs`] and the others).
///
/// Any `Fn(RunId) -> Future<Output = Result<Opened, BoxError>>` is one.
pub trait Engines: Send + Sync + 'static {
    /// The engine for run `run_id`.
    fn engine(&self, run_id: &RunId) -> OpenFuture<'_>;
}

/// What [`Engines::engine`] returns.
pub type OpenFuture<'a> = Pin<Box<dyn Future<Output = Result<Opened, BoxError>> + Send + 'a>>;

impl<F, Fut> Engines for F
where
    F: Fn(RunId) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Opened, BoxError>> + Send + 'static,
{
    fn engine(&self, run_id: &RunId) -> OpenFuture<'_> {
        Box::pin(self(run_id.clone()))
    }
}

/// A worker's settings.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Who the worker is, in its leases (unique per process: a host name and a pid).
    pub name: String,
    /// How many runs it drives at once.
    pub concurrency: usize,
    /// A lease's time to live by the database's clock; renewed every third of it. A dead
    /// worker's runs are taken over this long after its last renewal.
    pub lease_ttl: Duration,
    /// How often an idle worker looks for runs without a `NOTIFY`.
    pub poll: Duration,
}

impl WorkerOptions {
    /// `name`, one run at a time, a 30 s lease, a poll every 2 s.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            concurrency: 1,
            lease_ttl: Duration::from_secs(30),
            poll: Duration::from_secs(2),
        }
    }
}

/// Why a worker could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The options cannot work.
    #[error("invalid worker option {name}: {reason}")]
    InvalidOption {
        /// Which.
        name: &'static str,
        /// Why.
        reason: String,
    },
    /// The engine could not record a submitted run.
    #[error("cannot submit the run: {0}")]
    Submit(#[source] Box<EngineError>),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] PgError),
}

/// What a worker did before it stopped.
#[derive(Debug, Clone, Default)]
pub struct WorkerReport {
    /// Every run it claimed, in the order their driving ended.
    pub runs: Vec<Driven>,
}

/// A worker: claims queued runs from a `PostgreSQL` store and drives them (see the crate's
/// documentation).
pub struct Worker {
    stores: PgStores,
    engines: Arc<dyn Engines>,
    options: WorkerOptions,
    observer: Observer,
}

/// What is told of each run as its driving ends.
type Observer = Arc<dyn Fn(&Driven) + Send + Sync>;

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("stores", &self.stores)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker on `stores` that builds each run's engine with `engines`.
    ///
    /// # Errors
    /// [`WorkerError::InvalidOption`] for no concurrency, or a lease or poll of zero.
    pub fn new(
        stores: PgStores,
        engines: impl Engines,
        options: WorkerOptions,
    ) -> Result<Self, WorkerError> {
        let invalid = |name, reason: &str| {
            Err(WorkerError::InvalidOption {
                name,
                reason: reason.to_owned(),
            })
        };
        if options.concurrency == 0 {
            return invalid("concurrency", "it must be at least 1");
        }
        if options.lease_ttl < Duration::from_millis(10) {
            return invalid("lease_ttl", "it must be at least 10 ms");
        }
        if options.poll.is_zero() {
            return invalid("poll", "it must be more than zero");
        }
        Ok(Self {
            stores,
            engines: Arc::new(engines),
            options,
            observer: Arc::new(|_: &Driven| {}),
        })
    }

    /// Calls `observer` with each run as its driving ends (before [`Worker::run`] returns
    /// them all): for a log line per run.
    #[must_use]
    pub fn on_driven(mut self, observer: impl Fn(&Driven) + Send + Sync + 'static) -> Self {
        self.observer = Arc::new(observer);
        self
    }

    /// Serves until `shutdown` is cancelled: then claims nothing more, stops its runs (a
    /// tool call in progress finishes and is recorded), releases their leases and returns
    /// what it did. A store that fails is logged and tried again at the next poll.
    ///
    /// # Errors
    /// None yet: a failing database is waited out. The `Result` is for what may come.
    pub async fn run(self, shutdown: CancellationToken) -> Result<WorkerReport, WorkerError> {
        let Self {
            stores,
            engines,
            options,
            observer,
        } = self;
        let wakeups = match stores.listen_queue().await {
            Ok(wakeups) => Some(wakeups),
            Err(e) => {
                tracing::warn!(error = %e, "cannot LISTEN for queued runs; polling only");
                None
            }
        };
        let wake = || async {
            match &wakeups {
                Some(wakeups) => wakeups.next().await,
                None => std::future::pending().await,
            }
        };
        let slots = Arc::new(Semaphore::new(options.concurrency));
        // The runs this worker drives now: never claimed a second time (see `claim`).
        let busy: Arc<Mutex<HashSet<RunId>>> = Arc::default();
        let mut tasks = JoinSet::new();
        let mut report = WorkerReport::default();
        loop {
            while let Some(done) = tasks.try_join_next() {
                collect(&mut report, done);
            }
            let slot = tokio::select! {
                slot = Arc::clone(&slots).acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => break,
                },
                () = shutdown.cancelled() => break,
            };
            let driving: Vec<RunId> = busy
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned()
                .collect();
            let claimed = tokio::select! {
                claimed = stores.claim(&options.name, options.lease_ttl, &driving) => claimed,
                () = shutdown.cancelled() => break,
            };
            match claimed {
                Ok(Some(lease)) => {
                    tracing::info!(run = %lease.run_id(), token = lease.token(), worker = %options.name, "claimed a run");
                    let (stores, engines, shutdown) =
                        (stores.clone(), Arc::clone(&engines), shutdown.clone());
                    let ttl = options.lease_ttl;
                    let busy = Arc::clone(&busy);
                    let observer = Arc::clone(&observer);
                    busy.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(lease.run_id().clone());
                    tasks.spawn(async move {
                        let driven = drive(stores, engines, lease, ttl, shutdown).await;
                        observer(&driven);
                        busy.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&driven.run_id);
                        drop(slot);
                        driven
                    });
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "claiming a run failed; trying again"),
            }
            drop(slot);
            tokio::select! {
                () = wake() => {}
                () = tokio::time::sleep(options.poll) => {}
                Some(done) = tasks.join_next(), if !tasks.is_empty() => collect(&mut report, done),
                () = shutdown.cancelled() => break,
            }
        }
        while let Some(done) = tasks.join_next().await {
            collect(&mut report, done);
        }
        Ok(report)
    }
}

fn collect(report: &mut WorkerReport, done: Result<Driven, tokio::task::JoinError>) {
    match done {
        Ok(driven) => report.runs.push(driven),
        Err(e) => tracing::error!(error = %e, "a run's task ended abnormally"),
    }
}

/// Records `spec` as a run with `engine` (which must use `stores`) and queues it for a
/// worker; returns its id.
///
/// # Errors
/// [`WorkerError::Submit`] when the engine cannot record the run; [`WorkerError::Store`]
/// when it cannot be queued (it is recorded: queue it again with [`PgStores::enqueue`]).
pub async fn submit(
    engine: &Engine,
    stores: &PgStores,
    spec: impl Into<RunSpec>,
) -> Result<RunId, WorkerError> {
    let id = engine
        .submit(spec)
        .await
        .map_err(|e| WorkerError::Submit(Box::new(e)))?;
    stores.enqueue(&id).await?;
    Ok(id)
}

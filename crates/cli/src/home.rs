//! Where a command keeps runs: a data directory (the default) or a shared `PostgreSQL`
//! store (`--store postgres://…`, or `REIN_STORE`). The commands that drive runs (run,
//! resume, approve, narrow, replay) work on either through this one type.
//!
//! With a store, the scenario a run was started from is kept in the store beside the run
//! (with every secret redacted, as in a data directory), and the process that drives a run
//! holds its lease meanwhile: another process, on this machine or another, neither drives
//! it nor writes to it until the lease is released or expires by the database's clock.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rein::postgres::{Lease, LeaseKeeper, PgError, PgStores};
use rein::{BuildError, EngineBuilder, RunId};

use crate::cli::{DataDirArg, StoreArg};
use crate::datadir::{DataDir, RunLock};
use crate::exit::{CliError, Exit};
use crate::render::shell_word;
use crate::scenario::Scenario;

/// How long a `rein` process's lease on a run lasts without a renewal (it renews every
/// third of it): a `rein` killed mid-run leaves its run to others this long after.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(30);

/// Where a command keeps runs.
#[derive(Debug, Clone)]
pub(crate) enum Home {
    /// A data directory.
    Dir(DataDir),
    /// A `PostgreSQL` store.
    Store(PgStores),
}

/// Something that can say, as a command-line flag, where a run is kept: for the hints
/// `rein` prints (`rein resume RUN --data-dir DIR`).
pub(crate) trait Place {
    /// The flag, ready to paste (a store's URL is not repeated: it may hold a password).
    fn flag(&self) -> String;
}

impl Place for DataDir {
    fn flag(&self) -> String {
        format!("--data-dir {}", shell_word(self.shown()))
    }
}

impl Place for Home {
    fn flag(&self) -> String {
        match self {
            Self::Dir(data) => data.flag(),
            Self::Store(_) => "--store URL".to_owned(),
        }
    }
}

/// What a process holds while it drives a run, so that no other drives it meanwhile.
#[derive(Debug)]
pub(crate) enum Hold {
    /// The data directory's lock on the run.
    Lock(RunLock),
    /// The run's lease in the store, renewed in the background.
    Lease(PgStores, Lease, LeaseKeeper),
}

impl Hold {
    /// Gives the run up: a lease is released (the next holder takes over at once); a lock
    /// is dropped.
    pub(crate) async fn release(self) {
        match self {
            Self::Lock(lock) => drop(lock),
            Self::Lease(stores, lease, keeper) => {
                drop(keeper);
                if let Err(e) = stores.release_lease(&lease).await {
                    // It expires by itself.
                    eprintln!(
                        "warning: cannot release the lease of run {}: {e}",
                        lease.run_id()
                    );
                }
            }
        }
    }
}

impl Home {
    /// The place `data` and `store` name: the store when one is given.
    ///
    /// # Errors
    /// As [`open_store`].
    pub(crate) async fn open(data: &DataDirArg, store: &StoreArg) -> Result<Self, CliError> {
        match &store.store {
            Some(url) => Ok(Self::Store(open_store(url).await?)),
            None => Ok(Self::Dir(DataDir::new(&data.data_dir)?)),
        }
    }

    /// The data directory, if that is where runs are kept.
    pub(crate) fn dir(&self) -> Option<&DataDir> {
        match self {
            Self::Dir(data) => Some(data),
            Self::Store(_) => None,
        }
    }

    /// Checks that runs can be read here (a data directory exists).
    ///
    /// # Errors
    /// Bad input, when the data directory does not exist.
    pub(crate) fn require(&self) -> Result<(), CliError> {
        self.dir().map_or(Ok(()), DataDir::require)
    }

    /// `builder` with this place's stores, built.
    ///
    /// # Errors
    /// What building reports, as exit codes.
    pub(crate) fn engine(&self, builder: EngineBuilder) -> Result<rein::Engine, CliError> {
        match self {
            Self::Dir(data) => builder
                .filesystem(data.root())
                .build()
                .map_err(|e| build_error(&e, data)),
            Self::Store(stores) => builder
                .run_store(stores.runs().clone())
                .ledger_store(stores.ledgers().clone())
                .artifact_store(stores.artifacts().clone())
                .stop_request_store(stores.stop_requests().clone())
                .build()
                .map_err(|e| build_error_on_store(&e)),
        }
    }

    /// Keeps run `id`'s scenario (its secrets redacted) and the path of its file, for the
    /// processes that open the run again.
    ///
    /// # Errors
    /// When it cannot be written.
    pub(crate) async fn save_scenario(
        &self,
        id: &RunId,
        scenario: &Scenario,
        source: &Path,
    ) -> Result<(), CliError> {
        match self {
            Self::Dir(data) => data.save_scenario(id, scenario, source),
            Self::Store(stores) => {
                let redacted = crate::scenario::secrets::redacted(scenario);
                let text = serde_json::to_string_pretty(&redacted).map_err(|e| {
                    CliError::new(Exit::Failed, format!("cannot store the scenario: {e}"))
                })?;
                let source = std::path::absolute(source)
                    .unwrap_or_else(|_| source.to_path_buf())
                    .display()
                    .to_string();
                stores
                    .save_run_config(id, &text, Some(&source))
                    .await
                    .map_err(|e| store_failed(&e))
            }
        }
    }

    /// Forgets run `id`'s scenario (the run could not start).
    pub(crate) fn forget_scenario(&self, id: &RunId) {
        if let Self::Dir(data) = self {
            data.forget_scenario(id);
        }
    }

    /// Takes run `id` for this process: the data directory's lock (waiting for another
    /// `rein` driving it), or the store's lease (refused while another process holds it).
    ///
    /// # Errors
    /// When the lock cannot be taken, or another process holds the lease.
    pub(crate) async fn hold(&self, id: &RunId) -> Result<Hold, CliError> {
        match self {
            Self::Dir(data) => Ok(Hold::Lock(data.lock_run(id).await?)),
            Self::Store(stores) => {
                let lease = stores
                    .acquire_lease(id, &owner(), LEASE_TTL)
                    .await
                    .map_err(|e| match e {
                        PgError::LeaseHeld { .. } => CliError::new(
                            Exit::Failed,
                            format!("{e}; nothing was done (another rein process or worker is driving it)"),
                        ),
                        other => store_failed(&other),
                    })?;
                let keeper = stores.keep_lease(lease.clone(), LEASE_TTL);
                Ok(Hold::Lease(stores.clone(), lease, keeper))
            }
        }
    }
}

/// Who this process is in the leases it takes: `rein@HOST:PID`.
pub(crate) fn owner() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("rein@{host}:{}", std::process::id())
}

/// Connects to the store at `url` (its schema migrated): a URL that does not parse, or whose
/// `sslmode` or `sslrootcert` cannot be used, is bad input (exit 2); a database that cannot be reached or is too new fails (exit 1). The
/// messages never hold the password.
///
/// # Errors
/// As said.
pub(crate) async fn open_store(url: &str) -> Result<PgStores, CliError> {
    PgStores::connect_url(url).await.map_err(|e| match e {
        PgError::InvalidUrl { .. } | PgError::InvalidTls { .. } => {
            CliError::bad_input(e.to_string())
        }
        _ => CliError::new(Exit::Failed, e.to_string()),
    })
}

/// A store error as the CLI reports it (exit 1).
pub(crate) fn store_failed(e: &PgError) -> CliError {
    CliError::new(Exit::Failed, e.to_string())
}

/// An error building the engine after the scenario checked out: the data directory, or the
/// tools an MCP server brought (a schema the engine cannot compile, a name taken).
pub(crate) fn build_error(e: &BuildError, data: &DataDir) -> CliError {
    match e {
        // The store says it cannot open the directory; say why when it is plain to see.
        BuildError::Stores(reason) => match file_in_the_way(data.root()) {
            Some(file) => {
                let what = if file == data.root() {
                    "it is a file, not a directory".to_owned()
                } else {
                    format!("{} is a file, not a directory", file.display())
                };
                CliError::bad_input(format!(
                    "cannot use data directory {}: {what}; choose another --data-dir, or move the file away",
                    data.shown()
                ))
            }
            None => CliError::bad_input(format!(
                "cannot use data directory {}: {reason}",
                data.shown()
            )),
        },
        // What the scenario (or a server it imports) gave does not build: bad input, as
        // `rein validate` says of the same file.
        BuildError::InvalidSchema { .. }
        | BuildError::DuplicateTool(_)
        | BuildError::Eligibility(_)
        | BuildError::Transitions(_)
        | BuildError::InvalidOption { .. } => CliError::bad_input(e.to_string()),
        other => CliError::new(Exit::Failed, other.to_string()),
    }
}

/// An error building the engine on a `PostgreSQL` store: what the scenario gave is bad
/// input, as for a data directory; anything else a failure.
pub(crate) fn build_error_on_store(e: &BuildError) -> CliError {
    match e {
        BuildError::InvalidSchema { .. }
        | BuildError::DuplicateTool(_)
        | BuildError::Eligibility(_)
        | BuildError::Transitions(_)
        | BuildError::InvalidOption { .. } => CliError::bad_input(e.to_string()),
        other => CliError::new(Exit::Failed, other.to_string()),
    }
}

/// The first existing path among `dir` and its ancestors, if it is not a directory.
fn file_in_the_way(dir: &Path) -> Option<PathBuf> {
    let existing = dir.ancestors().find(|p| p.exists())?;
    (!existing.is_dir()).then(|| existing.to_path_buf())
}

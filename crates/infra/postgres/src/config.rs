//! `PgConfig`: where the database is and how the stores use it, parsed from a URL.

use std::fmt;
use std::str::FromStr;

use tokio_postgres::config::Host;

use crate::sslmode::split_tls_params;
use crate::trust::{Roots, Tls};
use crate::{PgError, SslMode};

/// How to reach the database and how the stores use it: a `postgres://` URL (or libpq
/// key=value string), the connection pool's size and the largest artifact kept.
///
/// TLS is set by libpq's `sslmode` and `sslrootcert` parameters ([`SslMode`]).
///
/// The password stays inside: [`Debug`](fmt::Debug) and every error name the target as
/// `user@host:port/database`, never the password.
///
/// ```
/// use rein_postgres::{PgConfig, SslMode};
///
/// let config: PgConfig = "postgres://rein:s3cret@db.internal:5433/agents?sslmode=require".parse()?;
/// assert_eq!(config.target(), "rein@db.internal:5433/agents");
/// assert_eq!(config.ssl_mode(), SslMode::Require);
/// assert!(!format!("{config:?}").contains("s3cret"));
/// assert_eq!(config.with_pool_size(4).pool_size(), 4);
/// # Ok::<(), rein_postgres::PgError>(())
/// ```
#[derive(Clone)]
pub struct PgConfig {
    pub(crate) pg: tokio_postgres::Config,
    pub(crate) tls: Tls,
    pool_size: usize,
    max_artifact_size: u64,
    commit: CommitPolicy,
}

/// When the ledger entries a run appends are committed to the database.
///
/// Either way an entry is written in one statement with its lease and chain checks, and a
/// commit is as durable as the server's `synchronous_commit` makes it. The engine syncs a
/// run at every step's end and before anything that must not happen unrecorded: a
/// non-idempotent tool's side effect, a planner's request; a snapshot save, a ledger's load
/// and a lease's release write what waits first.
///
/// ```
/// use rein_postgres::{CommitPolicy, PgConfig};
///
/// let config: PgConfig = "postgres://rein@localhost/agents".parse()?;
/// assert_eq!(config.commit(), CommitPolicy::EveryStep);
/// let config = config.with_commit(CommitPolicy::EveryEntry);
/// assert_eq!(config.commit(), CommitPolicy::EveryEntry);
/// # Ok::<(), rein_postgres::PgError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitPolicy {
    /// Each entry is committed on its own before `append` returns: one commit an entry. A
    /// crash of this process loses nothing it appended.
    EveryEntry,
    /// The entries a step appends wait in this process and are committed together when the
    /// engine syncs the run: one statement and one commit a step, as the filesystem store's
    /// `FsyncPolicy::EveryStep` makes one `fsync` a step. A crash of this process loses the
    /// entries of the step it was in (never one that a side effect or a snapshot depends
    /// on): the run resumes from its last synced entry, and the step is made again. A
    /// writer that lost the run's lease is refused at that commit.
    #[default]
    EveryStep,
}

impl PgConfig {
    /// The pool size when none is given: enough for a worker's concurrent runs.
    pub const DEFAULT_POOL_SIZE: usize = 16;

    /// The largest artifact kept in the database when no limit is given: 64 MiB. Larger
    /// content is refused with [`ArtifactError::TooLarge`](rein_artifact::ArtifactError)
    /// before anything is stored (`PostgreSQL`'s `bytea` holds at most 1 GiB, and a value is
    /// read whole into memory).
    pub const DEFAULT_MAX_ARTIFACT_SIZE: u64 = 64 * 1024 * 1024;

    /// Parses a `postgres://user:password@host:port/database?…` URL or a libpq
    /// `key=value` string. A unix socket directory is given as the host, percent-encoded
    /// (`postgres://rein:pw@%2Fvar%2Frun%2Fpostgresql/rein`).
    ///
    /// `sslmode` ([`SslMode`], `prefer` when absent) and `sslrootcert` (a PEM file of
    /// certificate authorities, or `system`) are read as libpq reads them; the root
    /// certificates are read here, once. `sslrootcert=system` without `sslmode` means
    /// `verify-full`, as in libpq. A unix socket never uses TLS.
    ///
    /// # Errors
    /// [`PgError::InvalidUrl`] saying what is wrong, without repeating the URL (it may hold
    /// a password); [`PgError::InvalidTls`] naming `sslmode` or `sslrootcert` when one
    /// cannot be used.
    pub fn from_url(url: &str) -> Result<Self, PgError> {
        let (rest, params) = split_tls_params(url)?;
        // Only tokio-postgres's summary: its details can quote the string (a URL that is not
        // one reads as an unknown `key=value` option, password and all).
        let mut pg = tokio_postgres::Config::from_str(&rest).map_err(|e| PgError::InvalidUrl {
            reason: e.to_string(),
        })?;
        if pg.get_hosts().is_empty() {
            return Err(PgError::InvalidUrl {
                reason: "it names no host".into(),
            });
        }
        if pg.get_user().is_none() {
            return Err(PgError::InvalidUrl {
                reason: "it names no user".into(),
            });
        }
        if pg.get_application_name().is_none() {
            pg.application_name("rein");
        }
        let roots = params
            .sslrootcert
            .as_deref()
            .map(Roots::parse)
            .transpose()?;
        let mode = match (params.sslmode, &roots) {
            (Some(mode), _) => mode.parse()?,
            (None, Some(Roots::System)) => SslMode::VerifyFull,
            (None, _) => SslMode::Prefer,
        };
        let tls = Tls::new(mode, roots)?;
        pg.ssl_mode(wire_mode(mode, pg.get_hosts()));
        Ok(Self {
            pg,
            tls,
            pool_size: Self::DEFAULT_POOL_SIZE,
            max_artifact_size: Self::DEFAULT_MAX_ARTIFACT_SIZE,
            commit: CommitPolicy::default(),
        })
    }

    /// Sets the database to use, in place of the URL's.
    #[must_use]
    pub fn with_dbname(mut self, name: &str) -> Self {
        self.pg.dbname(name);
        self
    }

    /// Sets how many connections the pool opens at most (at least 1).
    #[must_use]
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// Sets the largest artifact, in bytes, the store keeps.
    #[must_use]
    pub fn with_max_artifact_size(mut self, bytes: u64) -> Self {
        self.max_artifact_size = bytes;
        self
    }

    /// Sets when appended ledger entries are committed ([`CommitPolicy::EveryStep`] unless
    /// set).
    #[must_use]
    pub const fn with_commit(mut self, commit: CommitPolicy) -> Self {
        self.commit = commit;
        self
    }

    /// When appended ledger entries are committed.
    #[must_use]
    pub const fn commit(&self) -> CommitPolicy {
        self.commit
    }

    /// How connections use TLS (`sslmode`).
    #[must_use]
    pub const fn ssl_mode(&self) -> SslMode {
        self.tls.mode
    }

    /// The pool's size.
    #[must_use]
    pub const fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// The largest artifact, in bytes, the store keeps.
    #[must_use]
    pub const fn max_artifact_size(&self) -> u64 {
        self.max_artifact_size
    }

    /// Where the stores connect, for people: `user@host:port/database`, no password.
    #[must_use]
    pub fn target(&self) -> String {
        let user = self.pg.get_user().unwrap_or("?");
        let ports = self.pg.get_ports();
        let hosts: Vec<String> = self
            .pg
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let name = match host {
                    Host::Tcp(name) => name.clone(),
                    #[cfg(unix)]
                    Host::Unix(path) => path.display().to_string(),
                };
                match ports.get(i).or_else(|| ports.first()) {
                    Some(port) if *port != 5432 => format!("{name}:{port}"),
                    _ => name,
                }
            })
            .collect();
        let db = self.pg.get_dbname().unwrap_or(user);
        format!("{user}@{}/{db}", hosts.join(","))
    }
}

impl FromStr for PgConfig {
    type Err = PgError;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        Self::from_url(url)
    }
}

impl fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgConfig")
            .field("target", &self.target())
            .field("sslmode", &self.tls.mode.as_str())
            .field("sslrootcert", &self.tls.roots)
            .field("pool_size", &self.pool_size)
            .field("max_artifact_size", &self.max_artifact_size)
            .field("commit", &self.commit)
            .finish_non_exhaustive()
    }
}

/// What tokio-postgres is told: it knows whether to ask the server for TLS (`prefer`,
/// `require`), not what to verify, which the connector decides. Unix sockets only: no TLS,
/// whatever the mode (libpq ignores `sslmode` there; the server refuses TLS on them).
fn wire_mode(mode: SslMode, hosts: &[Host]) -> tokio_postgres::config::SslMode {
    #[cfg(unix)]
    let all_sockets = hosts.iter().all(|host| matches!(host, Host::Unix(_)));
    #[cfg(not(unix))]
    let all_sockets = false;
    match mode {
        _ if all_sockets => tokio_postgres::config::SslMode::Disable,
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            tokio_postgres::config::SslMode::Require
        }
    }
}

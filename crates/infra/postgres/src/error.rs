//! `PgError`: why the `PostgreSQL` stores could not be opened, or a lease not taken or kept.

use rein_run::{BoxError, Fenced, RunId};

/// Why connecting, migrating or a lease operation failed.
///
/// Store operations fail with the error type of the port they implement
/// ([`RunStoreError`](rein_run::RunStoreError),
/// [`LedgerStoreError`](rein_ledger::LedgerStoreError),
/// [`ArtifactError`](rein_artifact::ArtifactError)), as
/// their `Backend` or `FencedOut` variants. No message here holds a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The store URL does not parse.
    #[error(
        "the store url is not a valid PostgreSQL url: {reason}; write it as \
         postgres://user:password@host:port/database"
    )]
    InvalidUrl {
        /// What is wrong with it.
        reason: String,
    },
    /// A TLS parameter of the store URL (`sslmode`, `sslrootcert`) cannot be used: an
    /// unknown mode, a root certificate file that cannot be read or holds no certificate.
    /// Found before any connection is tried.
    #[error("the store url's {parameter} cannot be used: {reason}")]
    InvalidTls {
        /// The parameter: `sslmode` or `sslrootcert`.
        parameter: &'static str,
        /// What is wrong with it, and what to write instead.
        reason: String,
    },
    /// No connection could be made (refused, unknown host, bad credentials, no database, a
    /// TLS session refused or a server certificate that does not verify).
    #[error(
        "cannot connect to PostgreSQL at {target}: {source}; check the url, that the server \
         is running, and that it accepts this user and password"
    )]
    Connect {
        /// Where, as `user@host/database`.
        target: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// The database holds the schema of a newer rein.
    #[error(
        "the database at {target} holds rein schema version {found}, newer than this rein \
         understands (up to {supported}); upgrade rein, or point it at another database"
    )]
    SchemaTooNew {
        /// Where.
        target: String,
        /// The version found.
        found: i32,
        /// The newest version this rein knows.
        supported: i32,
    },
    /// Applying a schema migration failed; it was rolled back whole.
    #[error("migrating the database at {target} to schema version {version} failed: {source}")]
    Migrate {
        /// Where.
        target: String,
        /// The version being applied.
        version: i32,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// A statement failed.
    #[error("postgres store failed while {context}: {source}")]
    Query {
        /// What the store was doing.
        context: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
    /// The run's lease is held by another owner and has not expired.
    #[error(
        "run {run_id} is leased to {owner} (lease token {token}) for another {remaining_ms} ms; \
         wait for the lease to expire or be released"
    )]
    LeaseHeld {
        /// The run.
        run_id: RunId,
        /// Who holds it.
        owner: String,
        /// The holder's fencing token.
        token: u64,
        /// How long the lease still runs, by the database's clock.
        remaining_ms: u64,
    },
    /// The lease was taken over (or released): this owner may not renew it.
    #[error(transparent)]
    Fenced(#[from] Fenced),
}

impl PgError {
    pub(crate) fn query(context: impl Into<String>, source: impl crate::failure::Explain) -> Self {
        Self::Query {
            context: context.into(),
            source: source.explain(),
        }
    }

    pub(crate) const fn invalid_tls(parameter: &'static str, reason: String) -> Self {
        Self::InvalidTls { parameter, reason }
    }

    pub(crate) fn connect(target: impl Into<String>, source: impl crate::failure::Explain) -> Self {
        Self::Connect {
            target: target.into(),
            source: source.explain(),
        }
    }
}

//! What the database said, for people: tokio-postgres prints a server's error as `db
//! error`; these wrappers print the server's severity, SQLSTATE and message instead, and
//! keep the original error as the source.

use std::error::Error;
use std::fmt;

use rein_run::BoxError;

/// A database failure with a readable message and the original as its source.
#[derive(Debug)]
struct Explained {
    message: String,
    source: BoxError,
}

impl fmt::Display for Explained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Explained {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

/// Turns a failure into the boxed source of a store error, readable.
pub(crate) trait Explain {
    /// The failure, boxed.
    fn explain(self) -> BoxError;
}

fn message_of(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} {}: {}", db.severity(), db.code().code(), db.message());
    }
    if e.is_closed() {
        return "the connection to the database was closed".into();
    }
    match e.source() {
        Some(source) => format!("{e}: {source}"),
        None => e.to_string(),
    }
}

impl Explain for tokio_postgres::Error {
    fn explain(self) -> BoxError {
        Box::new(Explained {
            message: message_of(&self),
            source: Box::new(self),
        })
    }
}

impl Explain for deadpool_postgres::PoolError {
    fn explain(self) -> BoxError {
        use deadpool_postgres::PoolError;
        match self {
            PoolError::Backend(e) => e.explain(),
            PoolError::Timeout(_) => Box::new(Explained {
                message: "timed out waiting for a database connection".into(),
                source: Box::new(self),
            }),
            other => Box::new(other),
        }
    }
}

impl Explain for serde_json::Error {
    fn explain(self) -> BoxError {
        Box::new(self)
    }
}

impl Explain for String {
    fn explain(self) -> BoxError {
        self.into()
    }
}

impl Explain for deadpool_postgres::BuildError {
    fn explain(self) -> BoxError {
        Box::new(self)
    }
}

impl Explain for rein_ledger::LedgerStoreError {
    fn explain(self) -> BoxError {
        Box::new(self)
    }
}

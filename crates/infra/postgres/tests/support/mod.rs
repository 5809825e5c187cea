//! The test database: found through `REIN_TEST_PG_URL` or the cluster `make pg-start`
//! started, and a fresh database per test.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part of it

use std::path::Path;

use rein_ledger::{EntryKind, Ledger};
use rein_postgres::{PgConfig, PgStores};
use rein_run::{State, Timestamp};
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

/// The URL of the test cluster: `REIN_TEST_PG_URL`, else the one `make pg-start` wrote
/// under target/pg/. Without either the test fails, saying how to start one: a `PostgreSQL`
/// suite that skips itself silently would let every store bug through.
pub fn url() -> String {
    if let Ok(url) = std::env::var("REIN_TEST_PG_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_owned();
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/pg/url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => panic!(
            "the PostgreSQL tests need a database: run `make pg-start` (a throwaway cluster, \
             stopped by `make pg-stop`), or set REIN_TEST_PG_URL to a postgres:// url of a \
             role that may create databases; `make test` does the first for you"
        ),
    }
}

/// The test cluster over TCP with TLS: `REIN_TEST_PG_TLS_URL`, else the one `make pg-start`
/// wrote under target/pg/ (`scripts/pg-test-cluster.sh tls-url`): a `postgres://` URL to
/// `localhost` with `sslmode=verify-full` and `sslrootcert` the certificate authority that
/// signed the server's certificate, which names `localhost` and not 127.0.0.1, and a server
/// that refuses TCP without TLS. Without either the test fails, saying how to start one.
pub fn tls_url() -> String {
    if let Ok(url) = std::env::var("REIN_TEST_PG_TLS_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_owned();
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/pg/tls-url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => panic!(
            "the TLS tests need the test cluster over TCP with TLS: run `make pg-start` (a \
             throwaway cluster with its own certificate authority), or set \
             REIN_TEST_PG_TLS_URL to a postgres://…@localhost:PORT/…?sslmode=verify-full&\
             sslrootcert=CA url; `make test` does the first for you"
        ),
    }
}

/// A fresh, empty database on the test cluster, dropped by [`Fresh::drop_db`].
#[derive(Debug)]
pub struct Fresh {
    pub name: String,
    pub config: PgConfig,
}

/// A direct connection to database `dbname` (the URL's own when `None`).
pub async fn connect(dbname: Option<&str>) -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = url().parse().expect("the test url parses");
    if let Some(dbname) = dbname {
        config.dbname(dbname);
    }
    let (client, connection) = config
        .connect(NoTls)
        .await
        .expect("the test cluster answers");
    tokio::spawn(connection);
    client
}

impl Fresh {
    /// Creates `rein_test_<random>`.
    pub async fn new() -> Self {
        let name = format!("rein_test_{}", uuid::Uuid::new_v4().simple());
        connect(None)
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("the test role may create databases");
        let config = PgConfig::from_url(&url())
            .expect("the test url parses")
            .with_dbname(&name)
            .with_pool_size(8);
        Self { name, config }
    }

    /// Stores over the fresh database (schema migrated).
    pub async fn stores(&self) -> PgStores {
        PgStores::connect(self.config.clone())
            .await
            .expect("the fresh database opens")
    }

    /// Stores over the fresh database committing appended entries as `commit` says.
    #[allow(dead_code, reason = "not every test binary uses it")]
    pub async fn stores_with(&self, commit: rein_postgres::CommitPolicy) -> PgStores {
        PgStores::connect(self.config.clone().with_commit(commit))
            .await
            .expect("the fresh database opens")
    }

    /// A direct connection to the fresh database, for what a test does behind the stores.
    pub async fn sql(&self) -> tokio_postgres::Client {
        connect(Some(&self.name)).await
    }

    /// Drops the database (its connections too). An autovacuum worker busy in it makes
    /// `FORCE` fail with `insufficient_privilege` (`PostgreSQL` 15 will not let a role that is
    /// not a superuser end it); it is gone within moments, so the drop is made again.
    pub async fn drop_db(self) {
        let admin = connect(None).await;
        let drop = format!("DROP DATABASE {} WITH (FORCE)", self.name);
        for attempt in 1.. {
            match admin.batch_execute(&drop).await {
                Ok(()) => return,
                Err(e) if attempt < 100 && e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                Err(e) => panic!("the test database drops: {e}"),
            }
        }
    }
}

/// A ledger of `n` steering notes for run `run` (notes with text JSON must escape).
pub fn sample(run: &str, n: u64) -> Ledger {
    let mut ledger = Ledger::new(run.parse().unwrap());
    for i in 1..=n {
        ledger.append(
            Timestamp::from_unix_millis(1_700_000_000_000 + i),
            State::Explore,
            EntryKind::Steering {
                note: format!("note {i}: «ünïcödé» \"quoted\" \\ {{}}"),
            },
        );
    }
    ledger
}

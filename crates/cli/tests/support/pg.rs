//! The test cluster for the tests on a `PostgreSQL` store (`make pg-start`, or
//! `REIN_TEST_PG_URL`; docs/POSTGRES.md): its URL, a database of a test's own, a restart.

use std::path::Path;

use tokio_postgres::NoTls;

/// The test cluster's URL: `REIN_TEST_PG_URL`, else the one `make pg-start` wrote. Without
/// either the test fails saying how to start one; it never skips silently.
pub fn cluster_url() -> String {
    if let Ok(url) = std::env::var("REIN_TEST_PG_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_owned();
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pg/url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => panic!(
            "the PostgreSQL tests need a database: run `make pg-start`, or set \
             REIN_TEST_PG_URL to a postgres:// url; `make test` does the first for you"
        ),
    }
}

/// A new connection to the database at `url`.
pub async fn connect(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = url
        .parse::<tokio_postgres::Config>()
        .expect("the test cluster's url parses")
        .connect(NoTls)
        .await?;
    tokio::spawn(connection);
    Ok(client)
}

/// A new connection to the database at `url`; the test fails if it cannot be made.
pub async fn sql(url: &str) -> tokio_postgres::Client {
    connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the test cluster: {e}"))
}

/// A database of the test's own, and its URL.
pub async fn fresh() -> (String, tokio_postgres::Client) {
    let url = cluster_url();
    let name = format!("rein_cli_{}", uuid::Uuid::new_v4().simple());
    sql(&url)
        .await
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    // postgres://user:password@host/database[?options]: the database swapped for ours.
    let (base, rest) = url.rsplit_once('/').unwrap();
    let query = rest
        .split_once('?')
        .map_or(String::new(), |(_, q)| format!("?{q}"));
    let url = format!("{base}/{name}{query}");
    let client = sql(&url).await;
    (url, client)
}

/// Restarts the test cluster's server (every connection to it dies). Only the cluster
/// `make pg-start` started can be restarted: the test fails saying so otherwise.
pub fn restart_cluster() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-test-cluster.sh");
    let status = std::process::Command::new("bash")
        .arg(script)
        .arg("restart")
        .status()
        .expect("bash runs");
    assert!(
        status.success(),
        "restarting the server needs the throwaway cluster: run `make pg-start` (`make test` does)"
    );
}

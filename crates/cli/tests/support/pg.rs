//! The test cluster for the tests on a `PostgreSQL` store (`make pg-start`, or
//! `REIN_TEST_PG_URL`; docs/POSTGRES.md): its URL, a database of a test's own, a restart,
//! `rein` and `rein worker` run against it.

use std::path::Path;

use tokio_postgres::NoTls;

use super::{Outcome, rein};

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

/// The test cluster over TCP with TLS (`sslmode=verify-full`, `sslrootcert` its own
/// certificate authority): `REIN_TEST_PG_TLS_URL`, else the one `make pg-start` wrote.
pub fn cluster_tls_url() -> String {
    if let Ok(url) = std::env::var("REIN_TEST_PG_TLS_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_owned();
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pg/tls-url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => panic!(
            "the TLS tests need the test cluster over TCP with TLS: run `make pg-start`, or set \
             REIN_TEST_PG_TLS_URL; `make test` does the first for you"
        ),
    }
}

/// `url` (any database) with its database swapped for `name`, its query kept.
pub fn on_database(url: &str, name: &str) -> String {
    let (rest, query) = url
        .split_once('?')
        .map_or((url, String::new()), |(rest, q)| (rest, format!("?{q}")));
    let (base, _) = rest.rsplit_once('/').unwrap();
    format!("{base}/{name}{query}")
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

/// `rein ARGS` against `url` (through `REIN_STORE`), off the async runtime.
pub async fn rein_on(url: &str, args: &[&str]) -> Outcome {
    let (url, args): (String, Vec<String>) = (
        url.to_owned(),
        args.iter().map(|a| (*a).to_owned()).collect(),
    );
    tokio::task::spawn_blocking(move || {
        Outcome::of(&rein().args(&args).env("REIN_STORE", url).output().unwrap())
    })
    .await
    .unwrap()
}

/// The run id in a summary's first line (`run ID  status …`).
pub fn run_id_of(out: &Outcome) -> String {
    let text = if out.stdout.starts_with("run ") {
        &out.stdout
    } else {
        &out.stderr
    };
    text.lines()
        .find_map(|l| l.strip_prefix("run "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run id in {} / {}", out.stdout, out.stderr))
        .to_owned()
}

/// Waits until `query` (one bigint, `$1` the run id) counts at least `n`. Bounded (five
/// minutes, far beyond any healthy wait): a condition that never comes fails the test,
/// naming it, instead of hanging CI.
pub async fn until_count(db: &tokio_postgres::Client, query: &str, id: &str, n: i64) {
    let waited = tokio::time::timeout(std::time::Duration::from_secs(300), async {
        loop {
            let count: i64 = db.query_one(query, &[&id]).await.unwrap().get(0);
            if count >= n {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "run {id}: `{query}` never counted {n} (is a worker driving it?)"
    );
}

/// Counts the entries of kind `kind` in run `$1`'s ledger.
pub fn entries_of(kind: &str) -> String {
    format!(
        "SELECT count(*) FROM rein_ledger WHERE run_id = $1 \
         AND convert_from(line, 'UTF8') LIKE '%\"type\":\"{kind}\"%'"
    )
}

/// Whether run `$1` is queued (0 or 1).
pub const QUEUED: &str = "SELECT count(*) FROM rein_queue WHERE run_id = $1";

/// Starts `rein worker --name NAME` on `url`.
pub fn start_worker(url: &str, name: &str) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["worker", "--poll", "0.05", "--name", name])
        .env("REIN_STORE", url)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Stops a worker with SIGTERM and gives what it printed.
pub async fn stop_worker(worker: std::process::Child) -> Outcome {
    let pid = worker.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let output = tokio::task::spawn_blocking(move || worker.wait_with_output().unwrap())
        .await
        .unwrap();
    Outcome::of(&output)
}

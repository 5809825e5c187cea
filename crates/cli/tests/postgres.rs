//! `--store postgres://…` (or `REIN_STORE`): a run's ledger moved into a `PostgreSQL` store
//! verifies there, exports back to its file byte for byte, and is listed; a bad URL or bad
//! credentials get a clear error that never shows the password. Runs against the test
//! cluster (`make pg-start`, or `REIN_TEST_PG_URL`; docs/POSTGRES.md).

mod support;

use std::path::Path;

use support::{Outcome, Scratch, rein};

/// The test cluster's URL: `REIN_TEST_PG_URL`, else the one `make pg-start` wrote. Without
/// either the test fails saying how to start one; it never skips silently.
fn url() -> String {
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

fn rein_store(args: &[&str], store: &str) -> Outcome {
    Outcome::of(&rein().args(args).env("REIN_STORE", store).output().unwrap())
}

#[test]
fn a_ledger_imported_into_postgres_verifies_lists_and_exports_byte_for_byte() {
    let scratch = Scratch::new();
    scratch.run("happy-path.json", &[]).expect_code(0);
    let id = scratch.new_run_id(&[]);
    let file = scratch.ledger(&id);
    let url = url();

    rein_store(&["ledger", "import", file.to_str().unwrap()], &url)
        .expect_code(0)
        .stdout_has(&["imported 30 entries of run", "verified ✓"]);
    // Once only.
    rein_store(&["ledger", "import", file.to_str().unwrap()], &url)
        .expect_code(1)
        .stderr_has(&["already has a ledger"]);

    // The flag works as the variable does.
    Outcome::of(
        &rein()
            .args(["ledger", "verify", &id, "--store", &url])
            .output()
            .unwrap(),
    )
    .expect_code(0)
    .stdout_has(&["30 entries, hash chain intact — verified ✓", "last hash "]);

    let exported = rein()
        .args(["ledger", "export", &id])
        .env("REIN_STORE", &url)
        .output()
        .unwrap();
    assert_eq!(exported.status.code(), Some(0));
    assert!(
        exported.stdout == std::fs::read(&file).unwrap(),
        "the export is the file, byte for byte"
    );

    rein_store(&["ledger", "show", &id], &url)
        .expect_code(0)
        .stdout_has(&[" seq      time  state     event", "  30  ", "verified ✓"]);

    // The same diagram as from the data directory.
    let from_file = Outcome::of(
        &rein()
            .args(["inspect", &id, "--format", "mermaid", "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    let from_store = rein_store(&["inspect", &id, "--format", "mermaid"], &url);
    from_store.expect_code(0);
    assert_eq!(from_store.stdout, from_file.stdout);

    rein_store(&["runs", "list"], &url)
        .expect_code(0)
        .stdout_has(&[&id]);

    rein_store(&["ledger", "verify", "no-such-run"], &url)
        .expect_code(2)
        .stderr_has(&["no ledger for run no-such-run"]);
}

#[test]
fn a_bad_url_or_bad_credentials_never_show_the_password() {
    let bad = "postgres://rein:hunter2-cli@db:notaport/rein";
    let out = rein_store(&["runs", "list"], bad);
    out.expect_code(2)
        .stderr_has(&["the store url is not a valid PostgreSQL url"]);

    let url = url();
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, host) = rest.split_once('@').unwrap();
    let user = userinfo.split(':').next().unwrap();
    let wrong = format!("{scheme}://{user}:hunter2-cli@{host}");
    let output = rein()
        .args(["runs", "list"])
        .env("REIN_STORE", &wrong)
        .output()
        .unwrap();
    let out = Outcome::of(&output);
    out.expect_code(1).stderr_has(&[
        "cannot connect to PostgreSQL",
        "password authentication failed",
    ]);
    for stream in [&output.stdout, &output.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains("hunter2"));
    }
}

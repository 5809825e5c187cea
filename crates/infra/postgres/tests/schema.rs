//! Opening the stores: migrations (idempotent, concurrent starts, a newer schema refused)
//! and connection failures as typed errors that never hold the password.

mod support;

use rein_postgres::{PgConfig, PgError, PgStores, SCHEMA_VERSION};
use support::{Fresh, url};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_are_idempotent_and_processes_starting_at_once_are_safe() {
    let db = Fresh::new().await;
    let starts: Vec<_> = (0..8)
        .map(|_| {
            let config = db.config.clone();
            tokio::spawn(async move { PgStores::connect(config).await })
        })
        .collect();
    for start in starts {
        let stores = start.await.unwrap().expect("every start succeeds");
        assert_eq!(stores.schema_version().await.unwrap(), SCHEMA_VERSION);
    }
    // And once more, later: nothing to do.
    db.stores().await;
    let rows = db
        .sql()
        .await
        .query("SELECT version FROM rein_schema", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i32>(0), SCHEMA_VERSION);
    db.drop_db().await;
}

#[tokio::test]
async fn a_schema_from_a_newer_rein_is_refused() {
    let db = Fresh::new().await;
    db.stores().await;
    db.sql()
        .await
        .execute("UPDATE rein_schema SET version = 99", &[])
        .await
        .unwrap();
    let err = PgStores::connect(db.config.clone()).await.unwrap_err();
    assert!(
        matches!(err, PgError::SchemaTooNew { found: 99, supported, .. } if supported == SCHEMA_VERSION),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("holds rein schema version 99, newer than this rein understands")
            && message.contains("upgrade rein"),
        "{message}"
    );
    db.drop_db().await;
}

/// The test URL with its password replaced by `password`.
fn with_password(password: &str) -> String {
    let url = url();
    let (scheme, rest) = url
        .split_once("://")
        .expect("the test url is a postgres:// url");
    let (userinfo, host) = rest.split_once('@').expect("the test url names a user");
    let user = userinfo.split(':').next().unwrap();
    format!("{scheme}://{user}:{password}@{host}")
}

#[tokio::test]
async fn bad_credentials_are_a_typed_error_that_never_shows_the_password() {
    let wrong = "not-the-password-4f1d";
    let err = PgStores::connect_url(&with_password(wrong))
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Connect { .. }), "{err:?}");
    let (message, debug) = (err.to_string(), format!("{err:?}"));
    assert!(
        message.starts_with("cannot connect to PostgreSQL at "),
        "{message}"
    );
    assert!(
        message.contains("password authentication failed"),
        "{message}"
    );
    for shown in [&message, &debug] {
        assert!(!shown.contains(wrong), "{shown}");
    }
}

#[tokio::test]
async fn a_refused_connection_names_where_it_tried() {
    let err = PgStores::connect_url("postgres://rein:secret-77@%2Fnonexistent%2Fsocket/rein")
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Connect { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("rein@/nonexistent/socket/rein") && message.contains("server is running"),
        "{message}"
    );
    assert!(!format!("{message}{err:?}").contains("secret-77"));
}

#[test]
fn a_bad_url_is_a_typed_error_that_never_shows_the_password() {
    for bad in [
        "postgres://rein:hunter2-x@db:notaport/rein",
        "postgres://rein:hunter2-x@/rein",
        "mysql://rein:hunter2-x@db/rein",
    ] {
        let err = PgConfig::from_url(bad).unwrap_err();
        assert!(matches!(err, PgError::InvalidUrl { .. }), "{bad}: {err:?}");
        let message = err.to_string();
        assert!(message.starts_with("the store url is not a valid PostgreSQL url: "));
        assert!(
            !format!("{message}{err:?}").contains("hunter2"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn debug_output_never_shows_the_password() {
    let db = Fresh::new().await;
    let stores = db.stores().await;
    let password = url()
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password.to_owned())
        .expect("the test url holds a password");
    for shown in [
        format!("{stores:?}"),
        format!("{:?}", stores.config()),
        format!("{:?}", stores.runs()),
        format!("{:?}", stores.ledgers()),
        format!("{:?}", stores.artifacts()),
    ] {
        assert!(!shown.contains(&password), "{shown}");
        assert!(shown.contains(&db.name), "{shown}");
    }
    db.drop_db().await;
}

//! TLS to the database, against the test cluster over TCP (`make pg-start`: a server that
//! refuses TCP without TLS, a certificate for `localhost` only, signed by a certificate
//! authority of its own; or `REIN_TEST_PG_TLS_URL`): each `sslmode` connects, or fails
//! with a typed error that names the target and what to change, never the password.

mod support;

use std::path::Path;

use rein_postgres::{PgConfig, PgError, PgStores, SslMode};
use support::{Fresh, tls_url};

/// The cluster over TCP: its URL without the query, the certificate authority, the password.
struct Tcp {
    base: String,
    ca: String,
    password: String,
}

fn tcp() -> Tcp {
    let url = tls_url();
    let (base, query) = url
        .split_once('?')
        .expect("the TLS url has sslmode and sslrootcert");
    let ca = query
        .split('&')
        .find_map(|param| param.strip_prefix("sslrootcert="))
        .expect("the TLS url names its certificate authority")
        .replace("%20", " ")
        .replace("%26", "&")
        .replace("%23", "#")
        .replace("%25", "%");
    let password = base
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password.to_owned())
        .expect("the TLS url holds a password");
    Tcp {
        base: base.to_owned(),
        ca,
        password,
    }
}

impl Tcp {
    /// The URL of database `db`, with `params` as its query.
    fn url(&self, db: &str, params: &str) -> String {
        let (server, _) = self
            .base
            .rsplit_once('/')
            .expect("the url names a database");
        format!("{server}/{db}?{params}")
    }

    /// Database `db` with sslmode `mode` and the cluster's certificate authority.
    fn with_ca(&self, db: &str, mode: &str) -> String {
        self.url(db, &format!("sslmode={mode}&sslrootcert={}", self.ca))
    }

    /// Fails unless neither the error's message nor its `Debug` shows the password.
    fn assert_no_password(&self, err: &PgError) {
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(&self.password), "{shown}");
    }
}

/// The TLS flag of each TCP session on database `db`, seen from the cluster's unix socket:
/// what the server says, not what the client believes.
async fn tcp_sessions(db: &Fresh) -> Vec<bool> {
    db.sql()
        .await
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.datname = $1 AND a.client_addr IS NOT NULL",
            &[&db.name],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

fn unrelated_ca() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/unrelated-ca.pem")
        .display()
        .to_string()
}

#[tokio::test]
async fn verify_full_with_the_clusters_ca_connects_over_tls_and_so_does_the_queue() {
    let (tcp, db) = (tcp(), Fresh::new().await);
    let config = PgConfig::from_url(&tcp.with_ca(&db.name, "verify-full")).unwrap();
    assert_eq!(config.ssl_mode(), SslMode::VerifyFull);
    let stores = PgStores::connect(config).await.unwrap();
    assert!(stores.schema_version().await.unwrap() > 0);
    let sessions = tcp_sessions(&db).await;
    assert!(
        !sessions.is_empty() && sessions.iter().all(|ssl| *ssl),
        "{sessions:?}"
    );

    // The queue's LISTEN connection, outside the pool, uses the same TLS.
    let wakeups = stores.listen_queue().await.unwrap();
    let listening: Vec<bool> = db
        .sql()
        .await
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.datname = $1 AND a.query = 'LISTEN rein_queue'",
            &[&db.name],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(listening, [true]);
    drop((wakeups, stores));
    db.drop_db().await;
}

#[tokio::test]
async fn the_password_exchange_is_bound_to_the_servers_certificate() {
    // channel_binding=require: SCRAM-SHA-256-PLUS or nothing, so the certificate hash the
    // connector gives must be the one the server computes.
    let (tcp, db) = (tcp(), Fresh::new().await);
    for mode in ["verify-full", "require"] {
        let url = format!("{}&channel_binding=require", tcp.with_ca(&db.name, mode));
        PgStores::connect_url(&url).await.unwrap();
    }
    let url = tcp.url(&db.name, "sslmode=require&channel_binding=require");
    PgStores::connect_url(&url).await.unwrap();
    db.drop_db().await;
}

#[tokio::test]
async fn require_and_prefer_without_a_ca_connect_over_tls() {
    let (tcp, db) = (tcp(), Fresh::new().await);
    let mut open = Vec::new(); // their connections stay open to be looked at
    for (params, mode) in [
        ("sslmode=require", SslMode::Require),
        ("connect_timeout=10", SslMode::Prefer),
    ] {
        let config = PgConfig::from_url(&tcp.url(&db.name, params)).unwrap();
        assert_eq!(config.ssl_mode(), mode);
        open.push(PgStores::connect(config).await.unwrap());
    }
    let sessions = tcp_sessions(&db).await;
    assert!(
        sessions.len() >= 2 && sessions.iter().all(|ssl| *ssl),
        "{sessions:?}"
    );
    drop(open);
    db.drop_db().await;
}

#[tokio::test]
async fn verify_full_with_another_ca_fails_naming_the_target_and_not_the_password() {
    let (tcp, db) = (tcp(), Fresh::new().await);
    for mode in ["verify-full", "verify-ca", "require"] {
        let url = tcp.url(
            &db.name,
            &format!("sslmode={mode}&sslrootcert={}", unrelated_ca()),
        );
        let config = PgConfig::from_url(&url).unwrap();
        let err = PgStores::connect(config.clone()).await.unwrap_err();
        assert!(matches!(err, PgError::Connect { .. }), "{err:?}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("at {}:", config.target()))
                && message.contains("error performing TLS handshake")
                && message.contains("UnknownIssuer")
                && message.contains(&format!(
                    "not among the certificates of sslrootcert {}: give that authority's \
                     certificate as sslrootcert",
                    unrelated_ca()
                )),
            "{mode}: {message}"
        );
        tcp.assert_no_password(&err);
    }
    db.drop_db().await;
}

#[tokio::test]
async fn verify_full_checks_the_host_name_and_verify_ca_does_not() {
    let (tcp, db) = (tcp(), Fresh::new().await);
    // The certificate names localhost, not 127.0.0.1.
    let by_address = |mode| {
        tcp.with_ca(&db.name, mode)
            .replace("@localhost:", "@127.0.0.1:")
    };
    let err = PgStores::connect_url(&by_address("verify-full"))
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Connect { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("127.0.0.1")
            && message.contains("not valid for name")
            && message.contains("use sslmode=verify-ca"),
        "{message}"
    );
    tcp.assert_no_password(&err);

    PgStores::connect_url(&by_address("verify-ca"))
        .await
        .unwrap();
    PgStores::connect_url(&by_address("require")).await.unwrap();
    db.drop_db().await;
}

#[tokio::test]
async fn disable_over_tcp_is_refused_by_the_server_without_tls() {
    let (tcp, db) = (tcp(), Fresh::new().await);
    let err = PgStores::connect_url(&tcp.url(&db.name, "sslmode=disable"))
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Connect { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("no pg_hba.conf entry") && message.contains("no encryption"),
        "{message}"
    );
    tcp.assert_no_password(&err);
    db.drop_db().await;
}

#[tokio::test]
async fn the_key_value_form_takes_the_tls_parameters_too() {
    let (tcp, db) = (tcp(), Fresh::new().await);
    let port = tcp
        .base
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(port, _)| port)
        .expect("the TLS url names a port");
    let user = tcp
        .base
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once(':'))
        .map(|(user, _)| user)
        .unwrap();
    let kv = format!(
        "host=localhost port={port} user={user} password='{}' dbname={} sslmode=verify-full \
         sslrootcert='{}'",
        tcp.password, db.name, tcp.ca
    );
    let config = PgConfig::from_url(&kv).unwrap();
    assert_eq!(config.ssl_mode(), SslMode::VerifyFull);
    let open = PgStores::connect(config).await.unwrap();
    assert_eq!(tcp_sessions(&db).await, [true]);
    drop(open);
    db.drop_db().await;
}

#[tokio::test]
async fn require_refuses_a_server_that_offers_no_tls() {
    // A server that answers PostgreSQL's TLS request with `N` (no TLS), as one with ssl=off
    // does.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0_u8; 8];
            if socket.read_exact(&mut request).await.is_ok() {
                let _ = socket.write_all(b"N").await;
            }
        }
    });
    for mode in ["require", "verify-ca", "verify-full"] {
        let url = format!(
            "postgres://rein:hunter2-plain@127.0.0.1:{port}/rein?sslmode={mode}&sslrootcert={}",
            unrelated_ca()
        );
        let err = PgStores::connect_url(&url).await.unwrap_err();
        assert!(matches!(err, PgError::Connect { .. }), "{err:?}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("at rein@127.0.0.1:{port}/rein: "))
                && message.contains("server does not support TLS"),
            "{message}"
        );
        assert!(
            !format!("{message}{err:?}").contains("hunter2"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn a_unix_socket_ignores_sslmode_as_libpq_does() {
    let (tcp, db) = (tcp(), Fresh::new().await);
    let socket = support::url();
    let (server, _) = socket.rsplit_once('/').unwrap();
    let url = format!(
        "{server}/{}?sslmode=verify-full&sslrootcert={}",
        db.name, tcp.ca
    );
    let stores = PgStores::connect_url(&url).await.unwrap();
    assert_eq!(stores.config().ssl_mode(), SslMode::VerifyFull);
    db.drop_db().await;
}

#[tokio::test]
async fn a_bad_sslmode_or_sslrootcert_is_refused_before_connecting() {
    // Nothing listens on port 1: an attempt to connect would fail as Connect.
    let scratch = tempfile::tempdir().unwrap();
    let not_pem = scratch.path().join("not-a-ca.pem");
    std::fs::write(&not_pem, "just text\n").unwrap();
    let missing = scratch.path().join("missing.pem");
    for (query, parameter, says) in [
        (
            "sslmode=verify_full",
            "sslmode",
            "\"verify_full\" is not a mode",
        ),
        ("sslmode=", "sslmode", "verify-ca or verify-full"),
        (
            &format!("sslmode=verify-full&sslrootcert={}", missing.display()),
            "sslrootcert",
            "missing.pem cannot be read",
        ),
        (
            &format!("sslmode=require&sslrootcert={}", not_pem.display()),
            "sslrootcert",
            "not-a-ca.pem holds no certificate",
        ),
        ("sslrootcert=", "sslrootcert", "it is empty"),
    ] {
        let url = format!("postgres://rein:hunter2-tls@localhost:1/rein?{query}");
        let err = PgStores::connect_url(&url).await.unwrap_err();
        let PgError::InvalidTls {
            parameter: named, ..
        } = &err
        else {
            panic!("{query}: {err:?}");
        };
        assert_eq!(*named, parameter);
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("the store url's {parameter} cannot be used: "))
                && message.contains(says),
            "{message}"
        );
        assert!(
            !format!("{message}{err:?}").contains("hunter2"),
            "{message}"
        );
    }
    // Client certificates are not supported: refused by name, not ignored.
    let err =
        PgConfig::from_url("postgres://rein:hunter2-tls@localhost/rein?sslcert=c.pem").unwrap_err();
    assert!(
        matches!(
            err,
            PgError::InvalidTls {
                parameter: "sslcert",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn debug_shows_the_sslmode_and_never_the_password() {
    let config = PgConfig::from_url(&format!(
        "postgres://rein:hunter2-dbg@db.internal/rein?sslmode=verify-full&sslrootcert={}",
        unrelated_ca()
    ))
    .unwrap();
    let debug = format!("{config:?}");
    assert!(
        debug.contains("sslmode: \"verify-full\"") && debug.contains("unrelated-ca.pem"),
        "{debug}"
    );
    assert!(!debug.contains("hunter2"), "{debug}");
    let default = PgConfig::from_url("postgres://rein:hunter2-dbg@db.internal/rein").unwrap();
    assert_eq!(default.ssl_mode(), SslMode::Prefer);
}

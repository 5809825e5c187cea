//! `rein serve`: the console on a data directory. Off loopback it needs a tokens file (exit
//! 2 otherwise); it prints the operator's new token once; an approval given there over HTTP
//! is ledgered with the operator's name, and this process drives the run on to completed,
//! rebuilt from the run's stored scenario — the live event stream says when; `--read-only`
//! refuses the same change.

mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use support::{Scratch, rein};

/// The durable-approval scenario, with a goal holding markup the console must escape.
fn scenario() -> String {
    support::durable_drop_table("Drop the <script>stale</script> orders table")
}

/// Runs the durable scenario until it pauses for approval; returns its run id.
fn paused(scratch: &Scratch) -> String {
    let before = scratch.run_ids();
    scratch.write("durable.json", &scenario());
    scratch.run("durable.json", &[]).expect_code(3);
    scratch.new_run_id(&before)
}

/// A `rein serve` process, killed when dropped.
struct Server {
    child: Child,
    addr: String,
    token: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `rein serve --data-dir DATA --addr 127.0.0.1:0 ARGS…` and reads where it serves
/// (stdout) and the token it printed, if any (stderr).
fn serve(scratch: &Scratch, args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(scratch.data())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rein serve starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("a first line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    // The token line comes before the server binds, so it is there when stdout is.
    let mut first = String::new();
    let token = if args.contains(&"--read-only") && !args.contains(&"--tokens") {
        None
    } else {
        stderr.read_line(&mut first).expect("a token line");
        first
            .split("token ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
    };
    Server { child, addr, token }
}

/// One HTTP/1.1 request; the whole response as text.
fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connects");
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    response
}

fn field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} in {html}"))
        + marker.len();
    let end = html[start..].find('"').expect("a quote") + start;
    html[start..end].to_owned()
}

#[test]
fn an_address_off_loopback_without_tokens_is_refused_at_start() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.data()).expect("a data dir");
    let output = rein()
        .args(["serve", "--addr", "0.0.0.0:0", "--data-dir"])
        .arg(scratch.data())
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to serve on 0.0.0.0:0: it is not a loopback address"),
        "{stderr}"
    );
    assert!(stderr.contains("--tokens FILE"), "{stderr}");
}

#[test]
fn a_missing_data_directory_or_a_malformed_tokens_file_is_bad_input() {
    let scratch = Scratch::new();
    let missing = rein()
        .args(["serve", "--data-dir"])
        .arg(scratch.dir.path().join("nowhere"))
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(2));
    std::fs::create_dir_all(scratch.data()).expect("a data dir");
    let tokens = scratch.dir.path().join("tokens.txt");
    std::fs::write(&tokens, "alice not-a-hash\n").expect("written");
    let malformed = rein()
        .args(["serve", "--addr", "127.0.0.1:0", "--data-dir"])
        .arg(scratch.data())
        .arg("--tokens")
        .arg(&tokens)
        .output()
        .expect("runs");
    assert_eq!(malformed.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&malformed.stderr);
    assert!(stderr.contains("line 1"), "{stderr}");
}

#[test]
fn an_approval_given_in_the_console_is_ledgered_by_name_and_the_run_completes() {
    let scratch = Scratch::new();
    let id = paused(&scratch);
    let tokens = scratch.dir.path().join("tokens.txt");
    let server = serve(&scratch, &["--tokens", tokens.to_str().expect("utf-8")]);
    let token = server.token.clone().expect("a new token is printed once");
    let file = std::fs::read_to_string(&tokens).expect("the tokens file was written");
    assert!(file.contains("operator "), "{file}");
    assert!(
        !file.contains(&token),
        "the file holds the token's hash, not the token"
    );

    let list = http(&server.addr, "GET", "/", None, "");
    assert!(list.starts_with("HTTP/1.1 200"), "{list}");
    assert!(list.contains("waiting for approval"), "{list}");
    assert!(list.contains("&lt;script&gt;stale"), "the goal is escaped");
    assert!(!list.contains("<script>stale"));

    let page = http(
        &server.addr,
        "GET",
        &format!("/runs/{id}"),
        Some(&token),
        "",
    );
    assert!(page.contains("chain verified, 10 entries"), "{page}");
    let form = format!(
        "csrf={}&input_hash={}&verdict=approve&reason=ticket+42",
        field(&page, "csrf"),
        field(&page, "input_hash")
    );
    let denied = http(
        &server.addr,
        "POST",
        &format!("/runs/{id}/approval"),
        None,
        &form,
    );
    assert!(
        denied.starts_with("HTTP/1.1 401"),
        "without a token: {denied}"
    );
    let done = http(
        &server.addr,
        "POST",
        &format!("/runs/{id}/approval"),
        Some(&token),
        &form,
    );
    assert!(done.starts_with("HTTP/1.1 303"), "{done}");
    // The live stream ends when the run is finished: read it to the end.
    let events = http(&server.addr, "GET", &format!("/runs/{id}/events"), None, "");
    assert!(events.contains("event: end"), "{events}");

    let ledger =
        std::fs::read_to_string(scratch.data().join("ledgers").join(format!("{id}.jsonl")))
            .expect("the ledger");
    assert_eq!(ledger.matches("\"approval_granted\"").count(), 1);
    assert!(
        ledger.contains("\"approver\":\"operator\""),
        "the operator's name is ledgered"
    );
    assert!(
        ledger.contains("\"run_completed\""),
        "the console process drove the run on"
    );
    rein()
        .args(["ledger", "verify", &id, "--data-dir"])
        .arg(scratch.data())
        .assert()
        .code(0);
}

#[test]
fn a_read_only_console_refuses_the_change_on_the_server() {
    let scratch = Scratch::new();
    let id = paused(&scratch);
    let server = serve(&scratch, &["--read-only"]);
    let page = http(&server.addr, "GET", &format!("/runs/{id}"), None, "");
    assert!(page.contains("read-only"), "{page}");
    let refused = http(
        &server.addr,
        "POST",
        &format!("/runs/{id}/approval"),
        Some("any"),
        "csrf=x&input_hash=y&verdict=approve&reason=r",
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(refused.contains("read-only"), "{refused}");
}

/// A database of the test's own on the test cluster, as a URL; `None` (said on stderr)
/// without a cluster (`make pg-start`, or `REIN_TEST_PG_URL`).
fn fresh_store() -> Option<String> {
    let url = match std::env::var("REIN_TEST_PG_URL") {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => {
            let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pg/url");
            match std::fs::read_to_string(file) {
                Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
                _ => {
                    eprintln!(
                        "skipped: `rein serve --store` needs a database; run `make pg-start` or set REIN_TEST_PG_URL"
                    );
                    return None;
                }
            }
        }
    };
    let name = format!("rein_serve_{}", uuid::Uuid::new_v4().simple());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("the test cluster answers");
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("the test role may create databases");
    });
    // postgres://user:password@host/database[?options]: the database swapped for ours.
    let (base, rest) = url.rsplit_once('/').expect("a database in the url");
    let query = rest
        .split_once('?')
        .map_or(String::new(), |(_, q)| format!("?{q}"));
    Some(format!("{base}/{name}{query}"))
}

#[test]
fn the_console_on_a_store_lists_a_run_kept_there_and_drives_an_approval_given_there() {
    let Some(url) = fresh_store() else { return };
    let scratch = Scratch::new();
    scratch.write("durable.json", &scenario());
    let started = scratch.run("durable.json", &["--store", &url]);
    started.expect_code(3);
    let text = format!("{}\n{}", started.stdout, started.stderr);
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run id in {text}"))
        .to_owned();
    std::fs::create_dir_all(scratch.data()).expect("a data dir");

    let server = serve(&scratch, &["--store", &url]);
    let token = server.token.clone().expect("a new token is printed once");
    let list = http(&server.addr, "GET", "/?status=waiting", None, "");
    assert!(list.contains("1 run · page 1 of 1"), "{list}");
    assert!(
        list.contains(&id) && list.contains("waiting for approval"),
        "{list}"
    );
    assert!(list.contains("&lt;script&gt;stale"), "the goal is escaped");
    let inbox = http(&server.addr, "GET", "/inbox", None, "");
    assert!(inbox.contains("1 run waiting for a person"), "{inbox}");

    let page = http(
        &server.addr,
        "GET",
        &format!("/runs/{id}"),
        Some(&token),
        "",
    );
    assert!(page.contains("chain verified"), "{page}");
    let form = format!(
        "csrf={}&input_hash={}&verdict=approve&reason=ticket+42",
        field(&page, "csrf"),
        field(&page, "input_hash")
    );
    let done = http(
        &server.addr,
        "POST",
        &format!("/runs/{id}/approval"),
        Some(&token),
        &form,
    );
    assert!(done.starts_with("HTTP/1.1 303"), "{done}");
    // The live stream ends when the run is finished: read it to the end.
    let events = http(&server.addr, "GET", &format!("/runs/{id}/events"), None, "");
    assert!(events.contains("event: end"), "{events}");

    let list = http(&server.addr, "GET", "/?status=completed", None, "");
    assert!(
        list.contains("1 run · page 1 of 1") && list.contains(&id),
        "{list}"
    );
    let shown = rein()
        .args(["ledger", "show", &id, "--json"])
        .env("REIN_STORE", &url)
        .output()
        .expect("runs");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("\"approver\": \"operator\""), "{shown}");
    assert!(
        shown.contains("\"run_completed\""),
        "the console process drove the run on"
    );
}

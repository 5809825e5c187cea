//! OAuth 2.1 against an MCP server rein has not seen: the official TypeScript SDK's example
//! server with its demo authorization server (`simpleStreamableHttp.js --oauth`, installed
//! by `make mcp-servers` with the SDK). Discovery, dynamic registration, PKCE and the code
//! exchange are the SDK's; the demo authorization server approves every login at once, so a
//! plain GET of the login page stands in for the person at the browser. The demo issues no
//! refresh tokens: refresh is tested against the Python SDK's authorization routes around a
//! small server of the tests' own (`tests/mcp/refresh_server.py`), which does.

mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};

use support::mcp::installed;
use support::{Outcome, Scratch, rein};

/// The example server and its authorization server, ended (by their process id) on drop.
struct DemoServer {
    child: Child,
    mcp_port: u16,
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn demo_server() -> DemoServer {
    let script = installed(
        "npm/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
    );
    let (mcp_port, auth_port) = (free_port(), free_port());
    let mut child = Command::new("node")
        .arg(script)
        .arg("--oauth")
        .env("MCP_PORT", mcp_port.to_string())
        .env("MCP_AUTH_PORT", auth_port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node starts the example server");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut listening = 0;
    while listening < 2 {
        let line = lines
            .next()
            .expect("the example server says where it listens")
            .expect("a line");
        if line.contains("listening on port") {
            listening += 1;
        }
    }
    // Keep reading its stdout so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    DemoServer { child, mcp_port }
}

/// The Python SDK's authorization routes around a server that issues refresh tokens
/// (`tests/mcp/refresh_server.py`), ended (by its process id) on drop.
fn refresh_server() -> DemoServer {
    let port = free_port();
    let mut child = Command::new(installed("venv/bin/python"))
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/refresh_server.py"))
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts the refreshing server");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    loop {
        let line = lines
            .next()
            .expect("the refreshing server says it runs")
            .expect("a line");
        if line.contains("Uvicorn running on") {
            break;
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    DemoServer {
        child,
        mcp_port: port,
    }
}

fn scenario(
    scratch: &Scratch,
    server: &DemoServer,
    token_file: &std::path::Path,
) -> std::path::PathBuf {
    let text = serde_json::json!({
        "goal": "greet through an OAuth-protected server",
        "tools": [{
            "kind": "mcp", "server": "demo",
            "url": format!("http://localhost:{}/mcp", server.mcp_port),
            "oauth": {"token_file": token_file, "scopes": ["mcp:tools"]}
        }],
        "approver": "auto",
        "planner": {"scripted": [
            {"decision": {"type": "transition", "to": "explore", "reason": "start"}},
            {"decision": {"type": "transition", "to": "decide", "reason": "nothing to read"}},
            {"decision": {"type": "transition", "to": "act", "reason": "greet"}},
            {"decision": {"type": "call_tool", "tool": "demo.greet", "input": {"name": "rein"}, "reason": "say hello"}},
            {"decision": {"type": "transition", "to": "validate", "reason": "check"}},
            {"decision": {"type": "finish", "summary": "greeted", "result": {"ok": true}}}
        ]}
    });
    scratch.write("oauth.json", &text.to_string())
}

/// A GET of `url` (http, no body read): its status and `Location` header.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host.replace("localhost", "127.0.0.1")).expect("connects");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("sent");
    let mut head = String::new();
    BufReader::new(&mut stream)
        .take(64 * 1024)
        .read_to_string(&mut head)
        .expect("an answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let location = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    (status, location)
}

/// Runs `rein mcp login`, plays the person at the browser, and waits for it.
fn log_in(file: &std::path::Path) -> Outcome {
    let mut login = Command::new(env!("CARGO_BIN_EXE_rein"))
        .args(["mcp", "login", "--scenario"])
        .arg(file)
        .arg("demo")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rein starts");
    let mut stderr = BufReader::new(login.stderr.take().expect("stderr"));
    let mut page = String::new();
    while !page.starts_with("http") {
        page.clear();
        assert!(
            stderr.read_line(&mut page).expect("a line") > 0,
            "no login page printed"
        );
    }
    let (status, location) = get(page.trim());
    assert_eq!(
        status, 302,
        "the demo authorization server approves at once"
    );
    let callback = location.expect("a redirect to rein's loopback listener");
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    assert_eq!(get(&callback).0, 200);
    Outcome::of(&login.wait_with_output().expect("rein ends"))
}

#[test]
fn a_login_keeps_private_tokens_that_later_runs_use_and_never_record() {
    let server = demo_server();
    let scratch = Scratch::new();
    let tokens = scratch.data().with_file_name("tokens").join("demo.json");
    let file = scenario(&scratch, &server, &tokens);

    // Before any login: a typed refusal that says what to do.
    let out = Outcome::of(
        &rein()
            .args(["mcp", "list", "--scenario"])
            .arg(&file)
            .output()
            .unwrap(),
    );
    out.expect_code(2)
        .stderr_has(&["needs an OAuth login", "rein mcp login"]);

    log_in(&file)
        .expect_code(0)
        .stdout_has(&["logged in to `demo`"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&tokens)
            .expect("the token file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&tokens).expect("tokens")).expect("JSON");
    let access = stored["token_response"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();

    // Headless afterwards: the tools list and a governed call goes through.
    let out = Outcome::of(
        &rein()
            .args(["mcp", "list", "--scenario"])
            .arg(&file)
            .output()
            .unwrap(),
    );
    out.expect_code(0).stdout_has(&["demo.greet"]);
    let run = scratch.run("oauth.json", &[]);
    run.expect_code(0);
    let id = scratch.run_ids().pop().expect("a run");
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).expect("the ledger");
    assert!(
        ledger.contains("Hello, rein"),
        "the greeting is recorded: {ledger}"
    );
    for dir in [scratch.data()] {
        for entry in walk(&dir) {
            let text = std::fs::read(&entry).unwrap_or_default();
            assert!(
                !text.windows(access.len()).any(|w| w == access.as_bytes()),
                "the access token reached {}",
                entry.display()
            );
        }
    }
    assert!(!run.stdout.contains(&access) && !run.stderr.contains(&access));
}

/// The token file's JSON, with `change` applied, written back in place (its mode kept).
fn rewrite(tokens: &std::path::Path, change: impl FnOnce(&mut serde_json::Value)) {
    let mut stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tokens).expect("tokens")).expect("JSON");
    change(&mut stored);
    std::fs::write(tokens, stored.to_string()).expect("rewritten");
}

fn stored(tokens: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(tokens).expect("tokens")).expect("JSON")
}

#[test]
fn an_access_token_about_to_expire_is_refreshed_headless_and_a_refused_refresh_asks_for_a_login() {
    let server = refresh_server();
    let scratch = Scratch::new();
    let tokens = scratch.data().with_file_name("tokens").join("demo.json");
    let file = scenario(&scratch, &server, &tokens);
    log_in(&file)
        .expect_code(0)
        .stdout_has(&["logged in to `demo`"]);
    let first = stored(&tokens);
    let access = first["token_response"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();
    let refresh = first["token_response"]["refresh_token"]
        .as_str()
        .expect("a refresh token")
        .to_owned();

    // The token was received two hours ago and lived one: the run refreshes it first,
    // with no person, and keeps the new tokens in the file.
    let aged = |stored: &mut serde_json::Value| {
        let received = stored["token_received_at"].as_u64().expect("when it came");
        stored["token_received_at"] = (received - 7200).into();
    };
    rewrite(&tokens, aged);
    scratch.run("oauth.json", &[]).expect_code(0);
    let id = scratch.run_ids().pop().expect("a run");
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).expect("the ledger");
    assert!(ledger.contains("Hello, rein (refreshed 1)"), "{ledger}");
    let second = stored(&tokens);
    let renewed = second["token_response"]["access_token"].as_str().unwrap();
    assert_ne!(renewed, access, "a new access token is kept");
    assert_ne!(
        second["token_response"]["refresh_token"].as_str().unwrap(),
        refresh,
        "the rotated refresh token is kept"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    for entry in walk(&scratch.data()) {
        let text = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !text.windows(renewed.len()).any(|w| w == renewed.as_bytes()),
            "the refreshed token reached {}",
            entry.display()
        );
    }

    // The refresh token the file holds was spent (rotated away): the server refuses the
    // refresh, and rein asks for a login rather than failing obscurely.
    rewrite(&tokens, |stored| {
        aged(stored);
        stored["token_response"]["refresh_token"] = refresh.clone().into();
    });
    let out = Outcome::of(
        &rein()
            .args(["mcp", "list", "--scenario"])
            .arg(&file)
            .output()
            .unwrap(),
    );
    out.expect_code(2)
        .stderr_has(&["needs an OAuth login", "rein mcp login"]);
}

#[test]
fn a_token_file_others_can_read_is_refused_and_one_in_the_workspace_is_never_used() {
    let server = demo_server();
    let scratch = Scratch::new();
    let tokens = scratch.data().with_file_name("loose.json");
    std::fs::write(&tokens, "{}").expect("written");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let file = scenario(&scratch, &server, &tokens);
        let out = Outcome::of(
            &rein()
                .args(["mcp", "list", "--scenario"])
                .arg(&file)
                .output()
                .unwrap(),
        );
        out.expect_code(2)
            .stderr_has(&["lets others read it", "chmod 600"]);
    }

    // A token file inside the workspace is refused before anything connects.
    let workspace = scratch.data().with_file_name("workspace");
    std::fs::create_dir_all(&workspace).expect("a workspace");
    let text = serde_json::json!({
        "goal": "g", "workspace": workspace,
        "tools": [{"kind": "mcp", "server": "demo",
                   "url": format!("http://localhost:{}/mcp", server.mcp_port),
                   "oauth": {"token_file": workspace.join("demo.json")}}],
        "planner": {"scripted": [{"decision": {"type": "finish", "summary": "s", "result": {}}}]}
    });
    let file = scratch.write("inside.json", &text.to_string());
    let out = Outcome::of(
        &rein()
            .args(["mcp", "list", "--scenario"])
            .arg(&file)
            .output()
            .unwrap(),
    );
    out.expect_code(2)
        .stderr_has(&["is inside", "the agent's file tools could read it"]);
}

#[test]
fn oauth_on_a_command_server_is_refused_at_validate() {
    let scratch = Scratch::new();
    let text = serde_json::json!({
        "goal": "g",
        "tools": [{"kind": "mcp", "server": "demo", "command": ["node", "x.js"], "oauth": {}}],
        "planner": {"scripted": [{"decision": {"type": "finish", "summary": "s", "result": {}}}]}
    });
    let file = scratch.write("stdio.json", &text.to_string());
    let out = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    out.expect_code(2)
        .stderr_has(&["`oauth` applies to a server reached by \"url\""]);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

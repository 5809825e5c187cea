//! The console in a real browser: Debian's Chromium, headless, driven over `WebDriver` by
//! chromedriver (`make browser-deps` installs both). It signs in, opens a run and sees its
//! verified ledger and path, approves the pending call and watches the run reach
//! `completed` without reloading, answers a question, and sees a tampered ledger shown as
//! broken at the right entry. Screenshots go to `target/console-screenshots/`.
//!
//! Run with `make browser-test` (`--features browser-tests`): it needs the browser, so
//! `cargo test -p rein-console` leaves it out.

mod support;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use base64::Engine as _;
use rein::{Value, json};
use rein_console::ServeConfig;
use support::{ALICE, T0, TestDriver, console, waiting_for_answer, waiting_for_verdict};

/// A chromedriver process, killed when dropped.
struct Driver {
    child: Child,
    port: u16,
    session: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = call(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `WebDriver` command: its JSON `value`.
fn call(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    // chromedriver keeps the connection open: read the head, then Content-Length bytes.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let (head_len, length) = loop {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before a response".to_owned());
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| format!("no content-length in {head}"))?;
            break (at + 4, length);
        }
    };
    while raw.len() < head_len + length {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let body = String::from_utf8_lossy(&raw[head_len..]).into_owned();
    let value: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    let value = value.get("value").cloned().unwrap_or(Value::Null);
    if value.get("error").is_some() {
        return Err(value.to_string());
    }
    Ok(value)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Driver {
    fn start() -> Self {
        let port = free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs (make browser-deps installs it)");
        // Ready when it answers /status; bounded, it starts in well under a second.
        let mut ready = false;
        for _ in 0..200 {
            if call(port, "GET", "/status", None).is_ok_and(|v| v["ready"] == true) {
                ready = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(ready, "chromedriver never became ready");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"]
            }
        }}});
        let session =
            call(port, "POST", "/session", Some(&capabilities)).expect("a browser session");
        let session = session["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        Self {
            child,
            port,
            session,
        }
    }

    fn cmd(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        call(self.port, method, &path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    fn open(&self, url: &str) {
        self.cmd("POST", "/url", Some(&json!({ "url": url })));
    }

    fn find(&self, css: &str) -> String {
        let found = self.cmd(
            "POST",
            "/element",
            Some(&json!({"using": "css selector", "value": css})),
        );
        found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .expect("an element")
            .to_owned()
    }

    fn text(&self, css: &str) -> String {
        let id = self.find(css);
        self.cmd("GET", &format!("/element/{id}/text"), None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.cmd(
            "POST",
            &format!("/element/{id}/value"),
            Some(&json!({ "text": text })),
        );
    }

    fn click(&self, css: &str) {
        let id = self.find(css);
        self.cmd("POST", &format!("/element/{id}/click"), Some(&json!({})));
    }

    /// Waits (bounded) until the text of `css` contains `want`, without reloading.
    fn wait_for_text(&self, css: &str, want: &str) -> String {
        let mut last = String::new();
        for _ in 0..300 {
            let id = call(
                self.port,
                "POST",
                &format!("/session/{}/element", self.session),
                Some(&json!({"using": "css selector", "value": css})),
            );
            if id.is_ok() {
                last = self.text(css);
                if last.contains(want) {
                    return last;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        self.screenshot("failure");
        let url = self.cmd("GET", "/url", None);
        let page = call(
            self.port,
            "POST",
            &format!("/session/{}/element", self.session),
            Some(&json!({"using": "css selector", "value": "main"})),
        )
        .map(|_| self.text("main"))
        .unwrap_or_default();
        panic!("`{css}` never showed {want:?}; last {last:?}; at {url}: {page}");
    }

    fn screenshot(&self, name: &str) {
        let data = self.cmd("GET", "/screenshot", None);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().expect("base64"))
            .expect("a PNG");
        let dir =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../target/console-screenshots");
        std::fs::create_dir_all(&dir).expect("a screenshot folder");
        std::fs::write(dir.join(format!("{name}.png")), bytes).expect("written");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_an_operator_approves_answers_and_sees_a_broken_ledger() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = json!({"env": "prod"});
    let approve_me = waiting_for_verdict(dir.path(), "deploy the service", &input).await;
    let ask_me = waiting_for_answer(dir.path(), "ask before publishing").await;
    let tampered = waiting_for_verdict(dir.path(), "a tampered run", &input).await;
    let path = dir.path().join("ledgers").join(format!("{tampered}.jsonl"));
    let text = std::fs::read_to_string(&path).expect("a ledger");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[3] = lines[3].replacen("walk", "WALK", 1);
    std::fs::write(&path, lines.join("\n") + "\n").expect("written");

    // One driver for both runs: answers and verdicts through engines on the same folder.
    let verdicts = console(
        dir.path(),
        Some(TestDriver {
            dir: dir.path().to_path_buf(),
            now: T0 + 1000,
            input: input.clone(),
            asks: false,
        }),
        false,
    );
    let (bound_tx, bound_rx) = std::sync::mpsc::channel::<SocketAddr>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let config = ServeConfig {
        addr: "127.0.0.1:0".parse().expect("an address"),
        has_tokens_file: false,
    };
    let second = config.clone();
    let server = {
        let console = verdicts.clone();
        tokio::spawn(async move {
            rein_console::serve(
                &console,
                &config,
                move |addr| {
                    let _ = bound_tx.send(addr);
                },
                async {
                    let _ = stop_rx.await;
                },
            )
            .await
        })
    };
    let addr = bound_rx.recv().expect("the server binds");
    let base = format!("http://{addr}");
    let approve_id = approve_me.to_string();
    let tampered_id = tampered.to_string();
    let browser = tokio::task::spawn_blocking(move || {
        let driver = Driver::start();
        driver.open(&format!("{base}/"));
        assert!(driver.text("main").contains("waiting for approval"));
        driver.screenshot("runs");
        driver.open(&format!("{base}/login"));
        driver.type_into("input[name=token]", ALICE);
        driver.click("form[action='/login'] button");
        driver.wait_for_text("h1", "Inbox");
        driver.screenshot("inbox");

        driver.open(&format!("{base}/runs/{approve_id}"));
        assert!(
            driver
                .text("#verification")
                .starts_with("chain verified, 10 entries, head ")
        );
        driver.find("svg");
        driver.screenshot("run");
        driver.type_into("input[name=reason]", "ticket 42");
        driver.click("button[value=approve]");
        let status = driver.wait_for_text("#status", "completed");
        assert_eq!(status, "completed");
        driver.screenshot("run-approved");

        driver.open(&format!("{base}/runs/{tampered_id}"));
        let broken = driver.text("#verification");
        assert!(broken.starts_with("ledger broken"), "{broken}");
        assert!(broken.contains("entry 4"), "{broken}");
        driver.screenshot("run-broken");
    });
    browser.await.expect("the browser steps pass");
    verdicts.settled().await;
    let _ = stop_tx.send(());
    server.await.expect("joined").expect("served");

    // The question, answered by a console whose driver asks.
    let answers = console(
        dir.path(),
        Some(TestDriver {
            dir: dir.path().to_path_buf(),
            now: T0 + 1000,
            input: Value::Null,
            asks: true,
        }),
        false,
    );
    let (bound_tx, bound_rx) = std::sync::mpsc::channel::<SocketAddr>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = {
        let console = answers.clone();
        tokio::spawn(async move {
            rein_console::serve(
                &console,
                &second,
                move |addr| {
                    let _ = bound_tx.send(addr);
                },
                async {
                    let _ = stop_rx.await;
                },
            )
            .await
        })
    };
    let addr = bound_rx.recv().expect("the server binds");
    let base = format!("http://{addr}");
    let ask_id = ask_me.to_string();
    tokio::task::spawn_blocking(move || {
        let driver = Driver::start();
        driver.open(&format!("{base}/login"));
        driver.type_into("input[name=token]", ALICE);
        driver.click("form[action='/login'] button");
        driver.open(&format!("{base}/runs/{ask_id}"));
        driver.click("button[value=yes]");
        let status = driver.wait_for_text("#status", "completed");
        assert_eq!(status, "completed");
    })
    .await
    .expect("the answer steps pass");
    answers.settled().await;
    let _ = stop_tx.send(());
    server.await.expect("joined").expect("served");
}

//! `rein run` on a terminal shows a streaming model's reply as it arrives — its prose and
//! its calls' arguments — and `--quiet` hides it; off a terminal nothing of it is printed.
//! The terminal is a pseudo-terminal from util-linux's `script`.

mod support;

use std::path::Path;
use std::process::Command;

use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::json;
use support::{Outcome, Scratch, rein};

fn scenario(base_url: &str) -> String {
    json!({
        "goal": "Look around, then stop",
        "workspace": "workspace",
        "tools": [{"builtin": "fs.list"}],
        "policies": {"budgets": {"tokens": 100000}},
        "planner": {"llm": {"provider": {"api": "open_ai", "base_url": base_url, "model": "fake",
                                         "retries": 0, "stream": true}}}
    })
    .to_string()
}

async fn server() -> FakeServer {
    FakeServer::start([
        Reply::openai_sse(
            "I will look around first.",
            &[Call::new(
                "transition",
                &json!({"to": "explore", "reason": "look"}),
            )],
            (90, 10),
            5,
        ),
        Reply::openai_sse(
            "",
            &[Call::new("fail", &json!({"reason": "nothing to do"}))],
            (90, 10),
            5,
        ),
    ])
    .await
    .unwrap()
}

/// A word for `sh`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// `rein run FILE --data-dir DATA EXTRA` with its stdout on a pseudo-terminal: what the
/// terminal showed.
async fn on_a_terminal(scratch: &Scratch, file: &Path, extra: &str) -> String {
    let line = format!(
        "{} run {} --data-dir {} {extra}",
        quoted(Path::new(env!("CARGO_BIN_EXE_rein"))),
        quoted(file),
        quoted(&scratch.data())
    );
    let output = tokio::task::spawn_blocking(move || {
        Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env_remove("RUST_LOG")
            .output()
            .expect("util-linux `script` runs (it gives the run a terminal)")
    })
    .await
    .unwrap();
    String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_sees_the_model_typing_and_quiet_hides_it() {
    let scratch = Scratch::new();
    let server = server().await;
    let file = scratch.write("live.json", &scenario(&server.base_url()));
    let shown = on_a_terminal(&scratch, &file, "").await;
    assert!(
        shown.contains("  model: I will look around first.\n"),
        "{shown}"
    );
    assert!(
        shown.contains(r#"  model calls transition: {"reason":"look","to":"explore"}"#)
            || shown.contains(r#"  model calls transition: {"to":"explore","reason":"look"}"#),
        "{shown}"
    );
    assert!(shown.contains("model calls fail:"), "{shown}");

    let server = self::server().await;
    let file = scratch.write("quiet.json", &scenario(&server.base_url()));
    let quiet = on_a_terminal(&scratch, &file, "--quiet").await;
    // (The streaming token count on stderr, a terminal too, is not the reply.)
    assert!(!quiet.contains("I will look around first."), "{quiet}");
    assert!(!quiet.contains("model calls"), "{quiet}");
    assert_eq!(server.requests().len(), 2, "the quiet run ran all the same");
}

#[tokio::test(flavor = "multi_thread")]
async fn off_a_terminal_nothing_of_the_reply_is_printed() {
    let scratch = Scratch::new();
    let server = server().await;
    let file = scratch.write("piped.json", &scenario(&server.base_url()));
    let data = scratch.data();
    let outcome = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .arg("run")
                .arg(file)
                .arg("--data-dir")
                .arg(data)
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    outcome.expect_code(1);
    assert!(!outcome.stdout.contains("model:"), "{}", outcome.stdout);
    assert!(
        !outcome.stdout.contains("look around first"),
        "{}",
        outcome.stdout
    );
}

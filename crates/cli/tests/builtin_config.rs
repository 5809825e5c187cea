//! `shell.run` and `http.fetch` declared in scenario files: their configuration is checked
//! with a path into the file (exit 2), and a declared `shell.run` runs in the workspace,
//! its output past the cap kept as an artifact that `rein ledger show` and the summary name.

mod support;

use support::{Outcome, Scratch, rein};

/// A scenario with `tools` (a JSON list) that runs `seq 1 N` through `shell.run` in act.
fn scenario(tools: &str, n: u32) -> String {
    format!(
        r#"{{
  "goal": "count",
  "workspace": "workspace",
  "approver": "auto",
  "tools": {tools},
  "planner": {{"scripted": [
    {{"expect": "intake", "decision": {{"type": "transition", "to": "explore"}}}},
    {{"expect": "explore", "decision": {{"type": "transition", "to": "decide"}}}},
    {{"expect": "decide", "decision": {{"type": "transition", "to": "act"}}}},
    {{"expect": "act", "decision": {{"type": "call_tool", "tool": "shell.run", "input": {{"argv": ["seq", "1", "{n}"]}}}}}},
    {{"expect": "act", "decision": {{"type": "transition", "to": "validate"}}}},
    {{"expect": "validate", "decision": {{"type": "finish", "summary": "counted"}}}}
  ]}}
}}"#
    )
}

fn validate(scratch: &Scratch, name: &str, text: &str) -> Outcome {
    let file = scratch.write(name, text);
    Outcome::of(&rein().arg("validate").arg(file).output().unwrap())
}

#[test]
fn bad_builtin_configuration_is_exit_2_with_a_path_into_the_file() {
    let scratch = Scratch::new();
    let cases: [(&str, &[&str]); 13] = [
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq", "git"]}}]"#,
            &[
                "`git` runs other programs or code (a launcher)",
                "shell.launchers",
                "at: tools[0].shell.allow[1]",
            ],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "launchers": ["/bin/sh"]}}]"#,
            &["by its file name", "at: tools[0].shell.launchers[0]"],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "isolation": "off"}}]"#,
            &["unknown variant `off`", "namespaces", "none"],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "max_processes": 0}}]"#,
            &[
                "`shell.max_processes` is 0",
                "at: tools[0].shell.max_processes",
            ],
        ),
        (
            r#"[{"builtin": "shell.run"}]"#,
            &["needs a \"shell\" object", "at: tools[0]", "help:"],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": []}}]"#,
            &["`shell.allow` is empty", "at: tools[0].shell.allow"],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["/bin/seq"]}}]"#,
            &["by its file name", "at: tools[0].shell.allow[0]"],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "timeout_ms": 0}}]"#,
            &["`shell.timeout_ms` is 0", "at: tools[0].shell.timeout_ms"],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "timeout_ms": 9000, "max_timeout_ms": 10}}]"#,
            &[
                "above `shell.max_timeout_ms`",
                "at: tools[0].shell.timeout_ms",
            ],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "spill_cap": 99999999}}]"#,
            &["`shell.spill_cap`", "at: tools[0].shell.spill_cap"],
        ),
        (
            r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "timeout": 5}}]"#,
            &["unknown field `timeout`", "at: tools[0].shell.timeout"],
        ),
        (
            r#"[{"builtin": "fs.read", "shell": {"allow": ["seq"]}}]"#,
            &[
                "configures the built-in `shell.run` only",
                "at: tools[0].shell",
            ],
        ),
        (
            r#"[{"builtin": "http.fetch", "http": {"allow_hosts": ["https://api.example.com/v1"]}}]"#,
            &["is not a host name", "at: tools[0].http.allow_hosts[0]"],
        ),
    ];
    let mut problems = Vec::new();
    for (i, (tools, expect)) in cases.iter().enumerate() {
        let outcome = validate(&scratch, &format!("bad-{i}.json"), &scenario(tools, 3));
        let missing: Vec<&&str> = expect
            .iter()
            .filter(|part| !outcome.stderr.contains(**part))
            .collect();
        if outcome.code != 2 || !missing.is_empty() {
            problems.push(format!(
                "{tools}: exit {} missing {missing:?}\n{}",
                outcome.code, outcome.stderr
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn launchers_and_the_isolation_opt_out_validate() {
    let scratch = Scratch::new();
    for tools in [
        r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "launchers": ["cargo", "sh"]}}]"#,
        r#"[{"builtin": "shell.run", "shell": {"launchers": ["make"]}}]"#,
        r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "isolation": "none"}}]"#,
        r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "isolation": "namespaces"}}]"#,
    ] {
        validate(&scratch, "good.json", &scenario(tools, 3)).expect_code(0);
    }
}

/// A command that reads every process's environment through `/proc` (rein's holds an API
/// key) finds none but its own: nothing of rein's reaches the ledger or the data directory.
#[test]
fn a_command_cannot_copy_rein_s_environment_into_the_ledger() {
    let scratch = Scratch::new();
    let workspace = scratch.scenario("leak-ws");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        workspace.join("leak.sh"),
        "cat /proc/*/environ\necho scanned\n",
    )
    .unwrap();
    let text = r#"{
  "goal": "read the environment",
  "workspace": "leak-ws",
  "approver": "auto",
  "tools": [{"builtin": "shell.run", "shell": {"allow": ["cat"], "launchers": ["sh"]}}],
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore"}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide"}},
    {"expect": "decide", "decision": {"type": "transition", "to": "act"}},
    {"expect": "act", "decision": {"type": "call_tool", "tool": "shell.run", "input": {"argv": ["sh", "leak.sh"]}}},
    {"expect": "act", "decision": {"type": "transition", "to": "validate"}},
    {"expect": "validate", "decision": {"type": "finish", "summary": "done"}}
  ]}
}"#;
    let file = scratch.write("leak.json", text);
    let canary = format!("sk-canary-{}", std::process::id());
    let outcome = Outcome::of(
        &rein()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .env("REIN_TEST_API_KEY", &canary)
            .output()
            .unwrap(),
    );
    outcome.expect_code(0);
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    assert!(ledger.contains("scanned"), "the command ran: {ledger}");
    for path in walk(&scratch.data()) {
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&canary),
            "{} holds rein's environment",
            path.display()
        );
    }
    assert!(!outcome.stdout.contains(&canary) && !outcome.stderr.contains(&canary));
}

#[test]
fn an_http_fetch_without_hosts_validates_with_a_warning_that_it_reaches_nothing() {
    let scratch = Scratch::new();
    let tools =
        r#"[{"builtin": "http.fetch"}, {"builtin": "shell.run", "shell": {"allow": ["seq"]}}]"#;
    let outcome = validate(&scratch, "no-hosts.json", &scenario(tools, 3));
    outcome.expect_code(0);
    let all = format!("{}{}", outcome.stdout, outcome.stderr);
    assert!(all.contains("may reach no host"), "{all}");
}

#[test]
fn a_declared_shell_run_runs_and_its_long_output_is_an_artifact() {
    let scratch = Scratch::new();
    let tools = r#"[{"builtin": "shell.run", "shell": {"allow": ["seq"], "output_cap": 50, "timeout_ms": 20000}}]"#;
    let file = scratch.write("count.json", &scenario(tools, 5000));
    let outcome = Outcome::of(
        &rein()
            .arg("run")
            .arg(&file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    outcome.expect_code(0).stdout_has(&["artifacts  stdout → "]);
    let id = scratch.new_run_id(&[]);
    let ledger = std::fs::read_to_string(scratch.ledger(&id)).unwrap();
    let attachment: serde_json::Value = ledger
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"]["type"] == "tool_attachment")
        .expect("a tool_attachment entry");
    let expected: String = (1..=5000).map(|n| format!("{n}\n")).collect();
    assert_eq!(attachment["event"]["name"], "stdout");
    assert_eq!(attachment["event"]["link"]["size"], expected.len());
    let artifact = attachment["event"]["link"]["id"].as_str().unwrap();
    // The bytes are in the data directory's artifact store (`<2 hex>/<62 hex>.bin`).
    let stored = walk(&scratch.data().join("artifacts"))
        .into_iter()
        .any(|p| {
            p.to_string_lossy().contains(&artifact[2..])
                && std::fs::read(&p).ok().as_deref() == Some(expected.as_bytes())
        });
    assert!(stored, "artifact {artifact} not stored");
    let show = Outcome::of(
        &rein()
            .args(["ledger", "show", &id, "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    show.expect_code(0).stdout_has(&[&format!(
        "shell.run attached \"stdout\" ({} bytes, text/plain) as artifact {artifact}",
        expected.len()
    )]);
    let inspect = Outcome::of(
        &rein()
            .args(["inspect", &id, "--format", "json", "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    );
    inspect.expect_code(0).stdout_has(&[&format!(
        "attached stdout ({} bytes) as artifact {}",
        expected.len(),
        &artifact[..12]
    )]);
    Outcome::of(
        &rein()
            .args(["ledger", "verify", &id, "--data-dir"])
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
    .expect_code(0);
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

/// A loopback HTTP server that answers every request with `hello` (`Connection: close`).
fn loopback() -> u16 {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0; 8192];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

/// A scenario that fetches `url` in explore with `http.fetch` configured by `http`.
fn fetching(http: &str, url: &str) -> String {
    format!(
        r#"{{
  "goal": "fetch",
  "tools": [{{"builtin": "http.fetch"{http}}}],
  "policies": {{"on_tool_error": "hand_back"}},
  "planner": {{"scripted": [
    {{"expect": "intake", "decision": {{"type": "transition", "to": "explore"}}}},
    {{"expect": "explore", "decision": {{"type": "call_tool", "tool": "http.fetch", "input": {{"url": "{url}"}}}}}},
    {{"expect": "explore", "decision": {{"type": "transition", "to": "decide"}}}},
    {{"expect": "decide", "decision": {{"type": "finish", "summary": "fetched"}}}}
  ]}}
}}"#
    )
}

#[test]
fn a_declared_http_fetch_reaches_listed_hosts_only() {
    let scratch = Scratch::new();
    let port = loopback();
    let url = format!("http://127.0.0.1:{port}/hello");
    let run = |name: &str, http: &str| {
        let file = scratch.write(name, &fetching(http, &url));
        let outcome = Outcome::of(
            &rein()
                .arg("run")
                .arg(&file)
                .arg("--json")
                .arg("--data-dir")
                .arg(scratch.data())
                .output()
                .unwrap(),
        );
        outcome.expect_code(0);
        let id = scratch.run_ids().pop().unwrap();
        std::fs::read_to_string(scratch.ledger(&id)).unwrap()
    };
    // Read-only (GET only): it runs in explore, and reaches the listed host.
    let ledger = run(
        "listed.json",
        r#", "http": {"allow_hosts": ["127.0.0.1"], "timeout_ms": 20000}"#,
    );
    assert!(ledger.contains(r#""type":"tool_result""#), "{ledger}");
    assert!(ledger.contains("hello"), "{ledger}");
    // No "http" object: nothing is allowed; the call is a recorded tool error.
    let ledger = run("unlisted.json", "");
    assert!(!ledger.contains(r#""type":"tool_result""#), "{ledger}");
    assert!(ledger.contains(r#""type":"tool_error""#), "{ledger}");
    assert!(ledger.contains("127.0.0.1"), "{ledger}");
}

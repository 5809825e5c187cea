//! `shell.run`: guarded argv and command lines, the working directory confined, the
//! environment scrubbed, output capped, and a timeout (or a dropped call) that kills
//! everything the command started — no orphan survives. (Isolation from other processes,
//! launchers and program resolution: `shell_isolation.rs`.)
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use rein_tool::{Tool, ToolError};
use rein_tools::Workspace;
use rein_tools::shell::{ShellConfig, ShellError, ShellGuard, ShellRejection, ShellRun};
use serde_json::{Value, json};

fn tool(dir: &Path) -> ShellRun {
    let guard = ShellGuard::new(
        [
            "echo",
            "pwd",
            "seq",
            "true",
            "false",
            "no-such-program-rein",
        ],
        ["sudo"],
    )
    .allow_launchers(["env", "sh"]);
    ShellRun::new(
        Workspace::open(dir).unwrap(),
        ShellConfig::new(guard).with_output_cap(1000),
    )
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws/sub")).unwrap();
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    std::os::unix::fs::symlink("../outside", dir.path().join("ws/out")).unwrap();
    dir
}

async fn run(tool: &ShellRun, input: Value) -> Result<Value, ShellError> {
    tool.run(input).await
}

#[tokio::test]
async fn argv_and_command_lines_run_without_a_shell() {
    let dir = workspace();
    let t = tool(&dir.path().join("ws"));
    let out = run(&t, json!({"argv": ["echo", "a*b", "~", "x y"]}))
        .await
        .unwrap();
    assert_eq!(out["stdout"], "a*b ~ x y\n");
    assert_eq!(out["exit_code"], 0);
    let out = run(&t, json!({"command": "echo 'two words'"}))
        .await
        .unwrap();
    assert_eq!(out["argv"], json!(["echo", "two words"]));
    let out = run(&t, json!({"argv": ["false"]})).await.unwrap();
    assert_eq!(
        (out["exit_code"].clone(), out["success"].clone()),
        (json!(1), json!(false))
    );
}

#[tokio::test]
async fn what_the_guard_cannot_prove_safe_is_refused_before_anything_runs() {
    let dir = workspace();
    let t = tool(&dir.path().join("ws"));
    for (input, expect) in [
        (json!({"command": "echo hi > made.txt"}), "metacharacter"),
        (
            json!({"command": "echo hi; touch made.txt"}),
            "metacharacter",
        ),
        (
            json!({"command": "echo $(touch made.txt)"}),
            "metacharacter",
        ),
        (json!({"command": "FOO=1 echo"}), "env"),
        (json!({"argv": ["sudo", "touch", "made.txt"]}), "denied"),
        (json!({"argv": ["touch", "made.txt"]}), "not_allowed"),
    ] {
        let e = run(&t, input.clone()).await.unwrap_err();
        let got = match &e {
            ShellError::Rejected(ShellRejection::Metacharacter { .. }) => "metacharacter",
            ShellError::Rejected(ShellRejection::EnvAssignment { .. }) => "env",
            ShellError::Rejected(ShellRejection::Denied { .. }) => "denied",
            ShellError::Rejected(ShellRejection::NotAllowed { .. }) => "not_allowed",
            _ => "other",
        };
        assert_eq!(got, expect, "{input}: {e:?}");
    }
    assert!(!dir.path().join("ws/made.txt").exists());
    for input in [json!({}), json!({"argv": ["true"], "command": "true"})] {
        let e = run(&t, input).await.unwrap_err();
        assert!(matches!(e, ShellError::Input { .. }), "{e:?}");
    }
    let e = run(&t, json!({"argv": ["no-such-program-rein"]}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ShellError::Rejected(ShellRejection::NotFound { .. })),
        "{e:?}"
    );
}

#[tokio::test]
async fn the_working_directory_stays_inside_the_workspace() {
    let dir = workspace();
    let root = dir.path().join("ws");
    let t = tool(&root);
    let out = run(&t, json!({"argv": ["pwd"], "cwd": "sub"}))
        .await
        .unwrap();
    let pwd = out["stdout"].as_str().unwrap().trim_end();
    assert_eq!(Path::new(pwd), root.canonicalize().unwrap().join("sub"));
    for cwd in ["..", "/tmp", "out"] {
        let e = run(&t, json!({"argv": ["pwd"], "cwd": cwd}))
            .await
            .unwrap_err();
        assert!(matches!(e, ShellError::Cwd(_)), "{cwd}: {e:?}");
        assert!(matches!(ToolError::from(e), ToolError::InvalidInput { .. }));
    }
}

#[tokio::test]
async fn the_environment_is_scrubbed_to_the_allowlist() {
    let dir = workspace();
    let t = tool(&dir.path().join("ws"));
    let out = run(&t, json!({"argv": ["env"]})).await.unwrap();
    for line in out["stdout"].as_str().unwrap().lines() {
        let name = line.split('=').next().unwrap();
        assert!(rein_tools::shell::DEFAULT_ENV.contains(&name), "{line}");
    }
}

#[tokio::test]
async fn output_is_capped_and_counted() {
    let dir = workspace();
    let t = tool(&dir.path().join("ws"));
    let out = run(&t, json!({"argv": ["seq", "1", "10000"]}))
        .await
        .unwrap();
    assert_eq!(out["stdout"].as_str().unwrap().len(), 1000);
    assert_eq!(out["stdout_bytes"], 48894);
    assert_eq!(out["stdout_truncated"], true);
    assert_eq!(out["stdout_attachment"], "stdout");
}

#[tokio::test]
async fn output_past_the_cap_is_an_attachment_bounded_by_the_spill_cap() {
    let dir = workspace();
    let expected: String = (1..=10_000).map(|n| format!("{n}\n")).collect();
    let t = tool(&dir.path().join("ws"));
    let out = t
        .run_with_attachments(json!({"argv": ["seq", "1", "10000"]}))
        .await
        .unwrap();
    assert_eq!(out.attachments().len(), 1);
    let stdout = &out.attachments()[0];
    assert_eq!(
        (stdout.name(), stdout.media_type()),
        ("stdout", "text/plain")
    );
    assert_eq!(stdout.bytes(), expected.as_bytes());
    assert!(
        out.value()["stdout_note"]
            .as_str()
            .unwrap()
            .contains("whole output")
    );

    // Past the spill cap, bytes are counted and dropped: memory stays bounded.
    let guard = ShellGuard::new(["seq"], Vec::<&str>::new());
    let small = ShellRun::new(
        Workspace::open(dir.path().join("ws")).unwrap(),
        ShellConfig::new(guard)
            .with_output_cap(10)
            .with_spill_cap(2000),
    );
    let out = small
        .run_with_attachments(json!({"argv": ["seq", "1", "10000"]}))
        .await
        .unwrap();
    assert_eq!(out.value()["stdout"], expected[..10]);
    assert_eq!(out.value()["stdout_bytes"], expected.len());
    assert_eq!(out.attachments()[0].bytes(), &expected.as_bytes()[..2000]);
    let note = out.value()["stdout_note"].as_str().unwrap();
    assert!(
        note.contains("first 2000 bytes") && note.contains("dropped"),
        "{note}"
    );

    // A short output has no attachment.
    let out = small
        .run_with_attachments(json!({"argv": ["seq", "1", "3"]}))
        .await
        .unwrap();
    assert!(out.attachments().is_empty());
    assert_eq!(out.value()["stdout_truncated"], false);
    assert_eq!(out.value().get("stdout_attachment"), None);
}

/// A word no other process has in its command line: `sleep TAG` sleeps long and can be
/// found from outside the command's namespaces.
fn unique_sleep() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "100000.{}{:04}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The live (not zombie) processes whose command line holds `tag`.
fn live_with(tag: &str) -> Vec<i32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                == Some("Z")
        });
        if !zombie && String::from_utf8_lossy(&cmdline).contains(tag) {
            live.push(pid);
        }
    }
    live
}

/// Waits (bounded) until no live process holds `tag`: the kill is sent synchronously, but
/// the kernel finishes processes asynchronously. Survivors are killed before returning,
/// so a failing run leaves nothing behind.
async fn survivors(tag: &str) -> Vec<i32> {
    for _ in 0..500 {
        if live_with(tag).is_empty() {
            return Vec::new();
        }
        tokio::task::yield_now().await;
        std::thread::yield_now();
    }
    let left = live_with(tag);
    for &pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    left
}

/// A script that forks children and waits forever.
fn forker(root: &Path, tag: &str) -> Value {
    std::fs::write(
        root.join("forker.sh"),
        format!("sleep {tag} &\nsleep {tag} &\necho started > started\nsleep {tag}\n"),
    )
    .unwrap();
    json!(["sh", "forker.sh"])
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = workspace();
    let root = dir.path().join("ws");
    let t = tool(&root);
    let tag = unique_sleep();
    let e = run(&t, json!({"argv": forker(&root, &tag), "timeout_ms": 4000}))
        .await
        .unwrap_err();
    assert!(matches!(e, ShellError::TimedOut { .. }), "{e:?}");
    assert!(matches!(ToolError::from(e), ToolError::TimedOut { .. }));
    assert!(root.join("started").exists(), "the children were started");
    assert_eq!(survivors(&tag).await, Vec::<i32>::new());
}

#[tokio::test]
async fn a_dropped_call_kills_the_whole_process_group() {
    let dir = workspace();
    let root = dir.path().join("ws");
    let t = tool(&root);
    let tag = unique_sleep();
    // The engine's own timeout or an abort drops the call's future: the same must happen.
    let call = t.call(json!({"argv": forker(&root, &tag)}));
    assert!(
        tokio::time::timeout(Duration::from_millis(4000), call)
            .await
            .is_err()
    );
    assert!(root.join("started").exists(), "the children were started");
    assert_eq!(survivors(&tag).await, Vec::<i32>::new());
}

#[test]
fn shell_run_is_destructive_and_high_risk() {
    let a = ShellRun::annotations();
    assert!(a.is_destructive() && !a.is_read_only() && !a.is_idempotent());
    assert_eq!(a.risk_level(), rein_tool::RiskLevel::High);
    assert_eq!(ShellRun::spec().name().as_str(), "shell.run");
}

/// With the sandbox on, a command writes inside the workspace and cannot write outside it
/// — or, where the kernel has no Landlock, nothing runs and the error says so.
#[tokio::test]
async fn the_sandbox_confines_writes_or_says_it_is_unsupported() {
    let dir = workspace();
    let root = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::write(
        root.join("write.sh"),
        format!(
            "echo in > inside.txt\necho out > {}/outside.txt\necho done\n",
            outside.display()
        ),
    )
    .unwrap();
    let guard = ShellGuard::new(Vec::<&str>::new(), Vec::<&str>::new()).allow_launchers(["sh"]);
    let tool = ShellRun::new(
        Workspace::open(&root).unwrap(),
        ShellConfig::new(guard).with_sandbox(true),
    );
    match tool.run(json!({"argv": ["sh", "write.sh"]})).await {
        Ok(out) => {
            assert_eq!(out["sandbox"], "landlock");
            assert_eq!(out["stdout"], "done\n");
            assert!(root.join("inside.txt").exists(), "{out}");
            assert!(!outside.join("outside.txt").exists(), "{out}");
        }
        Err(ShellError::Sandbox(rein_tools::shell::SandboxError::Unsupported { reason })) => {
            assert!(!reason.is_empty());
            assert!(!root.join("inside.txt").exists(), "nothing ran");
        }
        Err(e) => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn a_fork_loop_stops_at_the_process_bound_and_nothing_survives() {
    let dir = workspace();
    let root = dir.path().join("ws");
    let tag = unique_sleep();
    // 200 background sleeps, each pid printed; at the bound a fork fails.
    std::fs::write(
        root.join("bomb.sh"),
        format!(
            "i=0\nwhile [ $i -lt 200 ]; do sleep {tag} >/dev/null 2>&1 & echo $!; i=$((i+1)); done\n"
        ),
    )
    .unwrap();
    let guard = ShellGuard::new(["echo", "no-such-program-rein"], Vec::<&str>::new())
        .allow_launchers(["sh"]);
    let bounded = ShellRun::new(
        Workspace::open(&root).unwrap(),
        ShellConfig::new(guard).with_max_processes(8),
    );
    let out = match bounded
        .run(json!({"argv": ["sh", "bomb.sh"], "timeout_ms": 20000}))
        .await
    {
        Ok(out) => out,
        Err(ShellError::ProcessLimit(e)) => {
            // No writable pids cgroup on this machine: the refusal is what we can
            // assert (typed, nothing run); RELIABILITY.md says what the bound needs.
            assert!(e.to_string().contains("nothing was run"), "{e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(out["max_processes"], 8);
    let mut pids: Vec<&str> = out["stdout"].as_str().unwrap().lines().collect();
    pids.sort_unstable();
    pids.dedup();
    // The script itself counts: at most 7 children ever ran, far from 200.
    assert!(!pids.is_empty() && pids.len() <= 7, "{pids:?}");
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("fork"),
        "{out}"
    );
    // Every child the loop started is gone when the call returns (or very soon after:
    // the kernel finishes killed processes asynchronously).
    assert_eq!(survivors(&tag).await, Vec::<i32>::new());

    // The launcher runs the program with its arguments as given, never interpreted.
    let out = bounded
        .run(json!({"argv": ["echo", "a  b", "*", "~", "-n"]}))
        .await
        .unwrap();
    assert_eq!(out["stdout"], "a  b * ~ -n\n");
    // A missing program is refused before anything starts, bounded or not.
    let e = bounded
        .run(json!({"argv": ["no-such-program-rein"]}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ShellError::Rejected(ShellRejection::NotFound { .. })),
        "{e:?}"
    );
}

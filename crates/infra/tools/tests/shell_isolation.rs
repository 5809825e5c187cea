//! `shell.run` against the attacks on its boundary: a command reading rein's environment
//! through `/proc`, an orphan that leaves its process group, an allowed name shadowed by a
//! workspace script, and launchers (`find -exec`, `sed e`) past a deny list; and the typed
//! refusal where the machine cannot isolate.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use rein_tools::Workspace;
use rein_tools::shell::{
    Isolation, IsolationError, ShellConfig, ShellError, ShellGuard, ShellRejection, ShellRun,
};
use serde_json::{Value, json};

/// The variable a re-executed test finds its canary in.
const CANARY: &str = "REIN_TEST_CANARY";
/// Set when a test runs re-executed where user namespaces are refused.
const NO_USERNS: &str = "REIN_TEST_NO_USERNS";

/// The file a re-executed test writes when it has run its checks to the end.
const DONE: &str = "REIN_TEST_DONE";

/// Says, to the test that re-executed this one, that its checks ran to the end.
fn mark_done() {
    let path = std::env::var_os(DONE).expect("re-executed with REIN_TEST_DONE");
    std::fs::write(path, "done").unwrap();
}

/// Runs this test binary's test `name` again, with `env` set from its start (so the values
/// are in its `/proc/PID/environ`, as an API key is in rein's), optionally wrapped in
/// `prefix`; returns whether it passed, and its output.
/// The re-executed test must reach its end (`mark_done`): passing by returning early, for
/// want of its variables, does not count.
fn reexec(name: &str, env: &[(&str, &str)], prefix: &[&str]) -> (bool, String) {
    let exe = std::env::current_exe().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let done = scratch.path().join("done");
    let mut words: Vec<String> = prefix.iter().map(|&w| w.to_owned()).collect();
    words.push(exe.display().to_string());
    words.extend(["--exact", name, "--test-threads=1", "--nocapture"].map(str::to_owned));
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]);
    for (key, value) in env {
        command.env(key, value);
    }
    command.env(DONE, &done);
    let out = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && done.exists(), text)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "notes\n").unwrap();
    dir
}

fn shell(root: &Path, guard: ShellGuard, config: impl Fn(ShellConfig) -> ShellConfig) -> ShellRun {
    ShellRun::new(
        Workspace::open(root).unwrap(),
        config(ShellConfig::new(guard)),
    )
}

/// Everything a call printed, or why it failed.
async fn printed(tool: &ShellRun, input: Value) -> String {
    match tool.run(input).await {
        Ok(out) => format!("{}{}", out["stdout"], out["stderr"]),
        Err(e) => format!("error: {e}"),
    }
}

/// Whether a pids cgroup can be made here (else `max_processes` is refused, typed).
async fn bounded_calls_work(root: &Path) -> bool {
    let guard = ShellGuard::new(["true"], Vec::<&str>::new());
    let tool = shell(root, guard, |c| c.with_max_processes(4));
    !matches!(
        tool.run(json!({"argv": ["true"]})).await,
        Err(ShellError::ProcessLimit(_))
    )
}

#[test]
fn no_command_reads_rein_s_environment_through_proc() {
    let canary = format!("canary-{}", std::process::id());
    let (passed, output) = reexec(
        "reads_of_rein_s_environment_find_no_canary",
        &[(CANARY, &canary)],
        &[],
    );
    assert!(passed, "{output}");
}

/// Run by [`no_command_reads_rein_s_environment_through_proc`] with the canary in this
/// process's environment from its start; does nothing when run on its own.
#[tokio::test]
async fn reads_of_rein_s_environment_find_no_canary() {
    let Ok(canary) = std::env::var(CANARY) else {
        return;
    };
    let dir = workspace();
    let root = dir.path();
    let guard = || ShellGuard::new(["cat"], Vec::<&str>::new()).allow_launchers(["sh"]);
    let rein = format!("/proc/{}/environ", std::process::id());
    // (Scripts: the guard refuses `$` and `;` in any word.)
    for (script, text) in [
        ("all.sh", "cat /proc/*/environ\n"),
        // Uncovering the machine's /proc under the fresh one.
        (
            "umount.sh",
            "umount /proc\numount -l /proc\ncat /proc/*/environ\n",
        ),
        ("own.sh", "echo $$\n"),
    ] {
        std::fs::write(root.join(script), text).unwrap();
    }
    let attempts = [
        json!({"argv": ["cat", rein]}),
        json!({"argv": ["sh", "all.sh"]}),
        json!({"argv": ["sh", "umount.sh"]}),
    ];
    // The opt-out shows what is at stake: the canary is there to be read.
    let open = shell(root, guard(), |c| c.with_isolation(Isolation::None));
    assert!(printed(&open, attempts[0].clone()).await.contains(&canary));

    let bounded = bounded_calls_work(root).await;
    for (sandbox, max_processes) in [(false, false), (true, false), (false, true), (true, true)] {
        if max_processes && !bounded {
            continue;
        }
        let tool = shell(root, guard(), |c| {
            let c = c.with_sandbox(sandbox);
            if max_processes {
                c.with_max_processes(16)
            } else {
                c
            }
        });
        let own = tool.run(json!({"argv": ["sh", "own.sh"]})).await.unwrap();
        // The command runs, as the first process of its own PID namespace.
        assert_eq!(out_lines(&own)[0], "1", "{own}");
        assert_eq!(own["isolation"], "namespaces");
        for attempt in &attempts {
            let seen = printed(&tool, attempt.clone()).await;
            assert!(
                !seen.contains(&canary),
                "sandbox {sandbox}, bounded {max_processes}: {attempt} read rein's environment: {seen}"
            );
        }
    }
    mark_done();
}

fn out_lines(out: &Value) -> Vec<String> {
    out["stdout"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
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

/// Waits (bounded) until no live process holds `tag` (the kernel finishes killed
/// processes asynchronously); kills and returns what is left.
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
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    left
}

#[tokio::test]
async fn an_orphan_that_leaves_its_group_dies_with_the_call() {
    let dir = workspace();
    let root = dir.path();
    let bounded = bounded_calls_work(root).await;
    for (i, max_processes) in [false, true].into_iter().enumerate() {
        if max_processes && !bounded {
            continue;
        }
        let tag = format!("100000.{}{i}", std::process::id());
        // A subshell starts the orphan in a session of its own (out of the command's
        // process group) and exits, so the orphan is reparented; the script waits until
        // it runs, then either exits (the call returns) or sleeps (the call times out).
        for (ends, input) in [
            ("exit 0", json!({"argv": ["sh", "orphan.sh"]})),
            (
                "sleep 100000",
                json!({"argv": ["sh", "orphan.sh"], "timeout_ms": 3000}),
            ),
        ] {
            let _ = std::fs::remove_file(root.join("started"));
            std::fs::write(
                root.join("orphan.sh"),
                format!(
                    "(setsid sh -c 'echo go > started; exec sleep {tag}' </dev/null >/dev/null 2>&1 &)\nwhile [ ! -e started ]; do sleep 0.01; done\n{ends}\n"
                ),
            )
            .unwrap();
            let guard = ShellGuard::new(["true"], Vec::<&str>::new()).allow_launchers(["sh"]);
            let tool = shell(root, guard, |c| {
                if max_processes {
                    c.with_max_processes(16)
                } else {
                    c
                }
            });
            let result = tool.run(input.clone()).await;
            assert!(
                result.is_ok() || matches!(result, Err(ShellError::TimedOut { .. })),
                "{result:?}"
            );
            assert!(root.join("started").exists(), "the orphan ran: {result:?}");
            assert_eq!(
                survivors(&tag).await,
                Vec::<i32>::new(),
                "bounded {max_processes}, {input}: the orphan outlived the call"
            );
        }
    }
}

#[tokio::test]
async fn a_workspace_script_named_like_an_allowed_program_does_not_run() {
    let dir = workspace();
    let root = dir.path();
    std::fs::create_dir(root.join("tools")).unwrap();
    for script in ["tools/cat", "cat"] {
        std::fs::write(root.join(script), "#!/bin/sh\necho pwned > pwned.txt\n").unwrap();
        Command::new("chmod")
            .args(["+x", &root.join(script).display().to_string()])
            .status()
            .unwrap();
    }
    let bounded = bounded_calls_work(root).await;
    for max_processes in [false, true] {
        if max_processes && !bounded {
            continue;
        }
        let guard = ShellGuard::new(["cat"], Vec::<&str>::new());
        let tool = shell(root, guard, |c| {
            if max_processes {
                c.with_max_processes(16)
            } else {
                c
            }
        });
        for line in ["tools/cat notes.txt", "./cat notes.txt"] {
            let e = tool.run(json!({"command": line})).await.unwrap_err();
            let ShellError::Rejected(ShellRejection::Shadowed {
                resolved, allowed, ..
            }) = &e
            else {
                panic!("{line}: {e:?}");
            };
            assert!(resolved.starts_with(root.canonicalize().unwrap()), "{e}");
            assert!(!allowed.starts_with(root.canonicalize().unwrap()), "{e}");
        }
        assert!(!root.join("pwned.txt").exists());
        // The allowed `cat` runs, named or given by its path, the same in both modes.
        let out = tool.run(json!({"command": "cat notes.txt"})).await.unwrap();
        assert_eq!(out["stdout"], "notes\n");
        let program = out["program"].as_str().unwrap().to_owned();
        assert!(Path::new(&program).is_absolute(), "{out}");
        let out = tool
            .run(json!({"argv": [program.clone(), "notes.txt"]}))
            .await
            .unwrap();
        assert_eq!(
            (out["stdout"].clone(), out["program"].clone()),
            (json!("notes\n"), json!(program))
        );
    }
}

#[tokio::test]
async fn launchers_do_not_get_past_a_deny_list() {
    let dir = workspace();
    let root = dir.path();
    for victim in ["victim.txt", "victim2.txt"] {
        std::fs::write(root.join(victim), "keep me\n").unwrap();
    }
    for guard in [
        ShellGuard::new(["find", "sed", "git", "make"], ["rm"]),
        ShellGuard::new(Vec::<&str>::new(), ["rm"]),
    ] {
        let tool = shell(root, guard, |c| c);
        for (line, why) in [
            ("find victim.txt -exec rm {} +", "exec_form"),
            ("find . -name victim.txt -execdir rm {} +", "exec_form"),
            ("sed -n '1e rm victim2.txt' notes.txt", "exec_form"),
            ("sed -n 's/x/rm victim2.txt/e' notes.txt", "exec_form"),
            ("git -c core.pager='rm victim.txt' log", "launcher"),
            ("make -f victim.txt", "launcher"),
        ] {
            let got = match tool.run(json!({"command": line})).await {
                Err(ShellError::Rejected(ShellRejection::ExecForm { .. })) => "exec_form",
                Err(ShellError::Rejected(ShellRejection::Launcher { .. })) => "launcher",
                other => panic!("{line}: {other:?}"),
            };
            assert_eq!(got, why, "{line}");
        }
        assert!(root.join("victim.txt").exists() && root.join("victim2.txt").exists());
        // sed with `--sandbox` first runs: GNU sed then refuses `e` itself.
        let out = tool
            .run(json!({"command": "sed --sandbox -n 1p notes.txt"}))
            .await
            .unwrap();
        assert_eq!(out["stdout"], "notes\n");
    }
    // Allowed as a launcher, a program runs with any arguments (the sandbox and the
    // isolation are the boundary then).
    let guard = ShellGuard::new(Vec::<&str>::new(), ["rm"]).allow_launchers(["find"]);
    let tool = shell(root, guard, |c| c);
    let out = tool
        .run(json!({"command": "find notes.txt -exec cat {} +"}))
        .await
        .unwrap();
    assert_eq!(out["stdout"], "notes\n");
}

#[test]
fn where_namespaces_are_refused_nothing_runs_and_the_error_says_what_is_missing() {
    // A user namespace whose limit of nested user namespaces is 0: a machine (or a
    // container's seccomp profile) that refuses them.
    let (passed, output) = reexec(
        "a_refused_isolation_is_a_typed_error",
        &[(NO_USERNS, "1")],
        &[
            "unshare",
            "--user",
            "--map-root-user",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"",
            "sh",
        ],
    );
    assert!(passed, "{output}");
}

/// Run by [`where_namespaces_are_refused_nothing_runs_and_the_error_says_what_is_missing`];
/// does nothing when run on its own.
#[tokio::test]
async fn a_refused_isolation_is_a_typed_error() {
    if std::env::var_os(NO_USERNS).is_none() {
        return;
    }
    let dir = workspace();
    let root = dir.path();
    let guard = || ShellGuard::new(["touch"], Vec::<&str>::new());
    let tool = shell(root, guard(), |c| c);
    let e = tool
        .run(json!({"argv": ["touch", "ran.txt"]}))
        .await
        .unwrap_err();
    let ShellError::Isolation(IsolationError::Unavailable { missing, .. }) = &e else {
        panic!("{e:?}");
    };
    assert!(missing.contains("user"), "{e}");
    assert!(e.to_string().contains("\"isolation\": \"none\""), "{e}");
    assert!(!root.join("ran.txt").exists(), "nothing ran");
    // The explicit opt-out runs it.
    let tool = shell(root, guard(), |c| c.with_isolation(Isolation::None));
    let out = tool
        .run(json!({"argv": ["touch", "ran.txt"]}))
        .await
        .unwrap();
    assert_eq!(out["isolation"], "none");
    assert!(root.join("ran.txt").exists());
    mark_done();
}

/// Under the sandbox the command's user is unmapped in its own user namespace: it owns its
/// files, but holds no capability on the machine. As root, a file of another user shows
/// it: root's override of file permissions is gone.
#[tokio::test]
async fn a_sandboxed_command_holds_no_capability_even_as_root() {
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
    if !root_user {
        return; // Without root there is no capability to lose.
    }
    let dir = workspace();
    let root = dir.path();
    std::fs::write(root.join("theirs.txt"), "theirs\n").unwrap();
    Command::new("chown")
        .args([
            "65534:65534",
            &root.join("theirs.txt").display().to_string(),
        ])
        .status()
        .unwrap();
    std::fs::write(
        root.join("append.sh"),
        "echo more >> theirs.txt\necho ours > ours.txt\n",
    )
    .unwrap();
    let guard = || ShellGuard::new(Vec::<&str>::new(), Vec::<&str>::new()).allow_launchers(["sh"]);
    let sandboxed = shell(root, guard(), |c| c.with_sandbox(true));
    let out = sandboxed
        .run(json!({"argv": ["sh", "append.sh"]}))
        .await
        .unwrap();
    assert!(
        out["stderr"].as_str().unwrap().contains("ermission denied"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("theirs.txt")).unwrap(),
        "theirs\n"
    );
    assert!(
        root.join("ours.txt").exists(),
        "its own files it still writes: {out}"
    );
}

/// The first executable named `name` on this process's `PATH`.
fn on_path(name: &str) -> std::path::PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap()
}

/// With a deny list only, a link in the workspace does not rename a denied program or a
/// launcher into an allowed one.
#[tokio::test]
async fn a_denied_program_or_a_launcher_behind_a_link_is_refused() {
    let dir = workspace();
    let root = dir.path();
    std::fs::write(root.join("victim.txt"), "keep me\n").unwrap();
    std::os::unix::fs::symlink(on_path("rm"), root.join("del")).unwrap();
    std::os::unix::fs::symlink(on_path("sh"), root.join("run")).unwrap();
    let tool = shell(root, ShellGuard::new(Vec::<&str>::new(), ["rm"]), |c| c);
    let e = tool
        .run(json!({"argv": ["./del", "victim.txt"]}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ShellError::Rejected(ShellRejection::Denied { .. })),
        "{e:?}"
    );
    let e = tool
        .run(json!({"argv": ["./run", "-c", "rm victim.txt"]}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ShellError::Rejected(ShellRejection::Launcher { .. })),
        "{e:?}"
    );
    assert!(root.join("victim.txt").exists());
}

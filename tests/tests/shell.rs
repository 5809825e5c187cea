//! The shell guard against the bypasses public trackers report for substring-matching
//! command guards: split flags, separators and operators, substitutions, redirections,
//! environment prefixes, programs by path, quoting and escaping tricks, newlines and tabs.
//! One table, one `check`.

use rein::shell::{ShellGuard, ShellRejection};

/// What the guard must answer.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Accepted, with these words.
    Runs(&'static [&'static str]),
    /// Refused for this reason.
    Refused(&'static str),
}

fn reason(rejection: &ShellRejection) -> &'static str {
    match rejection {
        ShellRejection::Empty => "empty",
        ShellRejection::Unparsable => "unparsable",
        ShellRejection::ControlCharacter { .. } => "control",
        ShellRejection::Metacharacter { .. } => "metacharacter",
        ShellRejection::Comment => "comment",
        ShellRejection::EnvAssignment { .. } => "env",
        ShellRejection::InvalidProgram { .. } => "invalid",
        ShellRejection::Denied { .. } => "denied",
        ShellRejection::Launcher { .. } => "launcher",
        ShellRejection::ExecForm { .. } => "exec_form",
        ShellRejection::NotFound { .. } => "not_found",
        ShellRejection::Shadowed { .. } => "shadowed",
        ShellRejection::NotAllowed { .. } => "not_allowed",
        ShellRejection::DeniedFlags { .. } => "flags",
        _ => "other",
    }
}

/// An allow-list guard (the recommended setup) and a deny-list one (weaker, still sound on
/// every bypass below).
fn guards() -> [(&'static str, ShellGuard); 2] {
    let rm_rf: &[&[&str]] = &[&["-r", "-R", "--recursive"], &["-f", "--force"]];
    [
        (
            "allow",
            // `git` is named to show that naming a launcher among the programs is not
            // enough: it runs the workspace's hooks and `-c core.*=!…` commands.
            ShellGuard::new(
                [
                    "ls", "cat", "echo", "rm", "git", "grep", "find", "sed", "tar",
                ],
                ["sudo", "su"],
            )
            .deny_flags("rm", rm_rf),
        ),
        (
            "deny",
            ShellGuard::new(Vec::<String>::new(), ["sudo", "su", "curl", "wget"])
                .deny_flags("rm", rm_rf),
        ),
    ]
}

fn check(guard: &ShellGuard, line: &str, expect: &Expect) -> Result<(), String> {
    let got = match guard.check(line) {
        Ok(argv) => {
            // What is accepted is one plain invocation: no word holds a shell character.
            assert!(
                argv.words()
                    .iter()
                    .all(|w| !w.contains([';', '|', '&', '$', '`', '<', '>']))
            );
            Expect::Runs(Box::leak(
                argv.into_words()
                    .into_iter()
                    .map(|w| &*Box::leak(w.into_boxed_str()))
                    .collect::<Vec<&'static str>>()
                    .into_boxed_slice(),
            ))
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            Expect::Refused(reason(&e))
        }
    };
    if &got == expect {
        Ok(())
    } else {
        Err(format!("{line:?}: expected {expect:?}, got {got:?}"))
    }
}

/// (line, expected with the allow-list guard, expected with the deny-list guard)
type Case = (&'static str, Expect, Expect);

fn cases() -> Vec<Case> {
    use Expect::{Refused, Runs};
    vec![
        // plain commands
        ("ls -la", Runs(&["ls", "-la"]), Runs(&["ls", "-la"])),
        (
            "cat 'My File.txt'",
            Runs(&["cat", "My File.txt"]),
            Runs(&["cat", "My File.txt"]),
        ),
        ("ls\t-la", Runs(&["ls", "-la"]), Runs(&["ls", "-la"])),
        (
            "rm notes.txt",
            Runs(&["rm", "notes.txt"]),
            Runs(&["rm", "notes.txt"]),
        ),
        (
            "rm -r build",
            Runs(&["rm", "-r", "build"]),
            Runs(&["rm", "-r", "build"]),
        ),
        (
            "rm -- -rf",
            Runs(&["rm", "--", "-rf"]),
            Runs(&["rm", "--", "-rf"]),
        ),
        (
            "git log --format=%H",
            Refused("launcher"),
            Refused("launcher"),
        ),
        (
            "grep a#b f",
            Runs(&["grep", "a#b", "f"]),
            Runs(&["grep", "a#b", "f"]),
        ),
        ("echo '#'", Runs(&["echo", "#"]), Runs(&["echo", "#"])),
        ("python3 x.py", Refused("launcher"), Refused("launcher")),
        (
            "curl example.com",
            Refused("not_allowed"),
            Refused("denied"),
        ),
        // rm -rf however it is split, ordered, spelled or quoted
        ("rm -rf /", Refused("flags"), Refused("flags")),
        ("rm -r -f /", Refused("flags"), Refused("flags")),
        ("rm -f -r /", Refused("flags"), Refused("flags")),
        ("rm -fr /", Refused("flags"), Refused("flags")),
        ("rm -Rf /", Refused("flags"), Refused("flags")),
        ("rm -rvf /", Refused("flags"), Refused("flags")),
        (
            "rm --recursive --force /",
            Refused("flags"),
            Refused("flags"),
        ),
        ("rm --force=1 -R /", Refused("flags"), Refused("flags")),
        ("rm / -rf", Refused("flags"), Refused("flags")),
        ("rm   -r    -f   /", Refused("flags"), Refused("flags")),
        ("rm\t-r\t-f\t/", Refused("flags"), Refused("flags")),
        (r#"r"m" -rf /"#, Refused("flags"), Refused("flags")),
        ("'rm' -rf /", Refused("flags"), Refused("flags")),
        (r"r\m -rf /", Refused("flags"), Refused("flags")),
        ("r''m -rf /", Refused("flags"), Refused("flags")),
        (r#"rm "-rf" /"#, Refused("flags"), Refused("flags")),
        (r"rm -\r\f /", Refused("flags"), Refused("flags")),
        ("/bin/rm -rf /", Refused("flags"), Refused("flags")),
        (
            "/usr/bin/../../bin/RM -rf /",
            Refused("not_allowed"),
            Refused("flags"),
        ),
        // separators and operators
        (
            "ls; rm -rf /",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "ls ;rm -rf /",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "ls && rm -rf /",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "ls || rm -rf /",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "ls | sh",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "ls & rm -rf /",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "ls 'a;b'",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        // substitutions
        (
            "echo $(rm -rf /)",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "echo `rm -rf /`",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "echo ${HOME}",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "echo $HOME",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            r#"echo "$(id)""#,
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "cat <(id)",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        // redirections
        (
            "cat < /etc/shadow",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "echo x > ~/.bashrc",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "echo x >> ~/.ssh/authorized_keys",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        (
            "ls 2>&1",
            Refused("metacharacter"),
            Refused("metacharacter"),
        ),
        // environment prefixes and launchers
        ("FOO=bar ls", Refused("env"), Refused("env")),
        ("LD_PRELOAD=/tmp/x.so ls", Refused("env"), Refused("env")),
        ("PATH=/tmp rm -rf /", Refused("env"), Refused("env")),
        ("env rm -rf /", Refused("launcher"), Refused("launcher")),
        ("env -i FOO=1 ls", Refused("launcher"), Refused("launcher")),
        ("sudo ls", Refused("denied"), Refused("denied")),
        (
            "bash -c 'rm -rf /'",
            Refused("launcher"),
            Refused("launcher"),
        ),
        ("sh -c ls", Refused("launcher"), Refused("launcher")),
        ("xargs rm", Refused("launcher"), Refused("launcher")),
        ("nohup rm x", Refused("launcher"), Refused("launcher")),
        ("timeout 5 rm x", Refused("launcher"), Refused("launcher")),
        ("busybox rm -rf /", Refused("launcher"), Refused("launcher")),
        // programs that run programs: launchers by name, or by their exec forms
        (
            "find . -name notes.txt",
            Runs(&["find", ".", "-name", "notes.txt"]),
            Runs(&["find", ".", "-name", "notes.txt"]),
        ),
        (
            "find victim.txt -exec rm {} +",
            Refused("exec_form"),
            Refused("exec_form"),
        ),
        (
            "find -- . -execdir rm {} +",
            Refused("exec_form"),
            Refused("exec_form"),
        ),
        (
            "find . -ok rm {} +",
            Refused("exec_form"),
            Refused("exec_form"),
        ),
        (
            "sed -n '1e rm victim2.txt' notes.txt",
            Refused("exec_form"),
            Refused("exec_form"),
        ),
        (
            "sed -f --sandbox notes.txt",
            Refused("exec_form"),
            Refused("exec_form"),
        ),
        (
            "sed --sandbox -n 1p notes.txt",
            Runs(&["sed", "--sandbox", "-n", "1p", "notes.txt"]),
            Runs(&["sed", "--sandbox", "-n", "1p", "notes.txt"]),
        ),
        (
            "tar --to-command=sh -xf a.tar",
            Refused("exec_form"),
            Refused("exec_form"),
        ),
        (
            "tar -xI sh -f a.tar",
            Refused("exec_form"),
            Refused("exec_form"),
        ),
        (
            "git -c core.fsmonitor=x status",
            Refused("launcher"),
            Refused("launcher"),
        ),
        ("awk -f x.awk f", Refused("launcher"), Refused("launcher")),
        ("make all", Refused("launcher"), Refused("launcher")),
        ("python3.12 x.py", Refused("launcher"), Refused("launcher")),
        ("node -e 1", Refused("launcher"), Refused("launcher")),
        ("perl -e 1", Refused("launcher"), Refused("launcher")),
        ("nice rm x", Refused("launcher"), Refused("launcher")),
        ("strace rm x", Refused("launcher"), Refused("launcher")),
        ("cargo build", Refused("launcher"), Refused("launcher")),
        // programs given by path
        ("/usr/bin/sudo ls", Refused("denied"), Refused("denied")),
        ("./sudo ls", Refused("denied"), Refused("denied")),
        (
            "../../usr/bin/sudo ls",
            Refused("denied"),
            Refused("denied"),
        ),
        ("/usr/bin/SUDO ls", Refused("denied"), Refused("denied")),
        ("/usr/bin/env rm", Refused("launcher"), Refused("launcher")),
        ("/bin/sh -c ls", Refused("launcher"), Refused("launcher")),
        (
            r#""/usr/bin/su"do ls"#,
            Refused("denied"),
            Refused("denied"),
        ),
        ("/usr/bin/", Refused("invalid"), Refused("invalid")),
        ("/usr/bin/..", Refused("invalid"), Refused("invalid")),
        // newlines, carriage returns, NUL and other control characters
        ("ls\nrm -rf /", Refused("control"), Refused("control")),
        ("ls\rrm -rf /", Refused("control"), Refused("control")),
        ("ls\u{0}rm", Refused("control"), Refused("control")),
        ("ls\u{1b}[2J", Refused("control"), Refused("control")),
        ("ls \\\nrm", Refused("control"), Refused("control")),
        ("ls\u{85}rm", Refused("control"), Refused("control")),
        // comments and quoting errors
        ("ls # ; rm -rf /", Refused("comment"), Refused("comment")),
        ("ls #", Refused("comment"), Refused("comment")),
        (
            "ls 'unterminated",
            Refused("unparsable"),
            Refused("unparsable"),
        ),
        (
            r#"ls "unterminated"#,
            Refused("unparsable"),
            Refused("unparsable"),
        ),
        ("ls \\", Refused("unparsable"), Refused("unparsable")),
        ("", Refused("empty"), Refused("empty")),
        ("   \t ", Refused("empty"), Refused("empty")),
        ("''", Refused("invalid"), Refused("invalid")),
    ]
}

#[test]
fn the_guard_decides_on_parsed_argv_and_every_known_bypass_is_refused() {
    let cases = cases();
    assert!(cases.len() >= 80, "{} cases", cases.len());
    let [(_, allow), (_, deny)] = guards();
    let mut failures = Vec::new();
    for (line, with_allow, with_deny) in &cases {
        if let Err(e) = check(&allow, line, with_allow) {
            failures.push(format!("allow-list guard: {e}"));
        }
        if let Err(e) = check(&deny, line, with_deny) {
            failures.push(format!("deny-list guard: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_rejection_is_an_invalid_input_tool_error() {
    let guard = ShellGuard::new(["ls"], ["sudo"]);
    let err: rein::ToolError = guard.check("sudo ls").expect_err("denied").into();
    assert_eq!(err.kind(), rein::ToolError::invalid_input("x").kind());
    assert!(err.to_string().contains("sudo"), "{err}");
}

/// The same lines through the built-in `shell.run` in `command` mode: every line a guard
/// refuses is refused by the tool for the same reason, before anything runs; every line the
/// allow-list guard accepts runs exactly the words the guard saw, in the workspace. (Its
/// timeout and process-group kill are checked in `rein-tools`' `shell_run` tests.)
#[tokio::test]
async fn shell_run_refuses_what_the_guard_refuses_and_runs_what_it_accepts() {
    use rein::shell::{ShellConfig, ShellError, ShellRun};
    use rein::tools::Workspace;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("build")).unwrap();
    std::fs::write(root.join("victim.txt"), "keep me\n").unwrap();
    for file in ["notes.txt", "My File.txt", "f"] {
        std::fs::write(root.join(file), "a#b\n").unwrap();
    }
    let [(_, allow), (_, deny)] = guards();
    let tools = [
        (
            ShellRun::new(Workspace::open(root).unwrap(), ShellConfig::new(allow)),
            true,
        ),
        (
            ShellRun::new(Workspace::open(root).unwrap(), ShellConfig::new(deny)),
            false,
        ),
    ];
    let mut failures = Vec::new();
    let mut ran = 0;
    for (line, with_allow, with_deny) in cases() {
        for ((tool, allow_list), expect) in tools.iter().zip([&with_allow, &with_deny]) {
            match (expect, allow_list) {
                (Expect::Refused(why), _) => match tool.run(rein::json!({"command": line})).await {
                    Err(ShellError::Rejected(e)) if reason(&e) == *why => {}
                    other => failures.push(format!("{line:?}: expected {why}, got {other:?}")),
                },
                (Expect::Runs(words), true) => {
                    match tool.run(rein::json!({"command": line})).await {
                        Ok(out) if out["argv"] == rein::json!(words) => ran += 1,
                        other => failures.push(format!(
                            "{line:?}: expected {words:?} to run, got {other:?}"
                        )),
                    }
                }
                // Programs the deny-list guard lets through are not run here.
                (Expect::Runs(_), false) => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 8, "{ran} lines ran");
    // Nothing a refused line named was created next to the workspace, or deleted.
    assert!(!root.join("x").exists() && !root.join("pwned").exists());
    assert!(root.join("victim.txt").exists());
}

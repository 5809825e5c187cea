//! The path-escape suite: every way out of the workspace a planner could try, through
//! every file tool, is a typed refusal naming the path, and nothing outside changes.
//! One table, one `check`; then a symbolic link swapped while tools run.
#![cfg(unix)]

mod support;

use rein_tools::{FsError, FsOp, PathError};
use serde_json::{Value, json};
use support::{SECRET, fixture};

/// The refusal a case must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Empty,
    Nul,
    Absolute,
    ParentDir,
    TooLong,
    Escapes,
    HardLink,
    IsRoot,
    Symlink,
}

fn refusal(e: &FsError) -> Option<Refusal> {
    Some(match e {
        FsError::Path(PathError::Empty) => Refusal::Empty,
        FsError::Path(PathError::Nul { .. }) => Refusal::Nul,
        FsError::Path(PathError::Absolute { .. }) => Refusal::Absolute,
        FsError::Path(PathError::ParentDir { .. }) => Refusal::ParentDir,
        FsError::Path(PathError::TooLong { .. }) => Refusal::TooLong,
        FsError::Path(PathError::Escapes { .. }) => Refusal::Escapes,
        FsError::Path(PathError::HardLink { .. }) => Refusal::HardLink,
        FsError::Path(PathError::IsRoot { .. }) => Refusal::IsRoot,
        FsError::Symlink { .. } => Refusal::Symlink,
        _ => return None,
    })
}

fn cases(outside: &str) -> Vec<(FsOp, Value, Refusal)> {
    use FsOp::{Delete, Edit, Glob, Grep, List, Read, Write};
    use Refusal::*;
    let secret = format!("{outside}/secret.txt");
    let long_name = "n".repeat(256);
    let long_path = "d/".repeat(2100);
    let edit = |path: &str| json!({"path": path, "old_string": "secret", "new_string": "pwned"});
    let write = |path: &str| json!({"path": path, "content": "pwned"});
    vec![
        // Lexical: `..`, absolute paths, NUL bytes, over-long names, nothing at all.
        (Read, json!({"path": "../outside/secret.txt"}), ParentDir),
        (
            Read,
            json!({"path": "sub/../../outside/secret.txt"}),
            ParentDir,
        ),
        (Read, json!({"path": "./.."}), ParentDir),
        (Read, json!({"path": "/etc/passwd"}), Absolute),
        (Read, json!({"path": secret}), Absolute),
        (
            Read,
            json!({"path": "/proc/self/root/etc/passwd"}),
            Absolute,
        ),
        (Read, json!({"path": "a.txt\u{0}../../etc/passwd"}), Nul),
        (Read, json!({"path": long_name}), TooLong),
        (Read, json!({"path": long_path}), TooLong),
        (Read, json!({"path": ""}), Empty),
        (Read, json!({"path": "."}), IsRoot),
        // Symbolic links that lead out: relative, absolute, to `/`, to `/etc`, via `..`.
        (Read, json!({"path": "link_out_file"}), Escapes),
        (Read, json!({"path": "link_out_dir/secret.txt"}), Escapes),
        (
            Read,
            json!({"path": "link_out_dir/dir/secret.txt"}),
            Escapes,
        ),
        (Read, json!({"path": "abs_link"}), Escapes),
        (Read, json!({"path": "abs_dir/secret.txt"}), Escapes),
        (Read, json!({"path": "proc_root/etc/passwd"}), Escapes),
        (Read, json!({"path": "etc_link/passwd"}), Escapes),
        (
            Read,
            json!({"path": "sub/upup/outside/secret.txt"}),
            Escapes,
        ),
        (Read, json!({"path": "sub/up/link_out_file"}), Escapes),
        // A hard link to a file outside.
        (Read, json!({"path": "hard"}), HardLink),
        // Directories and searches.
        (List, json!({"path": "link_out_dir"}), Escapes),
        (List, json!({"path": "proc_root"}), Escapes),
        (List, json!({"path": ".."}), ParentDir),
        (List, json!({"path": "/"}), Absolute),
        (
            Glob,
            json!({"pattern": "**", "path": "link_out_dir"}),
            Escapes,
        ),
        (
            Glob,
            json!({"pattern": "**", "path": "../outside"}),
            ParentDir,
        ),
        (
            Grep,
            json!({"pattern": "secret", "path": "link_out_dir"}),
            Escapes,
        ),
        (
            Grep,
            json!({"pattern": "secret", "path": "abs_dir"}),
            Escapes,
        ),
        (
            Grep,
            json!({"pattern": "root", "path": "etc_link"}),
            Escapes,
        ),
        (Grep, json!({"pattern": "secret", "path": "/tmp"}), Absolute),
        (
            Grep,
            json!({"pattern": "secret", "path": "sub/upup"}),
            Escapes,
        ),
        // Writes: never through a link, never next to the workspace.
        (Write, write("../outside/new.txt"), ParentDir),
        (Write, write("link_out_dir/new.txt"), Escapes),
        (Write, write("link_out_dir/deep/new.txt"), Escapes),
        (Write, write("abs_dir/deep/new.txt"), Escapes),
        (Write, write("proc_root/tmp/new.txt"), Escapes),
        (Write, write("sub/upup/outside/new.txt"), Escapes),
        (Write, write("link_out_file"), Symlink),
        (Write, write("abs_link"), Symlink),
        (Write, write("dangling_out"), Symlink),
        (Write, write("hard"), HardLink),
        (Write, write("/tmp/new.txt"), Absolute),
        (Write, write("."), IsRoot),
        (Write, write("new\u{0}.txt"), Nul),
        (Write, write(&format!("{}/x", "n".repeat(300))), TooLong),
        // Edits and deletes.
        (Edit, edit("link_out_file"), Symlink),
        (Edit, edit("link_out_dir/secret.txt"), Escapes),
        (Edit, edit("hard"), HardLink),
        (Edit, edit("../outside/secret.txt"), ParentDir),
        (Delete, json!({"path": "link_out_file"}), Symlink),
        (Delete, json!({"path": "link_out_dir/secret.txt"}), Escapes),
        (
            Delete,
            json!({"path": "sub/upup/outside/secret.txt"}),
            Escapes,
        ),
        (Delete, json!({"path": "hard"}), HardLink),
        (Delete, json!({"path": secret}), Absolute),
    ]
}

#[test]
fn every_escape_is_a_typed_refusal_and_nothing_outside_changes() {
    let fx = fixture();
    let before = fx.outside_snapshot();
    let cases = cases(&fx.outside().to_string_lossy());
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut failures = Vec::new();
    for (op, input, expected) in cases {
        let given = input["path"].as_str().unwrap_or_default().to_owned();
        match fx.run(op, input.clone()) {
            Ok(out) => failures.push(format!("{} {input}: ran: {out}", op.name())),
            Err(e) => {
                if refusal(&e) != Some(expected) {
                    failures.push(format!(
                        "{} {input}: expected {expected:?}, got {e:?}",
                        op.name()
                    ));
                }
                // The message names the path (long ones by their start).
                let shown: String = given
                    .split('\0')
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(64)
                    .collect();
                if !given.is_empty() && !e.to_string().contains(&shown) {
                    failures.push(format!(
                        "{} {input}: message {e} does not name it",
                        op.name()
                    ));
                }
                // A refused path is the caller's fault: invalid input, never retried.
                let tool_error = rein_tool::ToolError::from(e);
                if tool_error.is_transient() {
                    failures.push(format!("{}: transient {tool_error}", op.name()));
                }
            }
        }
        assert_eq!(fx.outside_snapshot(), before, "after {} {given}", op.name());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn links_that_stay_inside_are_followed() {
    let fx = fixture();
    let read = |path: &str| fx.run(FsOp::Read, json!({"path": path}));
    assert_eq!(read("inside_link").unwrap()["content"], "alpha\n");
    assert_eq!(read("sub/up/a.txt").unwrap()["content"], "alpha\n");
    let listed = fx.run(FsOp::List, json!({"path": "sub/up/sub"})).unwrap();
    assert!(listed["entries"].to_string().contains("b.txt"));
}

#[test]
fn searches_never_report_content_from_outside() {
    let fx = fixture();
    let out = fx
        .run(FsOp::Grep, json!({"pattern": SECRET, "max_results": 5000}))
        .unwrap();
    assert_eq!(out["matches"], json!([]), "{out}");
    // The hard link is skipped, not read.
    assert!(out["skipped"].to_string().contains("hard"), "{out}");
    let out = fx
        .run(FsOp::Glob, json!({"pattern": "**/secret.txt"}))
        .unwrap();
    assert_eq!(out["paths"], json!([]), "{out}");
}

/// A symbolic link flips between a directory inside and one outside while tools use a
/// path through it: every call either reads inside or refuses; none reads or writes
/// outside.
#[test]
fn a_link_swapped_between_check_and_use_never_leads_out() {
    use std::os::unix::fs::symlink;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let fx = fixture();
    let root = fx.root();
    std::fs::write(root.join("sub/f.txt"), "inside").unwrap();
    std::fs::write(fx.outside().join("f.txt"), SECRET).unwrap();
    symlink("sub", root.join("swap")).unwrap();
    let before = fx.outside_snapshot();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let root = root.clone();
        std::thread::spawn(move || {
            let mut out = false;
            let mut flips = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                let tmp = root.join("swap.tmp");
                let _ = std::fs::remove_file(&tmp);
                symlink(if out { "../outside" } else { "sub" }, &tmp).unwrap();
                std::fs::rename(&tmp, root.join("swap")).unwrap();
                out = !out;
                flips += 1;
            }
            flips
        })
    };
    let (mut inside, mut refused) = (0, 0);
    for i in 0..2000 {
        match fx.run(FsOp::Read, json!({"path": "swap/f.txt"})) {
            Ok(out) => {
                assert_eq!(out["content"], "inside");
                inside += 1;
            }
            Err(e) => {
                assert!(
                    matches!(e, FsError::Path(PathError::Escapes { .. })),
                    "{e:?}"
                );
                refused += 1;
            }
        }
        let _ = fx.run(
            FsOp::Write,
            json!({"path": format!("swap/w{}.txt", i % 4), "content": "x"}),
        );
    }
    stop.store(true, Ordering::Relaxed);
    let flips = swapper.join().unwrap();
    assert_eq!(inside + refused, 2000);
    assert!(flips > 0);
    // Put the link back out of the way and compare: nothing appeared or changed outside.
    std::fs::remove_file(root.join("swap")).unwrap();
    let _ = std::fs::remove_file(root.join("swap.tmp"));
    assert_eq!(fx.outside_snapshot(), before);
}

#[test]
fn check_on_disk_refuses_what_a_tool_would_refuse() {
    let fx = fixture();
    for (path, expected) in [
        ("link_out_dir/new.txt", Refusal::Escapes),
        ("link_out_dir/deep/er/new.txt", Refusal::Escapes),
        ("sub/upup/x", Refusal::Escapes),
        ("proc_root/x", Refusal::Escapes),
        ("../x", Refusal::ParentDir),
        ("/x", Refusal::Absolute),
    ] {
        let e = fx.ws.check_on_disk(path).unwrap_err();
        assert_eq!(refusal(&e), Some(expected), "{path}: {e:?}");
    }
    assert!(fx.ws.check_on_disk("sub/new/deeper.txt").is_ok());
    assert!(fx.ws.check_on_disk("inside_link").is_ok());
}

#[test]
fn open_append_is_confined() {
    use std::io::Write as _;
    let fx = fixture();
    let before = fx.outside_snapshot();
    for (path, expected) in [
        ("link_out_dir/count.log", Refusal::Escapes),
        ("link_out_file", Refusal::Symlink),
        ("hard", Refusal::HardLink),
        ("../count.log", Refusal::ParentDir),
    ] {
        let e = fx.ws.open_append(path).unwrap_err();
        assert_eq!(refusal(&e), Some(expected), "{path}: {e:?}");
    }
    assert_eq!(fx.outside_snapshot(), before);
    let mut file = fx.ws.open_append("counts/a.log").unwrap();
    file.write_all(b"1\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.root().join("counts/a.log")).unwrap(),
        "1\n"
    );
}

//! The file tools' behaviour inside the workspace: line ranges, byte caps, binary files,
//! atomic writes, unique edits with a diff, `.gitignore`-aware searches, annotations.

use rein_tool::{Tool, ToolError};
use rein_tools::{FsError, FsOp, FsTool, Workspace};
use serde_json::{Value, json};

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn alpha() {}\npub fn beta() {}\n",
    )
    .unwrap();
    std::fs::write(root.join("src/deep/x.rs"), "fn gamma() {}\n").unwrap();
    std::fs::write(root.join("target/out.rs"), "fn ignored() {}\n").unwrap();
    std::fs::write(root.join("debug.log"), "fn logged() {}\n").unwrap();
    std::fs::write(root.join("notes.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    std::fs::write(root.join("blob.bin"), b"ab\0cd").unwrap();
    std::fs::write(root.join("latin1.txt"), b"caf\xe9\n").unwrap();
    let ws = Workspace::open(root).unwrap();
    (dir, ws)
}

fn run(ws: &Workspace, op: FsOp, input: Value) -> Result<Value, FsError> {
    FsTool::new(op, ws.clone()).run(input)
}

#[test]
fn read_returns_line_ranges_within_a_byte_cap() {
    let (_dir, ws) = workspace();
    let out = run(
        &ws,
        FsOp::Read,
        json!({"path": "notes.txt", "offset": 2, "limit": 2}),
    )
    .unwrap();
    assert_eq!(out["content"], "two\nthree\n");
    assert_eq!(out["truncated"], true);
    assert_eq!(out["next_offset"], 4);
    let out = run(
        &ws,
        FsOp::Read,
        json!({"path": "notes.txt", "max_bytes": 9}),
    )
    .unwrap();
    assert_eq!(out["content"], "one\ntwo\n");
    assert_eq!(out["next_offset"], 3);
    let out = run(&ws, FsOp::Read, json!({"path": "notes.txt"})).unwrap();
    assert_eq!(out["lines"], 4);
    assert_eq!(out["truncated"], false);
    let e = run(
        &ws,
        FsOp::Read,
        json!({"path": "notes.txt", "max_bytes": 2}),
    )
    .unwrap_err();
    assert!(matches!(e, FsError::LineTooLong { line: 1, .. }), "{e:?}");
}

#[test]
fn binary_and_non_utf8_files_are_refused_by_name() {
    let (_dir, ws) = workspace();
    for path in ["blob.bin", "latin1.txt"] {
        let e = run(&ws, FsOp::Read, json!({"path": path})).unwrap_err();
        assert!(
            matches!(&e, FsError::Binary { path: p } if p == path),
            "{e:?}"
        );
    }
    let e = run(&ws, FsOp::Read, json!({"path": "src"})).unwrap_err();
    assert!(matches!(e, FsError::NotAFile { .. }), "{e:?}");
    let e = run(&ws, FsOp::Read, json!({"path": "missing.txt"})).unwrap_err();
    assert!(matches!(e, FsError::NotFound { .. }), "{e:?}");
}

#[test]
fn a_huge_file_is_read_in_bounded_pieces() {
    let (dir, ws) = workspace();
    // 64 MiB of short lines: the read returns at most max_bytes and says where to go on.
    let line = "0123456789abcdef\n".repeat(1024);
    let mut file = std::fs::File::create(dir.path().join("big.txt")).unwrap();
    for _ in 0..(64 * 1024 * 1024 / line.len()) {
        std::io::Write::write_all(&mut file, line.as_bytes()).unwrap();
    }
    let out = run(
        &ws,
        FsOp::Read,
        json!({"path": "big.txt", "offset": 1000, "max_bytes": 1000}),
    )
    .unwrap();
    assert!(out["bytes"].as_u64().unwrap() <= 1000);
    assert_eq!(out["truncated"], true);
}

#[test]
fn write_is_atomic_and_reports_a_checksum() {
    let (dir, ws) = workspace();
    let out = run(
        &ws,
        FsOp::Write,
        json!({"path": "new/deep/f.txt", "content": "hello"}),
    )
    .unwrap();
    assert_eq!(out["created"], true);
    assert_eq!(
        out["sha256"],
        "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    let out = run(
        &ws,
        FsOp::Write,
        json!({"path": "new/deep/f.txt", "content": "bye"}),
    )
    .unwrap();
    assert_eq!(out["created"], false);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new/deep/f.txt")).unwrap(),
        "bye"
    );
    // No temp file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path().join("new/deep"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["f.txt"]);
}

#[test]
fn edit_replaces_one_unique_string_and_records_a_diff() {
    let (dir, ws) = workspace();
    let out = run(
        &ws,
        FsOp::Edit,
        json!({"path": "src/lib.rs", "old_string": "beta", "new_string": "delta"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        "pub fn alpha() {}\npub fn delta() {}\n"
    );
    let diff = out["diff"].as_str().unwrap();
    assert!(
        diff.contains("--- a/src/lib.rs") && diff.contains("+++ b/src/lib.rs"),
        "{diff}"
    );
    assert!(
        diff.contains("-pub fn beta() {}") && diff.contains("+pub fn delta() {}"),
        "{diff}"
    );
    assert_ne!(out["before_sha256"], out["after_sha256"]);
    for (old, count) in [("pub fn", 2), ("zeta", 0)] {
        let e = run(
            &ws,
            FsOp::Edit,
            json!({"path": "src/lib.rs", "old_string": old, "new_string": "x"}),
        )
        .unwrap_err();
        assert!(
            matches!(e, FsError::NotUnique { count: c, .. } if c == count),
            "{e:?}"
        );
    }
}

#[test]
fn delete_removes_a_file_and_nothing_else() {
    let (dir, ws) = workspace();
    run(&ws, FsOp::Delete, json!({"path": "notes.txt"})).unwrap();
    assert!(!dir.path().join("notes.txt").exists());
    let e = run(&ws, FsOp::Delete, json!({"path": "src"})).unwrap_err();
    assert!(matches!(e, FsError::NotAFile { .. }), "{e:?}");
    assert!(dir.path().join("src/lib.rs").exists());
    let e = run(&ws, FsOp::Delete, json!({"path": "notes.txt"})).unwrap_err();
    assert!(matches!(e, FsError::NotFound { .. }), "{e:?}");
}

#[test]
fn grep_and_glob_respect_gitignore() {
    let (_dir, ws) = workspace();
    let out = run(&ws, FsOp::Grep, json!({"pattern": r"fn \w+\(\)"})).unwrap();
    let found: Vec<_> = out["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}", m["path"].as_str().unwrap(), m["line"]))
        .collect();
    assert_eq!(found, ["src/deep/x.rs:1", "src/lib.rs:1", "src/lib.rs:2"]);
    let out = run(
        &ws,
        FsOp::Grep,
        json!({"pattern": "ALPHA", "case_insensitive": true, "glob": "*.rs"}),
    )
    .unwrap();
    assert_eq!(out["matches"][0]["text"], "pub fn alpha() {}");
    let out = run(&ws, FsOp::Grep, json!({"pattern": "fn", "max_results": 1})).unwrap();
    assert_eq!(out["truncated"], true);
    let out = run(&ws, FsOp::Glob, json!({"pattern": "**/*.rs"})).unwrap();
    assert_eq!(out["paths"], json!(["src/deep/x.rs", "src/lib.rs"]));
    let e = run(&ws, FsOp::Grep, json!({"pattern": "(unclosed"})).unwrap_err();
    assert!(matches!(e, FsError::Pattern { .. }), "{e:?}");
    let e = run(&ws, FsOp::Grep, json!({"pattern": "a{1000}{1000}{1000}"})).unwrap_err();
    assert!(matches!(e, FsError::Pattern { .. }), "{e:?}");
}

#[test]
fn list_names_kinds_and_sizes() {
    let (_dir, ws) = workspace();
    let out = run(&ws, FsOp::List, json!({"path": "src"})).unwrap();
    assert_eq!(
        out["entries"],
        json!([{"name": "deep", "kind": "dir"}, {"name": "lib.rs", "kind": "file", "bytes": 35}])
    );
}

#[test]
fn annotations_are_fixed_by_the_tool() {
    for op in FsOp::ALL {
        let a = op.annotations();
        let readers = matches!(op, FsOp::Read | FsOp::List | FsOp::Glob | FsOp::Grep);
        assert_eq!(a.is_read_only(), readers, "{}", op.name());
        assert_eq!(a.is_destructive(), op == FsOp::Delete, "{}", op.name());
        assert_eq!(FsOp::from_name(op.name()), Some(op));
        let schema = op.input_schema();
        assert_eq!(schema["type"], "object", "{}", op.name());
        assert_eq!(schema["additionalProperties"], false, "{}", op.name());
    }
    assert!(FsOp::Write.annotations().is_idempotent());
    assert!(!FsOp::Edit.annotations().is_idempotent());
}

#[tokio::test]
async fn through_the_tool_port_a_refusal_is_invalid_input() {
    let (_dir, ws) = workspace();
    let tool = FsTool::new(FsOp::Read, ws);
    assert_eq!(tool.spec().name().as_str(), "fs.read");
    let e = tool.call(json!({"path": "../x"})).await.unwrap_err();
    assert!(matches!(e, ToolError::InvalidInput { .. }), "{e:?}");
    let e = tool.call(json!({"path": 3})).await.unwrap_err();
    assert!(matches!(e, ToolError::InvalidInput { .. }), "{e:?}");
    let out = tool
        .call(json!({"path": "notes.txt", "limit": 1}))
        .await
        .unwrap();
    assert_eq!(out.value()["content"], "one\n");
}

//! Property: for random relative paths built from `..`, `.`, names and symbolic links (in
//! and out) in a temp workspace, a file tool either stays inside or refuses; nothing
//! outside the workspace is ever read, created or changed.
#![cfg(unix)]

mod support;

use proptest::prelude::*;
use rein_tools::{FsOp, FsTool};
use serde_json::json;
use support::{SECRET, fixture};

fn component() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(".."),
        Just("."),
        Just("a.txt"),
        Just("sub"),
        Just("new"),
        Just("link_out_dir"),
        Just("link_out_file"),
        Just("abs_dir"),
        Just("proc_root"),
        Just("up"),
        Just("upup"),
        Just("inside_link"),
        Just("secret.txt"),
        Just("outside"),
    ]
}

fn op() -> impl Strategy<Value = FsOp> {
    prop_oneof![
        Just(FsOp::Read),
        Just(FsOp::List),
        Just(FsOp::Grep),
        Just(FsOp::Write),
        Just(FsOp::Edit),
        Just(FsOp::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_tool_stays_inside_or_refuses(
        ops in proptest::collection::vec((op(), proptest::collection::vec(component(), 1..6)), 1..6)
    ) {
        let fx = fixture();
        // Links in `sub/` that lead out are part of the game too.
        std::os::unix::fs::symlink("../../outside", fx.root().join("sub/outside")).unwrap();
        let before = fx.outside_snapshot();
        for (op, parts) in ops {
            let path = parts.join("/");
            let input = match op {
                FsOp::Write => json!({"path": path, "content": "written"}),
                FsOp::Edit => json!({"path": path, "old_string": SECRET, "new_string": "pwned"}),
                FsOp::Grep => json!({"pattern": SECRET, "path": path}),
                _ => json!({"path": path}),
            };
            if let Ok(out) = FsTool::new(op, fx.ws.clone()).run(input) {
                // Whatever ran saw nothing from outside.
                let seen = format!("{}{}", out["content"], out["matches"]);
                prop_assert!(!seen.contains(SECRET), "{} {path}: {out}", op.name());
            }
            prop_assert_eq!(&fx.outside_snapshot(), &before, "{} {}", op.name(), path);
        }
    }
}

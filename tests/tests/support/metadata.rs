//! The workspace as `cargo metadata` describes it, for the tests that read its manifests
//! (layering, the feature floor).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `cargo metadata --format-version 1 --no-deps` in the workspace root.
pub(crate) fn cargo_metadata() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the workspace");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed in {}:\n{}",
        root.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

//! The MCP servers the CLI's MCP tests run: written with the official Python SDK, in the
//! venv `make mcp-servers` installs (a missing install fails and says so).

use std::path::{Path, PathBuf};

/// `rel` under `target/mcp`, asserted to exist.
pub fn installed(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp")
        .join(rel);
    assert!(
        path.exists(),
        "{} is missing: run `make mcp-servers` (it installs the pinned MCP servers under target/mcp)",
        path.display()
    );
    path
}

/// The venv's Python running `script`, with `args`.
fn python(script: &Path, args: &[&str]) -> Vec<String> {
    let mut command = vec![
        installed("venv/bin/python").display().to_string(),
        script.display().to_string(),
    ];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    command
}

/// The notes server's command line (`lookup` read-only, `record` with no hints, `add`).
pub fn notes_server() -> Vec<String> {
    python(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/mcp/tests/servers/notes_server.py"),
        &[],
    )
}

/// The vault server's command line (`digests` of two variables, the `environment` names it
/// got, the `client` that started it), with `args`.
pub fn vault_server(args: &[&str]) -> Vec<String> {
    python(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/env_server.py"),
        args,
    )
}

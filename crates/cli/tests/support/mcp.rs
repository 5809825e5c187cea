//! The MCP servers the CLI's MCP tests run: written with the official Python SDK, in the
//! venv `make mcp-servers` installs (a missing install fails and says so), and a bare HTTP
//! server to stand in for a misbehaving one.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use serde_json::Value;

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

/// A loopback HTTP server, one request per connection, whose answer to each (its method,
/// its JSON body or null) is `answer`'s status and JSON body (a 401 carries a bearer
/// challenge); returns its URL.
pub fn http_server(answer: impl Fn(&str, &Value) -> (u16, Value) + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let method = request_line.split_whitespace().next().unwrap_or_default();
            let (status, reply) = answer(method, &body);
            let reply = if reply.is_null() {
                String::new()
            } else {
                reply.to_string()
            };
            let challenge = if status == 401 {
                "WWW-Authenticate: Bearer realm=\"mcp\"\r\n"
            } else {
                ""
            };
            let _ = reader.get_mut().write_all(
                format!(
                    "HTTP/1.1 {status} X\r\n{challenge}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                )
                .as_bytes(),
            );
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

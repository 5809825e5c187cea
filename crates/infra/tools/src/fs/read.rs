//! `fs.read` and `fs.list`: reading in bounded memory, whatever the file's size.

use std::io::{BufRead, BufReader, Read};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::FsError;
use crate::workspace::single_link;
use crate::{PathError, Workspace};

/// The most `fs.read` returns in one call, whatever `max_bytes` asks.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;

/// The most entries `fs.list` returns.
pub const MAX_LIST_ENTRIES: usize = 2000;

/// How many leading bytes are searched for a NUL to call a file binary.
const SNIFF_BYTES: usize = 8192;

/// The input of `fs.read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadInput {
    /// A path relative to the workspace, without `..`.
    path: String,
    /// The first line to return, 1-based.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    offset: u64,
    /// The most lines to return.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1))]
    limit: u64,
    /// The most bytes to return (at most 1 MiB); the output says where to continue.
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = 1_048_576))]
    max_bytes: u64,
}

const fn one() -> u64 {
    1
}
const fn default_limit() -> u64 {
    2000
}
const fn default_max_bytes() -> u64 {
    256 * 1024
}

/// The input of `fs.list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListInput {
    /// A directory relative to the workspace, without `..` (default: the workspace).
    #[serde(default = "dot")]
    path: String,
}

pub(crate) fn dot() -> String {
    ".".to_owned()
}

pub(crate) fn read(ws: &Workspace, input: &ReadInput) -> Result<Value, FsError> {
    let path = input.path.as_str();
    let rel = ws.check(path)?;
    if rel.as_os_str().is_empty() {
        return Err(PathError::IsRoot {
            path: path.to_owned(),
        }
        .into());
    }
    // Refuse a FIFO or a device before opening it (opening a FIFO would block).
    let meta = ws.dir().metadata(&rel).map_err(|e| FsError::io(path, e))?;
    if !meta.is_file() {
        return Err(FsError::NotAFile {
            path: path.to_owned(),
        });
    }
    let file = ws
        .dir()
        .open(&rel)
        .map_err(|e| FsError::io(path, e))?
        .into_std();
    let meta = file.metadata().map_err(|e| FsError::io(path, e))?;
    if !meta.is_file() {
        return Err(FsError::NotAFile {
            path: path.to_owned(),
        });
    }
    single_link(path, &meta)?;
    let max_bytes = input.max_bytes.clamp(1, MAX_READ_BYTES);
    let offset = input.offset.max(1);
    let limit = input.limit.max(1);
    let io = |e| FsError::io(path, e);
    let binary = || FsError::Binary {
        path: path.to_owned(),
    };

    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(io)?;
    if head[..head.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(binary());
    }
    // Skip to `offset` without holding any line in memory.
    let mut line = 1;
    while line < offset {
        let buf = reader.fill_buf().map_err(io)?;
        if buf.is_empty() {
            break;
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                line += 1;
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
    let mut out = Vec::new();
    let mut lines = 0;
    let mut truncated = false;
    while lines < limit {
        let before = out.len();
        let room = max_bytes - before as u64;
        let n = (&mut reader)
            .take(room + 1)
            .read_until(b'\n', &mut out)
            .map_err(io)?;
        if n == 0 {
            break;
        }
        if out.len() as u64 > max_bytes {
            out.truncate(before);
            truncated = true;
            break;
        }
        lines += 1;
    }
    if lines == 0 && truncated {
        return Err(FsError::LineTooLong {
            path: path.to_owned(),
            line: offset,
            max_bytes,
        });
    }
    if !truncated && lines == limit && !reader.fill_buf().map_err(io)?.is_empty() {
        truncated = true;
    }
    if out.contains(&0) {
        return Err(binary());
    }
    let content = String::from_utf8(out).map_err(|_| binary())?;
    let mut value = json!({
        "path": path,
        "start_line": offset,
        "lines": lines,
        "bytes": content.len(),
        "content": content,
        "truncated": truncated,
    });
    if truncated {
        value["next_offset"] = json!(offset + lines);
    }
    Ok(value)
}

pub(crate) fn list(ws: &Workspace, input: &ListInput) -> Result<Value, FsError> {
    let path = input.path.as_str();
    let rel = ws.check(path)?;
    let rel = if rel.as_os_str().is_empty() {
        std::path::PathBuf::from(".")
    } else {
        rel
    };
    let io = |e| FsError::io(path, e);
    let mut entries = Vec::new();
    for entry in ws.dir().read_dir(&rel).map_err(io)? {
        let entry = entry.map_err(io)?;
        let kind = entry.file_type().map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let item = if kind.is_symlink() {
            json!({"name": name, "kind": "symlink"})
        } else if kind.is_dir() {
            json!({"name": name, "kind": "dir"})
        } else if kind.is_file() {
            let bytes = entry.metadata().map_err(io)?.len();
            json!({"name": name, "kind": "file", "bytes": bytes})
        } else {
            json!({"name": name, "kind": "other"})
        };
        entries.push(item);
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let total = entries.len();
    entries.truncate(MAX_LIST_ENTRIES);
    Ok(json!({
        "path": path,
        "entries": entries,
        "total": total,
        "truncated": total > MAX_LIST_ENTRIES,
    }))
}

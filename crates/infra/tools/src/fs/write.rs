//! `fs.write`, `fs.edit` and `fs.delete`: changes made through a handle on the parent
//! directory, so the last name is never followed; writes are atomic (temp file, fsync,
//! rename within the same directory).

use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::sha256;
use crate::error::FsError;
use crate::workspace::single_link;
use crate::{PathError, Workspace};

/// The largest file `fs.edit` rewrites.
pub const MAX_EDIT_BYTES: u64 = 8 * 1024 * 1024;

/// The input of `fs.write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteInput {
    /// A path relative to the workspace, without `..`.
    path: String,
    /// The file's new content (UTF-8 text).
    content: String,
}

/// The input of `fs.edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditInput {
    /// A path relative to the workspace, without `..`.
    path: String,
    /// The exact text to replace; it must occur exactly once in the file.
    old_string: String,
    /// The text to put in its place.
    new_string: String,
}

/// The input of `fs.delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteInput {
    /// A path relative to the workspace, without `..`.
    path: String,
}

/// What the last name of a path is, seen from its parent without following it.
enum Existing {
    Missing,
    File { bytes: u64 },
}

/// The parent directory of `path` (created when `create`), and the last name.
fn parent(ws: &Workspace, path: &str, create: bool) -> Result<(Dir, std::ffi::OsString), FsError> {
    let rel = ws.check(path)?;
    let (Some(name), Some(parent)) = (rel.file_name(), rel.parent()) else {
        return Err(PathError::IsRoot {
            path: path.to_owned(),
        }
        .into());
    };
    let io = |e| FsError::io(path, e);
    let dir = if parent.as_os_str().is_empty() {
        ws.dir().try_clone().map_err(io)?
    } else {
        // A link out fails to be created over ("exists"); opening it says why.
        if create && let Err(e) = ws.dir().create_dir_all(parent) {
            ws.dir().open_dir(parent).map_err(io)?;
            return Err(io(e));
        }
        ws.dir().open_dir(parent).map_err(io)?
    };
    Ok((dir, name.to_owned()))
}

/// Looks at `name` in `dir` without following it: a symbolic link, a directory or a file
/// with several hard links is refused.
fn existing(dir: &Dir, name: &Path, path: &str) -> Result<Existing, FsError> {
    match dir.symlink_metadata(name) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Existing::Missing),
        Err(e) => Err(FsError::io(path, e)),
        Ok(meta) if meta.file_type().is_symlink() => Err(FsError::Symlink {
            path: path.to_owned(),
        }),
        Ok(meta) if !meta.is_file() => Err(FsError::NotAFile {
            path: path.to_owned(),
        }),
        Ok(meta) => {
            #[cfg(unix)]
            {
                use cap_std::fs::MetadataExt as _;
                if meta.nlink() > 1 {
                    return Err(PathError::HardLink {
                        path: path.to_owned(),
                        links: meta.nlink(),
                    }
                    .into());
                }
            }
            Ok(Existing::File { bytes: meta.len() })
        }
    }
}

/// Writes `content` to `name` in `dir` atomically: a new temp file, fsync, rename.
fn replace(dir: &Dir, name: &Path, content: &[u8], path: &str) -> Result<(), FsError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let io = |e| FsError::io(path, e);
    let tmp = format!(
        ".{}.rein-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    // A name that long would not fit: fall back to a short one.
    let tmp = if tmp.len() > crate::path::MAX_NAME_BYTES {
        format!(
            ".rein-{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        )
    } else {
        tmp
    };
    let result = (|| {
        let mut file = dir.open_with(&tmp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(content)?;
        file.sync_all()?;
        drop(file);
        dir.rename(&tmp, dir, name)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&tmp);
    }
    result.map_err(io)
}

pub(crate) fn write(ws: &Workspace, input: &WriteInput) -> Result<Value, FsError> {
    let path = input.path.as_str();
    let (dir, name) = parent(ws, path, true)?;
    let created = matches!(existing(&dir, name.as_ref(), path)?, Existing::Missing);
    replace(&dir, name.as_ref(), input.content.as_bytes(), path)?;
    Ok(json!({
        "path": path,
        "bytes": input.content.len(),
        "sha256": sha256(input.content.as_bytes()),
        "created": created,
    }))
}

pub(crate) fn edit(ws: &Workspace, input: &EditInput) -> Result<Value, FsError> {
    let path = input.path.as_str();
    if input.old_string.is_empty() {
        return Err(FsError::Input {
            message: "fs.edit: old_string is empty; give the exact text to replace".to_owned(),
        });
    }
    let (dir, name) = parent(ws, path, false)?;
    let name: &Path = name.as_ref();
    match existing(&dir, name, path)? {
        Existing::Missing => {
            return Err(FsError::NotFound {
                path: path.to_owned(),
            });
        }
        Existing::File { bytes } if bytes > MAX_EDIT_BYTES => {
            return Err(FsError::TooLarge {
                path: path.to_owned(),
                operation: "fs.edit",
                bytes,
                limit: MAX_EDIT_BYTES,
            });
        }
        Existing::File { .. } => {}
    }
    let io = |e| FsError::io(path, e);
    let file = dir
        .open_with(name, OpenOptions::new().read(true))
        .map_err(io)?
        .into_std();
    single_link(path, &file.metadata().map_err(io)?)?;
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let before = String::from_utf8(bytes).map_err(|_| FsError::Binary {
        path: path.to_owned(),
    })?;
    let count = before.matches(input.old_string.as_str()).count();
    if count != 1 {
        return Err(FsError::NotUnique {
            path: path.to_owned(),
            count,
        });
    }
    let after = before.replacen(input.old_string.as_str(), &input.new_string, 1);
    replace(&dir, name, after.as_bytes(), path)?;
    let diff = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    Ok(json!({
        "path": path,
        "diff": diff,
        "before_sha256": sha256(before.as_bytes()),
        "after_sha256": sha256(after.as_bytes()),
    }))
}

pub(crate) fn delete(ws: &Workspace, input: &DeleteInput) -> Result<Value, FsError> {
    let path = input.path.as_str();
    let (dir, name) = parent(ws, path, false)?;
    let name: &Path = name.as_ref();
    let Existing::File { bytes } = existing(&dir, name, path)? else {
        return Err(FsError::NotFound {
            path: path.to_owned(),
        });
    };
    dir.remove_file(name).map_err(|e| FsError::io(path, e))?;
    Ok(json!({"path": path, "deleted": true, "bytes": bytes}))
}

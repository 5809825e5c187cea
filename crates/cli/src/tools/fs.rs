//! The built-in file tools `fs.read`, `fs.list` (read-only) and `fs.write` (destructive),
//! confined to a workspace directory: no path, symbolic links included, can leave it.
//!
//! A path is checked twice. Lexically: it must be relative and hold no `..` component.
//! Then on disk: the path (or, for a file about to be written, its deepest existing
//! ancestor) is canonicalized — which resolves every symbolic link — and must still be
//! inside the canonical workspace. A symbolic link whose target does not exist is refused.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rein::tool::Tool;
use rein::{Annotations, ToolError, ToolOutput, ToolSpec, Value, json};

use crate::scenario::Builtin;

/// The largest file `fs.read` returns.
const MAX_READ_BYTES: u64 = 1024 * 1024;

/// A built-in file tool bound to one workspace.
#[derive(Debug)]
pub(crate) struct FsTool {
    spec: ToolSpec,
    kind: Builtin,
    root: Option<Arc<PathBuf>>,
}

impl FsTool {
    /// The tool `kind`, confined to `root` (already canonical). Without a root every call
    /// fails: there is no default workspace.
    pub(crate) fn new(kind: Builtin, root: Option<PathBuf>) -> Self {
        Self {
            spec: spec(kind),
            kind,
            root: root.map(Arc::new),
        }
    }
}

/// The spec of a built-in tool: name, description, annotations and input schema.
pub(crate) fn spec(kind: Builtin) -> ToolSpec {
    let path =
        json!({"type": "string", "description": "a path relative to the workspace, without `..`"});
    let (description, annotations, schema) = match kind {
        Builtin::Read => (
            "Reads a UTF-8 text file of the workspace (at most 1 MiB)",
            Annotations::read_only(),
            json!({"type": "object", "properties": {"path": path}, "required": ["path"], "additionalProperties": false}),
        ),
        Builtin::List => (
            "Lists a directory of the workspace (default: its root)",
            Annotations::read_only(),
            json!({"type": "object", "properties": {"path": path}, "additionalProperties": false}),
        ),
        Builtin::Write => (
            "Writes a UTF-8 text file in the workspace, replacing it if it exists and creating missing directories",
            Annotations::destructive().with_idempotent(true),
            json!({
                "type": "object",
                "properties": {"path": path, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        ),
    };
    // Built-in names are valid tool names.
    let name = kind
        .name()
        .parse()
        .unwrap_or_else(|_| unreachable!("{}", kind.name()));
    ToolSpec::new(name, description)
        .with_annotations(annotations)
        .with_input_schema(schema)
}

/// Checks a path lexically: relative, no `..`, not empty. The checked relative path.
///
/// # Errors
/// What is wrong with it, in words.
pub(crate) fn relative(path: &str) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err("the path is empty; use \".\" for the workspace itself".to_owned());
    }
    let p = Path::new(path);
    let mut clean = PathBuf::new();
    for component in p.components() {
        match component {
            Component::Normal(name) => clean.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "path {path:?} contains `..`; paths stay inside the workspace"
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "path {path:?} is absolute; give a path relative to the workspace"
                ));
            }
        }
    }
    Ok(clean)
}

impl Tool for FsTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let path = match input.get("path") {
            Some(Value::String(path)) => path.clone(),
            None if self.kind == Builtin::List => ".".to_owned(),
            _ => return Err(ToolError::invalid_input("`path` must be a string")),
        };
        let rel = relative(&path).map_err(ToolError::invalid_input)?;
        let Some(root) = self.root.clone() else {
            return Err(ToolError::failed(
                "no workspace is configured; set \"workspace\" in the scenario or pass --workspace",
            ));
        };
        let kind = self.kind;
        let content = input
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_owned);
        tokio::task::spawn_blocking(move || match kind {
            Builtin::Read => read(&root, &rel, &path),
            Builtin::List => list(&root, &rel, &path),
            Builtin::Write => write(&root, &rel, &path, content.as_deref().unwrap_or_default()),
        })
        .await
        .map_err(|e| ToolError::failed(format!("the file operation did not finish: {e}")))?
        .map(ToolOutput::new)
    }
}

fn io_error(path: &str, e: &std::io::Error) -> ToolError {
    ToolError::failed(format!("{path}: {e}"))
}

fn escapes(path: &str) -> ToolError {
    ToolError::invalid_input(format!(
        "path {path:?} leads outside the workspace (through a symbolic link); refused"
    ))
}

/// The canonical path of an existing `rel` under `root`, if it stays inside.
fn existing(root: &Path, rel: &Path, path: &str) -> Result<PathBuf, ToolError> {
    let canonical = root
        .join(rel)
        .canonicalize()
        .map_err(|e| io_error(path, &e))?;
    if !canonical.starts_with(root) {
        return Err(escapes(path));
    }
    Ok(canonical)
}

fn read(root: &Path, rel: &Path, path: &str) -> Result<Value, ToolError> {
    let file = existing(root, rel, path)?;
    let meta = std::fs::metadata(&file).map_err(|e| io_error(path, &e))?;
    if !meta.is_file() {
        return Err(ToolError::failed(format!("{path} is not a file")));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(ToolError::failed(format!(
            "{path} is {} bytes; fs.read returns at most {MAX_READ_BYTES}",
            meta.len()
        )));
    }
    let content = std::fs::read_to_string(&file).map_err(|e| io_error(path, &e))?;
    Ok(json!({"path": path, "bytes": content.len(), "content": content}))
}

fn list(root: &Path, rel: &Path, path: &str) -> Result<Value, ToolError> {
    let dir = existing(root, rel, path)?;
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| io_error(path, &e))? {
        let entry = entry.map_err(|e| io_error(path, &e))?;
        let meta = entry.metadata().map_err(|e| io_error(path, &e))?;
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "dir"
        } else {
            "file"
        };
        let mut item = json!({"name": entry.file_name().to_string_lossy(), "kind": kind});
        if meta.is_file() {
            item["bytes"] = json!(meta.len());
        }
        entries.push(item);
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(json!({"path": path, "entries": entries}))
}

fn write(root: &Path, rel: &Path, path: &str, content: &str) -> Result<Value, ToolError> {
    let Some(name) = rel.file_name() else {
        return Err(ToolError::invalid_input(format!(
            "path {path:?} names the workspace itself, not a file"
        )));
    };
    let target = root.join(rel);
    let file = match std::fs::symlink_metadata(&target) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::failed(format!("{path} is a directory")));
        }
        Ok(meta) if meta.is_symlink() => match target.canonicalize() {
            Ok(resolved) if resolved.starts_with(root) => resolved,
            Ok(_) => return Err(escapes(path)),
            Err(_) => {
                return Err(ToolError::invalid_input(format!(
                    "{path} is a symbolic link whose target does not exist; refused"
                )));
            }
        },
        Ok(_) => existing(root, rel, path)?,
        Err(_) => {
            // Find the deepest ancestor that exists, check it, create the rest.
            let parent = rel.parent().unwrap_or(Path::new(""));
            let mut existing_part = parent.to_path_buf();
            while !existing_part.as_os_str().is_empty()
                && std::fs::symlink_metadata(root.join(&existing_part)).is_err()
            {
                existing_part.pop();
            }
            let base = existing(root, &existing_part, path)?;
            if !base.is_dir() {
                return Err(ToolError::failed(format!(
                    "{path}: {} is not a directory",
                    existing_part.display()
                )));
            }
            let missing = parent.strip_prefix(&existing_part).unwrap_or(Path::new(""));
            let dir = base.join(missing);
            std::fs::create_dir_all(&dir).map_err(|e| io_error(path, &e))?;
            dir.join(name)
        }
    };
    std::fs::write(&file, content).map_err(|e| io_error(path, &e))?;
    Ok(json!({"path": path, "bytes": content.len()}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &FsTool, input: Value) -> Result<Value, ToolError> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(tool.call(input))
            .map(ToolOutput::into_value)
    }

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), "alpha").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn lexical_checks_refuse_absolute_and_parent_paths() {
        assert!(relative("a/b.txt").is_ok());
        assert_eq!(relative("./a").unwrap(), PathBuf::from("a"));
        assert!(relative("/etc/passwd").unwrap_err().contains("absolute"));
        assert!(relative("a/../../b").unwrap_err().contains(".."));
        assert!(relative("").is_err());
    }

    #[test]
    fn read_list_write_inside_the_workspace() {
        let (_dir, root) = workspace();
        let read = FsTool::new(Builtin::Read, Some(root.clone()));
        let list = FsTool::new(Builtin::List, Some(root.clone()));
        let write = FsTool::new(Builtin::Write, Some(root.clone()));
        assert_eq!(
            call(&read, json!({"path": "a.txt"})).unwrap()["content"],
            "alpha"
        );
        let out = call(&write, json!({"path": "new/deep/b.txt", "content": "beta"})).unwrap();
        assert_eq!(out["bytes"], 4);
        assert_eq!(
            std::fs::read_to_string(root.join("new/deep/b.txt")).unwrap(),
            "beta"
        );
        let names: Vec<_> = call(&list, json!({})).unwrap()["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a.txt", "new", "sub"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_cannot_lead_outside() {
        let (dir, root) = workspace();
        let read = FsTool::new(Builtin::Read, Some(root.clone()));
        let write = FsTool::new(Builtin::Write, Some(root.clone()));
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), root.join("dangling")).unwrap();
        std::os::unix::fs::symlink(root.join("a.txt"), root.join("inside.txt")).unwrap();
        for input in [
            json!({"path": "link.txt"}),
            json!({"path": "out/secret.txt"}),
        ] {
            let err = call(&read, input).unwrap_err();
            assert!(err.to_string().contains("outside the workspace"), "{err}");
        }
        for path in ["link.txt", "out/x.txt", "out/new/x.txt", "dangling"] {
            let err = call(&write, json!({"path": path, "content": "x"})).unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidInput { .. }),
                "{path}: {err}"
            );
        }
        assert!(!dir.path().join("x.txt").exists() && !dir.path().join("new").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secret.txt")).unwrap(),
            "secret"
        );
        assert_eq!(
            call(&read, json!({"path": "inside.txt"})).unwrap()["content"],
            "alpha"
        );
        for path in ["../secret.txt", "/etc/passwd"] {
            let err = call(&read, json!({"path": path})).unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidInput { .. }),
                "{path}: {err}"
            );
        }
    }
}

//! The workspace every built-in tool is confined to, and the typed refusals of a path.
//!
//! A path is checked in two steps. Lexically ([`Workspace::check`]): it must be non-empty,
//! relative, free of `..`, NUL bytes and over-long names. Then every file operation resolves
//! it through a directory handle on the workspace root (`cap-std`, `openat2` with
//! `RESOLVE_BENEATH` where the kernel has it): a symbolic link that leads outside — also one
//! swapped in between a check and a use, since there is no separate check — makes the
//! operation fail instead of following it. Regular files with more than one hard link are
//! refused too: their content may be shared with a file outside the workspace.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::FsError;

/// The longest path, in bytes, a tool accepts (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// The longest name of one path component, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

/// A directory that built-in tools are confined to. Cheap to clone.
///
/// ```
/// use rein_tools::{PathError, Workspace};
///
/// let dir = tempfile::tempdir()?;
/// let ws = Workspace::open(dir.path())?;
/// assert_eq!(ws.check("src/./main.rs")?, std::path::Path::new("src/main.rs"));
/// assert!(matches!(ws.check("../etc/passwd"), Err(PathError::ParentDir { .. })));
/// assert!(matches!(ws.check("/etc/passwd"), Err(PathError::Absolute { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Workspace {
    root: Arc<PathBuf>,
    dir: Arc<Dir>,
}

/// Why a workspace could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The root does not exist or cannot be opened as a directory.
    #[error("cannot open the workspace {root}: {source}; check that it is an existing directory")]
    Open {
        /// The root that was given.
        root: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
}

/// Why a path was refused. Every variant names the path as it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    #[error("the path is empty; use \".\" for the workspace itself")]
    Empty,
    /// The path holds a NUL byte.
    #[error("path {path:?} contains a NUL byte; refused")]
    Nul {
        /// The path as given.
        path: String,
    },
    /// The path is absolute.
    #[error("path {path:?} is absolute; give a path relative to the workspace")]
    Absolute {
        /// The path as given.
        path: String,
    },
    /// The path holds a `..` component.
    #[error("path {path:?} contains `..`; paths stay inside the workspace")]
    ParentDir {
        /// The path as given.
        path: String,
    },
    /// The path, or one of its names, is longer than the system allows.
    #[error(
        "path {path:?} is too long (at most {MAX_PATH_BYTES} bytes, {MAX_NAME_BYTES} per name); shorten it"
    )]
    TooLong {
        /// The path as given (cut to its first 64 characters).
        path: String,
    },
    /// Resolving the path led outside the workspace (a symbolic link).
    #[error("path {path:?} leads outside the workspace (through a symbolic link); refused")]
    Escapes {
        /// The path as given.
        path: String,
    },
    /// The path names a regular file with more than one hard link.
    #[error(
        "path {path:?} is a file with {links} hard links; its content may be shared with a file outside the workspace, so it is refused"
    )]
    HardLink {
        /// The path as given.
        path: String,
        /// How many links the file has.
        links: u64,
    },
    /// The path names the workspace itself where a file is needed.
    #[error("path {path:?} names the workspace itself; name a file inside it")]
    IsRoot {
        /// The path as given.
        path: String,
    },
}

impl Workspace {
    /// Opens `root` as a workspace. The root itself may be reached through symbolic links;
    /// nothing under it may lead out.
    ///
    /// # Errors
    /// [`WorkspaceError::Open`] if `root` is not an existing directory.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, WorkspaceError> {
        let root = root.as_ref();
        let open = |source| WorkspaceError::Open {
            root: root.to_path_buf(),
            source,
        };
        let canonical = root.canonicalize().map_err(open)?;
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(open)?;
        Ok(Self {
            root: Arc::new(canonical),
            dir: Arc::new(dir),
        })
    }

    /// The canonical root.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks `path` lexically and returns it cleaned (`.` components dropped; the empty
    /// path stands for the root).
    ///
    /// # Errors
    /// The [`PathError`] that says what is wrong: empty, NUL byte, absolute, `..`, too long.
    pub fn check(&self, path: &str) -> Result<PathBuf, PathError> {
        check(path)
    }

    /// Checks `path` as a tool would before using it: lexically, then on disk — the part
    /// of it that exists is resolved (symbolic links included) and must stay inside. The
    /// rest may be created later. What `rein validate` uses to refuse, at check time, a
    /// path the run would refuse.
    ///
    /// # Errors
    /// The [`FsError`] a tool would give: a [`PathError`] for a path that is refused.
    pub fn check_on_disk(&self, path: &str) -> Result<PathBuf, FsError> {
        let rel = check(path)?;
        let mut existing = rel.clone();
        while !existing.as_os_str().is_empty() && self.dir.symlink_metadata(&existing).is_err() {
            existing.pop();
        }
        if !existing.as_os_str().is_empty() {
            self.dir
                .canonicalize(&existing)
                .map_err(|e| FsError::io(path, e))?;
        }
        Ok(rel)
    }

    /// Opens `path` for appending (created with its missing directories), confined like
    /// every tool's path: for files a tool keeps beside its work, such as a log.
    ///
    /// # Errors
    /// The [`FsError`] that says why the path was refused or could not be opened.
    pub fn open_append(&self, path: &str) -> Result<std::fs::File, FsError> {
        let rel = check(path)?;
        let io = |e| FsError::io(path, e);
        let Some(name) = rel.file_name() else {
            return Err(PathError::IsRoot {
                path: path.to_owned(),
            }
            .into());
        };
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = if parent.as_os_str().is_empty() {
            self.dir.try_clone().map_err(io)?
        } else {
            if let Err(e) = self.dir.create_dir_all(parent) {
                self.dir.open_dir(parent).map_err(io)?;
                return Err(io(e));
            }
            self.dir.open_dir(parent).map_err(io)?
        };
        if dir
            .symlink_metadata(name)
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(FsError::Symlink {
                path: path.to_owned(),
            });
        }
        let file = dir
            .open_with(
                name,
                cap_std::fs::OpenOptions::new().append(true).create(true),
            )
            .map_err(io)?
            .into_std();
        crate::fs::single_link(path, &file.metadata().map_err(io)?)?;
        Ok(file)
    }

    /// The absolute, canonical path of the directory `path` names inside the workspace
    /// (symbolic links that stay inside resolved; one that leads out refused).
    ///
    /// # Errors
    /// The [`FsError`] that says why the path was refused or is not a directory.
    pub fn resolve_dir(&self, path: &str) -> Result<PathBuf, FsError> {
        let rel = check(path)?;
        let rel = if rel.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            rel
        };
        let canonical = self
            .dir
            .canonicalize(&rel)
            .map_err(|e| FsError::io(path, e))?;
        let meta = self
            .dir
            .metadata(&canonical)
            .map_err(|e| FsError::io(path, e))?;
        if !meta.is_dir() {
            return Err(FsError::NotADirectory {
                path: path.to_owned(),
            });
        }
        Ok(self.root.join(canonical))
    }

    /// The directory handle every operation resolves through.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }
}

/// Checks `path` lexically (see [`Workspace::check`]).
///
/// # Errors
/// What is wrong with the path.
pub fn check(path: &str) -> Result<PathBuf, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::Nul {
            path: path.to_owned(),
        });
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong {
            path: path.chars().take(64).collect(),
        });
    }
    let mut clean = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => {
                if name.len() > MAX_NAME_BYTES {
                    return Err(PathError::TooLong {
                        path: path.chars().take(64).collect(),
                    });
                }
                clean.push(name);
            }
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(PathError::ParentDir {
                    path: path.to_owned(),
                });
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Absolute {
                    path: path.to_owned(),
                });
            }
        }
    }
    Ok(clean)
}

/// Whether an I/O error from a confined operation means "this led outside".
pub(crate) fn is_escape(e: &io::Error) -> bool {
    // cap-std reports every escape (`..` past the root, an absolute or outward symbolic
    // link, `EXDEV` from `RESOLVE_BENEATH`) as this one error.
    e.kind() == io::ErrorKind::PermissionDenied
        && e.to_string().contains("outside of the filesystem")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_checks() {
        assert_eq!(check("a/./b").unwrap(), PathBuf::from("a/b"));
        assert_eq!(check(".").unwrap(), PathBuf::new());
        assert_eq!(check(""), Err(PathError::Empty));
        assert!(matches!(check("a\0b"), Err(PathError::Nul { .. })));
        assert!(matches!(check("/a"), Err(PathError::Absolute { .. })));
        assert!(matches!(check("a/../b"), Err(PathError::ParentDir { .. })));
        assert!(matches!(
            check(&"x".repeat(256)),
            Err(PathError::TooLong { .. })
        ));
        assert!(check(&"x".repeat(255)).is_ok());
    }
}

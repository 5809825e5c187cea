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
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::FsError;
use crate::path::{PathError, check_relative_path};

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
        check_relative_path(path)
    }

    /// Checks `path` as a tool would before using it: lexically, then on disk — the part
    /// of it that exists is resolved (symbolic links included) and must stay inside. The
    /// rest may be created later. What `rein validate` uses to refuse, at check time, a
    /// path the run would refuse.
    ///
    /// # Errors
    /// The [`FsError`] a tool would give: a [`PathError`] for a path that is refused.
    pub fn check_on_disk(&self, path: &str) -> Result<PathBuf, FsError> {
        let rel = check_relative_path(path)?;
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
        let rel = check_relative_path(path)?;
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
        single_link(path, &file.metadata().map_err(io)?)?;
        Ok(file)
    }

    /// The absolute, canonical path of the directory `path` names inside the workspace
    /// (symbolic links that stay inside resolved; one that leads out refused).
    ///
    /// # Errors
    /// The [`FsError`] that says why the path was refused or is not a directory.
    pub fn resolve_dir(&self, path: &str) -> Result<PathBuf, FsError> {
        let rel = check_relative_path(path)?;
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

/// Refuses a regular file with more than one hard link.
pub(crate) fn single_link(path: &str, meta: &std::fs::Metadata) -> Result<(), FsError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if meta.is_file() && meta.nlink() > 1 {
            return Err(PathError::HardLink {
                path: path.to_owned(),
                links: meta.nlink(),
            }
            .into());
        }
    }
    #[cfg(not(unix))]
    let _ = (path, meta);
    Ok(())
}

//! The lexical rules every path a built-in tool is given must keep (relative, no `..`, no NUL
//! byte, not too long) and the typed refusal of a path ([`PathError`]). Both the workspace
//! and the file tools build on this module; it depends on neither.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The longest path, in bytes, a tool accepts (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// The longest name of one path component, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

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

/// Checks `path` lexically (see [`Workspace::check`](crate::Workspace::check)).
///
/// # Errors
/// What is wrong with the path.
pub fn check_relative_path(path: &str) -> Result<PathBuf, PathError> {
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
        assert_eq!(check_relative_path("a/./b").unwrap(), PathBuf::from("a/b"));
        assert_eq!(check_relative_path(".").unwrap(), PathBuf::new());
        assert_eq!(check_relative_path(""), Err(PathError::Empty));
        assert!(matches!(
            check_relative_path("a\0b"),
            Err(PathError::Nul { .. })
        ));
        assert!(matches!(
            check_relative_path("/a"),
            Err(PathError::Absolute { .. })
        ));
        assert!(matches!(
            check_relative_path("a/../b"),
            Err(PathError::ParentDir { .. })
        ));
        assert!(matches!(
            check_relative_path(&"x".repeat(256)),
            Err(PathError::TooLong { .. })
        ));
        assert!(check_relative_path(&"x".repeat(255)).is_ok());
    }
}

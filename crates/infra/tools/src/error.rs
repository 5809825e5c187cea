//! `FsError`: every way a file tool refuses or fails, and its mapping onto `ToolError`.

use std::io;

use rein_tool::ToolError;

use crate::path::{PathError, is_escape};

/// Why a file tool refused or failed. Every variant names the path as it was given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// The path was refused (see [`PathError`]).
    #[error(transparent)]
    Path(#[from] PathError),
    /// The input does not fit the tool's schema.
    #[error("{message}")]
    Input {
        /// What was wrong, naming the tool and the field.
        message: String,
    },
    /// Nothing exists at the path.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// The path names something that is not a regular file.
    #[error("{path} is not a regular file")]
    NotAFile {
        /// The path as given.
        path: String,
    },
    /// The path names something that is not a directory.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// The path names a symbolic link where a write or a delete would replace the link
    /// itself.
    #[error("{path} is a symbolic link; name the file it points to instead")]
    Symlink {
        /// The path as given.
        path: String,
    },
    /// The file is not UTF-8 text.
    #[error("{path} is a binary file (a NUL byte or invalid UTF-8); fs tools read text only")]
    Binary {
        /// The path as given.
        path: String,
    },
    /// The file is larger than the operation handles at once.
    #[error("{path} is {bytes} bytes; {operation} handles at most {limit}")]
    TooLarge {
        /// The path as given.
        path: String,
        /// The operation.
        operation: &'static str,
        /// The file's size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// One line is longer than the byte cap.
    #[error("{path}: line {line} alone is longer than max_bytes ({max_bytes}); raise max_bytes")]
    LineTooLong {
        /// The path as given.
        path: String,
        /// The line's number (1-based).
        line: u64,
        /// The cap.
        max_bytes: u64,
    },
    /// `fs.edit`: the text to replace does not occur exactly once.
    #[error(
        "{path}: old_string occurs {count} times; it must occur exactly once (add surrounding lines to make it unique)"
    )]
    NotUnique {
        /// The path as given.
        path: String,
        /// How often it occurs (0: not at all).
        count: usize,
    },
    /// A regular expression or glob that does not compile.
    #[error("invalid pattern {pattern:?}: {message}")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// What the parser said.
        message: String,
    },
    /// The operating system refused.
    #[error("{path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
}

impl FsError {
    /// Maps an error from a confined operation on `path`.
    pub(crate) fn io(path: &str, source: io::Error) -> Self {
        if is_escape(&source) {
            return PathError::Escapes {
                path: path.to_owned(),
            }
            .into();
        }
        match source.kind() {
            io::ErrorKind::NotFound => Self::NotFound {
                path: path.to_owned(),
            },
            io::ErrorKind::NotADirectory => Self::NotADirectory {
                path: path.to_owned(),
            },
            _ => Self::Io {
                path: path.to_owned(),
                source,
            },
        }
    }

    /// Whether the input was at fault (as opposed to the file system).
    #[must_use]
    pub const fn is_refusal(&self) -> bool {
        !matches!(self, Self::Io { .. })
    }
}

impl From<FsError> for ToolError {
    fn from(e: FsError) -> Self {
        match e {
            FsError::Path(_)
            | FsError::Input { .. }
            | FsError::Pattern { .. }
            | FsError::Symlink { .. } => Self::invalid_input(e.to_string()),
            _ => Self::failed(e.to_string()),
        }
    }
}

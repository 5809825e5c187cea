//! `ArtifactError`: every way storing or reading an artifact can fail.

use crate::{ArtifactId, ArtifactIdError, Checksum};

/// Why an [`ArtifactStore`](crate::ArtifactStore) operation failed.
///
/// The domain performs no I/O; [`ArtifactError::Io`] is here so that store adapters can
/// translate their infrastructure errors at the seam and keep the cause as the error's
/// [`source`](std::error::Error::source).
///
/// ```
/// use rein_artifact::{ArtifactError, ArtifactId};
///
/// let err = ArtifactError::NotFound { id: ArtifactId::of(b"gone") };
/// assert!(err.to_string().starts_with("artifact "));
/// assert!(err.to_string().ends_with("not found; check the id, or put the content first"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArtifactError {
    /// No content is stored under the id.
    #[error("artifact {id} not found; check the id, or put the content first")]
    NotFound {
        /// The id looked up.
        id: ArtifactId,
    },
    /// Stored content no longer matches its checksum: it was changed or damaged at rest.
    #[error(
        "artifact {id} failed verification: expected {expected}, got {actual}; the stored \
         content is corrupt, put it again from a good copy"
    )]
    ChecksumMismatch {
        /// The artifact read.
        id: ArtifactId,
        /// The checksum recorded for it.
        expected: Checksum,
        /// The checksum of the bytes actually read.
        actual: Checksum,
    },
    /// The content is larger than the store accepts.
    #[error(
        "artifact of {size} bytes exceeds the store's limit of {limit} bytes; store smaller \
         content or raise the limit"
    )]
    TooLarge {
        /// The content's size in bytes.
        size: u64,
        /// The largest size the store accepts, in bytes.
        limit: u64,
    },
    /// A string given as an artifact id is not one.
    #[error(transparent)]
    InvalidId(#[from] ArtifactIdError),
    /// The store's underlying I/O failed.
    #[error(
        "artifact store i/o failed while {context}; check that the store's location exists \
         and is writable"
    )]
    Io {
        /// What the store was doing, e.g. `writing ab/cdef…`.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The backing service failed (a database, a remote store): what a store that does not
    /// do file I/O reports, with the cause as the source.
    #[error("artifact store failed while {context}: {source}")]
    Backend {
        /// What the store was doing.
        context: String,
        /// The failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// Stored data is damaged in a way other than a checksum mismatch (an unreadable or
    /// inconsistent reference, a size that does not match).
    #[error("artifact {id} is corrupt: {reason}; delete it and put the content again")]
    Corrupt {
        /// The damaged artifact.
        id: ArtifactId,
        /// What is wrong, for people.
        reason: String,
    },
}

impl ArtifactError {
    /// An [`ArtifactError::Io`] saying what the store was doing when `source` happened.
    ///
    /// ```
    /// use std::error::Error as _;
    /// use std::io;
    /// use rein_artifact::ArtifactError;
    ///
    /// let denied = io::Error::from(io::ErrorKind::PermissionDenied);
    /// let err = ArtifactError::io("writing ab/cdef", denied);
    /// assert!(err.to_string().starts_with("artifact store i/o failed while writing ab/cdef"));
    /// assert!(err.source().is_some());
    /// ```
    #[must_use]
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }

    /// A short, stable name for the kind of error, for logs and ledger entries.
    ///
    /// ```
    /// use rein_artifact::ArtifactError;
    /// assert_eq!(ArtifactError::TooLarge { size: 2, limit: 1 }.kind(), "too_large");
    /// ```
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::ChecksumMismatch { .. } => "checksum_mismatch",
            Self::TooLarge { .. } => "too_large",
            Self::InvalidId(_) => "invalid_id",
            Self::Io { .. } => "io",
            Self::Backend { .. } => "backend",
            Self::Corrupt { .. } => "corrupt",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn messages_say_what_happened_and_what_to_do() {
        let id = ArtifactId::of(b"abc");
        let hex = id.to_string();
        for (err, kind, message) in [
            (
                ArtifactError::NotFound { id: id.clone() },
                "not_found",
                format!("artifact {hex} not found; check the id, or put the content first"),
            ),
            (
                ArtifactError::ChecksumMismatch {
                    id: id.clone(),
                    expected: Checksum::of(b"abc"),
                    actual: Checksum::of(b"abd"),
                },
                "checksum_mismatch",
                format!(
                    "artifact {hex} failed verification: expected sha256:{hex}, got {}; the \
                     stored content is corrupt, put it again from a good copy",
                    Checksum::of(b"abd")
                ),
            ),
            (
                ArtifactError::TooLarge {
                    size: 2048,
                    limit: 1024,
                },
                "too_large",
                "artifact of 2048 bytes exceeds the store's limit of 1024 bytes; store smaller \
                 content or raise the limit"
                    .to_owned(),
            ),
            (
                ArtifactError::Corrupt {
                    id,
                    reason: "truncated".into(),
                },
                "corrupt",
                format!(
                    "artifact {hex} is corrupt: truncated; delete it and put the content again"
                ),
            ),
        ] {
            assert_eq!(err.kind(), kind);
            assert_eq!(err.to_string(), message);
        }
    }

    #[test]
    fn invalid_id_is_transparent() {
        let err = ArtifactError::from("../x".parse::<ArtifactId>().unwrap_err());
        assert_eq!(err.kind(), "invalid_id");
        assert!(
            err.to_string().starts_with("invalid artifact id \"../x\""),
            "{err}"
        );
    }

    #[test]
    fn io_keeps_its_source() {
        let err = ArtifactError::io("renaming a temp file", std::io::Error::other("disk full"));
        assert_eq!(err.kind(), "io");
        assert_eq!(err.source().unwrap().to_string(), "disk full");
        assert!(
            !err.to_string().contains("disk full"),
            "the source is not repeated: {err}"
        );
    }
}

//! `StorageError`: why a filesystem store could not be opened.

use std::path::PathBuf;

/// Why [`FsStores::open`](crate::FsStores::open) failed.
///
/// Operations on an opened store fail with the error type of the port they implement
/// ([`RunStoreError`](rein_run::RunStoreError), [`ArtifactError`](rein_artifact::ArtifactError),
/// `LedgerStoreError`); this type covers setting the stores up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// A directory of the store could not be created or inspected.
    #[error(
        "cannot open the store directory {path}; check that it is writable and on a local \
         filesystem"
    )]
    Io {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A path where the store needs a directory holds something else.
    #[error("{path} is not a directory but {found}; move it away or choose another root")]
    NotADirectory {
        /// The path.
        path: PathBuf,
        /// What is there instead, for people (`a symbolic link`, `a file`).
        found: &'static str,
    },
}

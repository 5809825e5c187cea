//! rein's artifact domain: content-addressed artifact references, checksums and the
//! `ArtifactStore` port.
//!
//! Large tool outputs do not belong in a run's evidence or ledger. The engine puts them in an
//! [`ArtifactStore`] and keeps an [`ArtifactRef`]: the content's [`ArtifactId`] (its SHA-256,
//! as 64 lowercase hex digits), name, size, content type, [`Checksum`] (`sha256:<hex>`) and
//! metadata. Reading the content back verifies it against the checksum, every time.
//!
//! ```
//! use rein_artifact::{ArtifactId, ArtifactRef, Checksum, StoreOptions};
//!
//! let output = br#"{"rows": [1, 2, 3]}"#;
//! let reference = ArtifactRef::for_content(
//!     output,
//!     StoreOptions::new().with_name("rows.json").with_content_type("application/json"),
//! );
//! assert_eq!(reference.id(), &ArtifactId::of(output));
//! assert_eq!(reference.checksum(), &Checksum::of(output));
//! assert_eq!(reference.id().checksum(), *reference.checksum()); // one digest, two forms
//!
//! // An id is hex digits only, so it can never name a path outside a store's root.
//! assert!("../../etc/passwd".parse::<ArtifactId>().is_err());
//! let (folder, file) = reference.id().shard(); // `<root>/<folder>/<file>`
//! assert_eq!(folder.len() + file.len(), 64);
//! ```
//!
//! This crate is pure: no I/O, no clocks, no runtime. Store adapters live in infrastructure
//! and implement [`ArtifactStore`]; the engine holds them behind the object-safe
//! [`DynArtifactStore`] twin, implemented for every store.

mod checksum;
mod digest;
mod error;
mod id;
mod options;
mod port;
mod reference;

pub use checksum::{Checksum, ChecksumError, ChecksumMismatch, ChecksumProblem};
pub use digest::DigestProblem;
pub use error::ArtifactError;
pub use id::{ArtifactId, ArtifactIdError};
pub use options::StoreOptions;
pub use port::{ArtifactStore, BoxFuture, DynArtifactStore, SharedArtifactStore};
pub use reference::ArtifactRef;

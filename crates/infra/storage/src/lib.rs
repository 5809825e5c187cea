//! rein's stores: where runs, ledgers and artifacts are kept, and where tools are found.
//!
//! This crate implements the storage ports of the domain crates —
//! [`RunStore`](rein_run::RunStore), [`LedgerStore`](rein_ledger::LedgerStore),
//! [`ArtifactStore`](rein_artifact::ArtifactStore) and [`Registry`](rein_tool::Registry) —
//! twice:
//!
//! - **In memory** ([`MemoryRunStore`], [`MemoryLedgerStore`], [`MemoryArtifactStore`],
//!   [`MemoryRegistry`]): the default. Per-run data sits behind short-held, sharded locks;
//!   the registry is built once by a [`RegistryBuilder`] and read without any lock.
//! - **On disk** ([`FsStores`]: [`FsRunStore`], [`FsLedgerStore`], [`FsArtifactStore`]),
//!   under one root directory: run snapshots replaced atomically, ledgers as append-only
//!   JSONL with torn-tail recovery, artifacts content-addressed by SHA-256 and verified on
//!   every read. How hard it pushes bytes to disk is an [`FsyncPolicy`].
//!
//! Both keep the same contracts and pass the same behavioural tests. Nothing here panics
//! on what it reads back: damaged data is a typed error that names the file (and, for a
//! ledger, the line or entry).
//!
//! ```
//! use rein_artifact::{ArtifactStore, StoreOptions};
//! use rein_ledger::{EntryKind, Ledger, LedgerStore};
//! use rein_run::{Run, RunStore, State, Timestamp};
//! use rein_storage::FsStores;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = tempfile::tempdir()?;
//! let stores = FsStores::open(root.path())?; // creates runs/, ledgers/, artifacts/
//! let now = Timestamp::from_unix_millis(1_700_000_000_000);
//!
//! // A run snapshot, replaced atomically on every save.
//! let run = Run::new("run-1".parse()?, "Say hello", Default::default(), serde_json::json!({}), now);
//! stores.runs().save(&run).await?;
//! assert_eq!(stores.runs().load(run.id()).await?, run);
//!
//! // Its ledger: appended entry by entry, synced at the step boundary, verified on load.
//! let mut ledger = Ledger::new(run.id().clone());
//! let entry = ledger.append(now, State::Intake, EntryKind::Steering { note: "hi".into() });
//! stores.ledgers().append(entry).await?;
//! stores.ledgers().sync(run.id()).await?;
//! assert_eq!(stores.ledgers().load(run.id()).await?.ledger, ledger);
//!
//! // A large output, stored once by content and checked on every read.
//! let reference = stores.artifacts().put(vec![7; 100_000], StoreOptions::new()).await?;
//! let (_, bytes) = stores.artifacts().get(reference.id()).await?;
//! assert_eq!(bytes.len(), 100_000);
//! # Ok(())
//! # }
//! ```
//!
//! Filesystem work runs on tokio's blocking pool, one hop per store operation, so it never
//! stalls the async executor; called outside a tokio runtime, the stores do the work
//! inline instead.

mod blocking;
mod error;
mod fs;
mod memory;
mod tip;

pub use error::StorageError;
pub use fs::{
    FileStamp, FsArtifactStore, FsConfig, FsLayout, FsLedgerStore, FsRunIndex, FsRunStore,
    FsStopRequests, FsStores, FsyncPolicy, IndexedRun, Refreshed, RunIndexError, Stamp,
};
pub use memory::{
    MemoryArtifactStore, MemoryLedgerStore, MemoryRegistry, MemoryRunStore, MemoryStopRequests,
    RegistryBuilder,
};

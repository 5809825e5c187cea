//! The in-memory stores and the tool registry: the defaults, cheap and concurrent.

mod artifact;
mod ledger;
mod registry;
mod run;
pub(crate) mod shard;
mod stop;

pub use artifact::MemoryArtifactStore;
pub use ledger::MemoryLedgerStore;
pub use registry::{MemoryRegistry, RegistryBuilder};
pub use run::MemoryRunStore;
pub use stop::MemoryStopRequests;

//! rein's `PostgreSQL` stores: run snapshots, ledgers and artifacts in one database, shared
//! by many engine processes on many machines, with run leases and fencing tokens.
//!
//! [`PgStores::connect`] opens a connection pool and brings the schema to this rein's
//! version ([`SCHEMA_VERSION`]; migrations are applied in one transaction under an advisory
//! lock, and a newer schema is refused). It implements the storage ports of the domain
//! crates with the same contracts as the memory and filesystem stores (the same contract
//! suite runs against all three):
//!
//! - [`PgRunStore`]: [`RunStore`](rein_run::RunStore), one row per run, with the columns a
//!   listing filters, orders and counts by ([`PgRunStore::page`]).
//! - [`PgLedgerStore`]: [`LedgerStore`](rein_ledger::LedgerStore), one row per entry keyed
//!   `(run_id, seq)`, its JSON line stored byte for byte, exportable to and importable from
//!   the JSONL file format. A step's entries are committed together, in one statement, when
//!   the engine syncs the run ([`CommitPolicy::EveryStep`], the default), or each on its own
//!   ([`CommitPolicy::EveryEntry`]).
//! - [`PgArtifactStore`]: [`ArtifactStore`](rein_artifact::ArtifactStore), content-addressed
//!   `bytea` up to a configured size.
//! - [`PgStopRequests`]: [`StopRequestStore`](rein_run::StopRequestStore), an operator's
//!   abort or interrupt of a run, one row per run, asked from any machine.
//!
//! **Leases.** A process that drives a run takes its [`Lease`] first
//! ([`PgStores::acquire_lease`]): an owner, an expiry by the database's `now()`, and a
//! fencing token that grows on every takeover. While it holds the lease, every ledger
//! write and snapshot save for the run checks the token in the same statement; once
//! another process took the run over, they fail with
//! [`Fenced`](rein_run::Fenced) and write nothing. A [`LeaseKeeper`]
//! ([`PgStores::keep_lease`]) renews a lease in the background and says when it was lost.
//!
//! **A queue for workers.** [`PgStores::enqueue`] queues a run, [`PgStores::claim`] takes
//! the oldest queued run whose lease is free or expired together with its lease
//! (`FOR UPDATE SKIP LOCKED`), and [`PgStores::dequeue`] takes it off once it ended or waits
//! for a person; idle workers wake on `LISTEN/NOTIFY` ([`PgStores::listen_queue`]) and poll
//! as well. The configuration a run was started from is kept beside it
//! ([`PgStores::save_run_config`]) so any worker can rebuild its engine.
//!
//! **TLS.** Connections over TCP use TLS as libpq's `sslmode` and `sslrootcert` in the URL
//! say ([`SslMode`]; `prefer` by default), through rustls with the aws-lc-rs provider;
//! `verify-full` verifies the server's certificate chain and host name.
//!
//! The password in the URL never reaches a log line, an error or `Debug` output.

mod append;
mod artifact;
mod config;
mod error;
mod failure;
mod keeper;
mod lease;
mod ledger;
mod listing;
mod pending;
mod prepared;
mod queue;
mod release;
mod run;
mod schema;
mod sslmode;
mod stop;
mod stores;
mod tls;
mod trust;

pub use artifact::PgArtifactStore;
pub use config::{CommitPolicy, PgConfig};
pub use error::PgError;
pub use keeper::LeaseKeeper;
pub use lease::Lease;
pub use ledger::PgLedgerStore;
pub use listing::{RunFilter, RunOrder, RunPage};
pub use queue::{QueueWakeups, RunConfig};
pub use run::PgRunStore;
pub use schema::SCHEMA_VERSION;
pub use sslmode::SslMode;
pub use stop::PgStopRequests;
pub use stores::PgStores;

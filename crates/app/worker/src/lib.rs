//! rein's worker: claims queued runs from a `PostgreSQL` store under a lease and drives
//! them, on as many machines as share the database.
//!
//! A run is queued by [`submit`] (the engine records it, the store queues it); a
//! [`Worker`] claims the oldest queued run whose lease is free or expired
//! (`FOR UPDATE SKIP LOCKED`, the lease taken in the same statement), rebuilds its engine
//! through [`Engines`] (the application decides how: the `rein` command from the scenario
//! stored with the run), resumes it by the ledger-first rules, renews the lease while it
//! drives, and takes it off the queue when it ended or waits for a person. Idle workers
//! wake on `LISTEN/NOTIFY` and poll as well.
//!
//! - A worker that dies loses its lease when it expires by the database's clock; another
//!   claims the run and resumes it (a call in doubt follows the in-doubt rule, so a
//!   non-idempotent call never runs twice). The dead worker's late writes are fenced out.
//! - On shutdown ([`Worker::run`]'s token) a worker claims nothing new, stops each of its
//!   runs (a tool call in progress finishes and is recorded), releases their leases and
//!   leaves them queued for another worker.
//! - A run whose engine cannot be built (a tool this worker does not have) is left leased
//!   until its lease expires, so a worker that has the tool can take it; the worker goes on
//!   serving its other runs.

mod drive;
mod worker;

/// The token that tells [`Worker::run`] to shut down.
pub use tokio_util::sync::CancellationToken;

pub use drive::{Driven, Outcome};
pub use worker::{
    BoxError, Engines, OpenFuture, Opened, Worker, WorkerError, WorkerOptions, WorkerReport, submit,
};

//! `rein submit` and `rein worker`: runs queued in a PostgreSQL store, and the processes
//! that drive them.

use std::path::PathBuf;

use clap::Args;

use super::StoreArg;

pub(crate) const SUBMIT_AFTER: &str = "\
Examples:
  rein submit examples/scenarios/happy-path.json --store postgres://rein:PASSWORD@db/rein
  REIN_STORE=postgres://rein:PASSWORD@db/rein rein submit my-scenario.json

The run is recorded (its first ledger entry, its policy) and queued; its scenario is stored
with it, every secret redacted. Scripted \"answers\" are not given by a worker: a run that
asks a human pauses, and `rein resume RUN_ID --input ANSWER --store URL` answers it.

Exit codes:
  0    the run is queued (its id is printed)
  1    rein could not go on (the database failed)
  2    bad input: a scenario file, a store URL";

pub(crate) const WORKER_AFTER: &str = "\
Examples:
  rein worker --store postgres://rein:PASSWORD@db/rein --concurrency 4
  REIN_STORE=postgres://rein:PASSWORD@db/rein rein worker --name worker-1

A worker claims the oldest queued run whose lease is free or expired (FOR UPDATE SKIP
LOCKED), rebuilds its engine from the scenario stored with it (its tools from this
machine's configuration and environment), and drives it under its lease, renewed every
third of --lease-ttl. It wakes on LISTEN/NOTIFY and polls every --poll seconds as well.
A run that ends, or waits for a person, leaves the queue. A worker that dies leaves its
runs to the others once their leases expire by the database's clock; a call that was in
progress is in doubt, and is retried only if its tool is idempotent.

SIGTERM or Ctrl-C: claim nothing more; a tool call in progress finishes and is recorded;
each run is left interrupted, its lease released, still queued for the next worker.

Exit codes:
  0    the worker stopped on a signal
  1    rein could not go on (the database failed)
  2    bad input: a store URL, an option";

/// `rein submit`.
#[derive(Debug, Args)]
pub(crate) struct SubmitArgs {
    /// The scenario file (JSON).
    #[arg(value_name = "SCENARIO")]
    pub(crate) scenario: PathBuf,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Confine the file tools to DIR instead of the scenario's "workspace" (on every
    /// worker: the path is stored with the run).
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
}

/// `rein worker`.
#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// How many runs this worker drives at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub(crate) concurrency: usize,
    /// The name this worker's leases carry (default rein@HOST:PID); unique per process.
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,
    /// A lease's time to live in seconds, by the database's clock: a dead worker's runs
    /// are taken over this long after its last renewal.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub(crate) lease_ttl: f64,
    /// How often an idle worker looks for runs, in seconds, besides waking on NOTIFY.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub(crate) poll: f64,
}

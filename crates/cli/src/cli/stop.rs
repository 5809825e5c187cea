//! The arguments of `rein abort` and `rein interrupt`; what they do is in the `stop`
//! command.

use clap::Args;

use super::{DataDirArg, StoreArg};

pub(super) const ABORT_AFTER: &str = "\
Examples:
  rein abort 0193c6a2-... --reason 'runaway loop'
  rein abort 0193c6a2-... --reason 'wrong goal' --by alice --store postgres://rein@db/rein

The request is stored where the run is kept (DATA_DIR/stops/, or the --store database). The
process driving the run (rein run, rein resume, a rein worker on any machine) honours it at
its next step: calls in flight are dropped and the run fails as aborted. A run nobody drives
honours it when it is next resumed. The ledger records stop_requested with --by and --reason.
A later interrupt never softens a waiting abort.

Exit codes:
  0    the request is stored
  1    rein could not go on (a store error, ...)
  2    bad input: no such run, a finished run, a missing data directory";

pub(super) const INTERRUPT_AFTER: &str = "\
Examples:
  rein interrupt 0193c6a2-... --reason 'pause for the night'
  rein interrupt 0193c6a2-... --reason 'maintenance' --by bob --store postgres://rein@db/rein

The request is stored where the run is kept (DATA_DIR/stops/, or the --store database). The
process driving the run honours it at its next step: nothing new starts, a call in progress
finishes and is recorded, and the run is left interrupted; `rein resume RUN_ID` continues it.
A run nobody drives honours it when it is next resumed. The ledger records stop_requested
with --by and --reason.

Exit codes:
  0    the request is stored
  1    rein could not go on (a store error, ...)
  2    bad input: no such run, a finished run, a missing data directory";

/// `rein abort` and `rein interrupt`.
#[derive(Debug, Args)]
pub(crate) struct StopArgs {
    /// The run to stop.
    #[arg(value_name = "RUN_ID")]
    pub(crate) run_id: String,
    /// Why (recorded in the ledger).
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: String,
    /// Who asks (recorded in the ledger); default: the user running rein ($USER).
    #[arg(long, value_name = "NAME")]
    pub(crate) by: Option<String>,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

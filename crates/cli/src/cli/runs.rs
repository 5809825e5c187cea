//! The arguments of `rein runs …` (`list`, `prune`); what they do is in the `runs` and
//! `prune` commands.

use clap::{Args, Subcommand, ValueEnum};

use super::{DataDirArg, StoreArg};

/// `rein runs …`.
#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// The runs in the data directory, oldest first, with status and age; a child run is
    /// listed under the run that delegated to it, indented. Read through the run index
    /// (DIR/index.jsonl): only runs whose files changed since the last listing are read.
    #[command(after_help = RUNS_LIST_AFTER)]
    List(RunsListArgs),
    /// Removes finished runs (completed or failed, with their child runs), their ledgers,
    /// snapshots and stored scenarios, and the artifacts no remaining run refers to. Never
    /// a running, paused, interrupted or waiting run, nor one whose ledger does not verify.
    #[command(after_help = RUNS_PRUNE_AFTER)]
    Prune(RunsPruneArgs),
}

const RUNS_LIST_AFTER: &str = "\
Examples:
  rein runs list
  rein runs list --status paused --data-dir /tmp/rein
  rein runs list --limit 50 --offset 100
  rein runs list --store postgres://rein@db/rein

A run whose snapshot is missing, unreadable or behind its ledger is listed from its ledger
(the source of truth) and named in a note below the table.";

const RUNS_PRUNE_AFTER: &str = "\
Examples:
  rein runs prune --older-than 30d
  rein runs prune --older-than 12h --status failed --dry-run

Exit codes:
  0    pruned (or nothing to prune); each removed run is listed
  1    rein could not go on (a file could not be removed: what was removed is listed)
  2    bad input: a malformed duration or status, or a data directory that does not exist";

/// `rein runs list`.
#[derive(Debug, Args)]
pub(crate) struct RunsListArgs {
    /// Only runs with this status.
    #[arg(long, value_name = "STATUS")]
    pub(crate) status: Option<ListedStatus>,
    /// At most this many rows (runs and their children, in listing order).
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    /// Skip this many rows first.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) offset: usize,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

/// `rein runs prune`.
#[derive(Debug, Args)]
pub(crate) struct RunsPruneArgs {
    /// Prune runs whose last entry is older than this: a number and a unit, s, m, h or d
    /// (`90m`, `12h`, `30d`).
    #[arg(long, value_name = "DURATION", value_parser = crate::text::parse_age)]
    pub(crate) older_than: std::time::Duration,
    /// Only runs that ended this way.
    #[arg(long, value_name = "STATUS")]
    pub(crate) status: Option<PrunedStatus>,
    /// List what would be removed, and remove nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
}

/// A status `rein runs list --status` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ListedStatus {
    /// Being driven, or stopped by a crash (resumable).
    Running,
    /// Waiting for a human's answer.
    Paused,
    /// Waiting for a verdict on a durable approval.
    WaitingApproval,
    /// Stopped by an interrupt (resumable).
    Interrupted,
    /// Ended done.
    Completed,
    /// Ended failed.
    Failed,
    /// Its ledger does not verify.
    Broken,
    /// Its ledger cannot be read.
    Unreadable,
}

/// A finished status `rein runs prune --status` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PrunedStatus {
    /// Ended done.
    Completed,
    /// Ended failed.
    Failed,
}

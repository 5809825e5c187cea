//! The arguments of `rein serve`; what it does is in the `serve` command.

use std::path::PathBuf;

use clap::Args;

use super::{DataDirArg, StoreArg};

pub(super) const SERVE_AFTER: &str = "\
Examples:
  rein serve
  rein serve --data-dir /tmp/rein --addr 127.0.0.1:8080 --read-only
  rein serve --addr 0.0.0.0:7077 --tokens operators.txt
  REIN_STORE=postgres://rein@db/rein rein serve

Exit codes:
  0    the server stopped (Ctrl-C)
  1    the address cannot be bound, the store cannot be reached, or serving failed
  2    bad input: no data directory, a malformed store URL or tokens file, or an address
       that is not loopback without --tokens";

/// `rein serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// The address to serve on. An address that is not loopback needs --tokens.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:7077")]
    pub(crate) addr: std::net::SocketAddr,
    /// Refuse every change on the server: pages only.
    #[arg(long)]
    pub(crate) read_only: bool,
    /// The operators' tokens file (created with a new token when missing).
    #[arg(long, value_name = "FILE")]
    pub(crate) tokens: Option<PathBuf>,
}

//! `rein`: the command line of the rein runtime. It runs scenario files (a goal, policies,
//! tools and a scripted planner) with filesystem stores, and verifies, shows and draws the
//! ledgers they leave. See `rein --help`, the README and `docs/SCENARIOS.md`.
//!
//! The CLI depends on the facade crate `rein` only (the layering test checks it).

// A command line prints to stdout: that is its job.
#![allow(clippy::print_stdout)]

mod approver;
mod cli;
mod commands;
mod datadir;
mod exit;
mod inspect;
mod ledger_file;
mod locate;
mod render;
mod scenario;
mod tools;

use std::process::ExitCode;

use clap::Parser as _;

use crate::exit::Exit;

fn main() -> ExitCode {
    quiet_fixture_panics();
    let cli = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Failed.into();
        }
    };
    match runtime.block_on(commands::dispatch(cli.command)) {
        Ok(exit) => exit.into(),
        Err(e) => {
            eprintln!("error: {e}");
            e.exit.into()
        }
    }
}

/// Fixture tools that panic on purpose do so to show that a panic becomes a typed tool
/// error in the ledger; the default hook's backtrace note would only alarm. Every other
/// panic still goes to the default hook.
fn quiet_fixture_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let on_purpose = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m.starts_with(tools::PANIC_PREFIX));
        if !on_purpose {
            default(info);
        }
    }));
}

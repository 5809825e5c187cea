//! The library behind `rein`, the command line of the rein runtime. The command runs
//! scenario files (a goal, policies, tools and a scripted planner) with filesystem stores,
//! and verifies, shows and draws the ledgers they leave. See `rein --help`, the README and
//! `docs/SCENARIOS.md`.
//!
//! The library exists so the command's parsers can be reached without a process: the fuzz
//! target `scenario` and the corpus replay feed [`check_scenario`] arbitrary text. The binary
//! is [`main`] and nothing else.
//!
//! ```
//! let text = r#"{
//!   "goal": "say hello",
//!   "planner": {"scripted": [
//!     {"decision": {"type": "transition", "to": "explore"}},
//!     {"decision": {"type": "finish", "summary": "done"}}
//!   ]}
//! }"#;
//! let warnings = rein_cli::check_scenario(text, std::path::Path::new("."))?;
//! assert!(warnings.is_empty());
//!
//! let error = rein_cli::check_scenario(r#"{"goal": 7}"#, std::path::Path::new(".")).unwrap_err();
//! assert_eq!(error.json_path().as_deref(), Some("goal"));
//! # Ok::<(), rein_cli::ScenarioError>(())
//! ```
//!
//! The CLI depends on the facade crate `rein` only (the layering test checks it).

// A command line prints to stdout: that is its job.
#![allow(clippy::print_stdout)]

#[macro_use]
mod output;

mod cli;
mod commands;
mod conversation;
mod datadir;
mod elicit;
mod exit;
mod home;
mod inspect;
mod ledger_file;
mod ledger_stream;
mod locate;
mod prune;
mod render;
mod run_index;
mod scenario;
mod telemetry;
mod text;
mod tree;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser as _;

use crate::exit::Exit;
pub use crate::scenario::ScenarioError;

/// Checks a scenario file's `text` as `rein validate` does — parse, field rules, paths, then
/// building the engine, whose refusals point back into the text — and returns the warnings
/// `rein validate` would print. Nothing is written; `dir` is where relative paths in the file
/// (its `workspace`) are resolved, as the file's own directory would be.
///
/// # Errors
/// [`ScenarioError`] for the first problem, with its line, column and JSON path where known.
pub fn check_scenario(text: &str, dir: &Path) -> Result<Vec<String>, ScenarioError> {
    let loaded = scenario::parse("scenario".to_owned(), text.to_owned(), dir.to_path_buf())?;
    let checked = scenario::check(&loaded, &scenario::Setup::default())?;
    Ok(checked.warnings)
}

/// Runs the `rein` command with the process's arguments and returns its exit code: what the
/// binary's `main` is.
#[must_use]
pub fn main() -> ExitCode {
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
    // Started inside the runtime, before any command: a bad endpoint stops here.
    let telemetry = match runtime.block_on(async { telemetry::start(cli.otlp.as_deref()) }) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("error: {e}");
            return e.exit.into();
        }
    };
    let exit = match runtime.block_on(commands::dispatch(cli.command)) {
        Ok(exit) => exit,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit
        }
    };
    telemetry::finish(telemetry);
    match output::failure() {
        Some(why) if exit == Exit::Ok => {
            eprintln!("error: cannot write to standard output: {why}");
            Exit::Failed.into()
        }
        _ => exit.into(),
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
            .is_some_and(|m| m.starts_with(scenario::PANIC_PREFIX));
        if !on_purpose {
            default(info);
        }
    }));
}

//! Exit codes and the error type every command returns: a message for people and the code
//! that tells scripts what happened.

use std::fmt;
use std::process::ExitCode;

/// How `rein` exits. Documented in `rein --help` and the README; scripts rely on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The command did what was asked; a run completed.
    Ok,
    /// A run failed (or rein itself could not go on: a store error, …).
    Failed,
    /// Bad input: a scenario file, an argument, a run id, a data directory.
    BadInput,
    /// A run is paused waiting for a human's answer.
    Paused,
    /// A ledger failed verification.
    LedgerBroken,
    /// Interrupted with Ctrl-C: the run is left interrupted and `rein resume` continues it
    /// (after a second Ctrl-C, it failed as aborted instead).
    Interrupted,
}

impl Exit {
    /// The process exit code.
    pub(crate) const fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Failed => 1,
            Self::BadInput => 2,
            Self::Paused => 3,
            Self::LedgerBroken => 4,
            Self::Interrupted => 130,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit.code())
    }
}

/// A command that could not do what was asked: what to print and how to exit.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) exit: Exit,
    pub(crate) message: String,
}

impl CliError {
    /// Bad input (exit 2).
    pub(crate) fn bad_input(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::BadInput,
            message: message.into(),
        }
    }

    /// An error with its own exit code.
    pub(crate) fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self {
            exit,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<anyhow::Error> for CliError {
    /// Anything unexpected (a store failing, a write refused): exit 1 with the whole chain.
    fn from(e: anyhow::Error) -> Self {
        Self::new(Exit::Failed, format!("{e:#}"))
    }
}

/// What a command returns.
pub(crate) type CliResult = Result<Exit, CliError>;

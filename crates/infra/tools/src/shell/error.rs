//! Why `shell.run` refused or failed a command: one error below both the tool (`run`) and
//! the way a command starts (`spawn`).

use std::time::Duration;

use rein_tool::ToolError;

use super::ShellRejection;
use super::isolate::IsolationError;
use super::limit::ProcessLimitError;
use super::sandbox::SandboxError;
use crate::FsError;

/// Why `shell.run` refused or failed a command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShellError {
    /// The input does not fit the tool's schema.
    #[error("{message}")]
    Input {
        /// What was wrong.
        message: String,
    },
    /// The guard refused the command.
    #[error(transparent)]
    Rejected(#[from] ShellRejection),
    /// The working directory was refused.
    #[error(transparent)]
    Cwd(#[from] FsError),
    /// The program could not be started.
    #[error("cannot start `{program}`: {source}; check that it is installed and on PATH")]
    Spawn {
        /// The program.
        program: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The command ran past its timeout; its whole process group was killed.
    #[error("`{program}` ran past its {} ms timeout; its process group was killed", after.as_millis())]
    TimedOut {
        /// The program.
        program: String,
        /// The timeout.
        after: Duration,
    },
    /// The sandbox was asked for and could not be set up (or is unsupported here).
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// Waiting for the command failed.
    #[error("waiting for `{program}` failed: {source}")]
    Wait {
        /// The program.
        program: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The process bound was asked for and could not be set up (or is unsupported here).
    #[error(transparent)]
    ProcessLimit(#[from] ProcessLimitError),
    /// The isolation could not be set up: nothing was run.
    #[error(transparent)]
    Isolation(#[from] IsolationError),
}

impl From<ShellError> for ToolError {
    fn from(e: ShellError) -> Self {
        match e {
            ShellError::Rejected(rejection) => rejection.into(),
            ShellError::Cwd(fs) => fs.into(),
            ShellError::Input { .. } => Self::invalid_input(e.to_string()),
            ShellError::TimedOut { after, .. } => Self::TimedOut { after },
            _ => Self::failed(e.to_string()),
        }
    }
}

//! How one checked command starts: its resolved program, isolated in its own namespaces
//! (`unshare`), bounded (the pids cgroup launcher), sandboxed (a Landlock thread), with a
//! scrubbed environment, in its own process group, killed if its handle is dropped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use super::error::ShellError;
use super::isolate::{self, Isolation, IsolationError};
use super::limit::{self, PidsCgroup, ProcessLimitError};
use super::sandbox;

/// One command to start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start<'a> {
    /// The program's file name, for messages.
    pub(crate) name: &'a str,
    /// The program's file (absolute).
    pub(crate) program: &'a Path,
    /// Its arguments.
    pub(crate) args: &'a [String],
    /// Its working directory.
    pub(crate) cwd: &'a Path,
    /// The workspace (the sandbox's writable tree).
    pub(crate) workspace: &'a Path,
    /// The environment variables that pass.
    pub(crate) env: &'a [String],
    /// Whether the Landlock sandbox applies.
    pub(crate) sandbox: bool,
    /// How it is isolated.
    pub(crate) isolation: Isolation,
    /// The pids cgroup it joins, if bounded.
    pub(crate) cgroup: Option<&'a PidsCgroup>,
}

/// The `unshare` that isolated a probe successfully, per sandbox mode (without, with).
static PROBED: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];

/// The longest the one-time probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

impl Start<'_> {
    /// Starts the command.
    pub(crate) async fn spawn(&self) -> Result<tokio::process::Child, ShellError> {
        let (program, args) = match self.isolation {
            Isolation::None => (
                self.program.to_path_buf(),
                self.args.iter().map(OsString::from).collect(),
            ),
            Isolation::Namespaces => {
                let unshare = self.isolator().await?;
                isolate::wrap(&unshare, self.sandbox, self.program, self.args)
            }
        };
        self.spawn_raw(&program, &args).await
    }

    /// The `unshare` to isolate with, once a probe (`unshare --version`, isolated the same
    /// way, sandbox included) succeeded in this process; a failed probe is retried next
    /// call, so a fixed machine needs no restart.
    async fn isolator(&self) -> Result<PathBuf, ShellError> {
        let cell = &PROBED[usize::from(self.sandbox)];
        if let Some(unshare) = cell.get() {
            return Ok(unshare.clone());
        }
        let unshare = isolate::find_unshare(self.workspace).ok_or(IsolationError::NoUnshare)?;
        let (program, args) =
            isolate::wrap(&unshare, self.sandbox, &unshare, &["--version".to_owned()]);
        let probe = Start {
            cgroup: None,
            ..*self
        };
        let child = probe.spawn_raw(&program, &args).await?;
        let unavailable = |detail: String| IsolationError::Unavailable {
            missing: isolate::missing(self.sandbox),
            detail: detail.chars().take(300).collect(),
        };
        match tokio::time::timeout(PROBE_TIMEOUT, child.wait_with_output()).await {
            Ok(Ok(out)) if out.status.success() => {
                let _ = cell.set(unshare.clone());
                Ok(unshare)
            }
            Ok(Ok(out)) => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let line = stderr.lines().next().unwrap_or("no message").trim();
                Err(unavailable(format!("`unshare` exited with {}: {line}", out.status)).into())
            }
            Ok(Err(e)) => Err(unavailable(format!("waiting for `unshare` failed: {e}")).into()),
            Err(_) => Err(unavailable(format!(
                "`unshare` did not finish within {} s",
                PROBE_TIMEOUT.as_secs()
            ))
            .into()),
        }
    }

    /// Starts `program args…` as this command: through the cgroup launcher if bounded,
    /// from the sandbox thread if sandboxed.
    async fn spawn_raw(
        &self,
        program: &Path,
        args: &[OsString],
    ) -> Result<tokio::process::Child, ShellError> {
        let mut command = match self.cgroup {
            None => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).stdin(Stdio::null());
                command
            }
            Some(cgroup) => {
                // The command joins its own pids cgroup before it runs (see `limit`).
                let procs = cgroup.procs().map_err(|e| ProcessLimitError::Unsupported {
                    reason: format!("cannot open the cgroup's process list: {e}"),
                })?;
                let mut command = tokio::process::Command::new("/bin/sh");
                command
                    .args(["-c", limit::LAUNCHER, "sh"])
                    .arg(program)
                    .args(args)
                    .stdin(Stdio::from(procs));
                command
            }
        };
        command
            .current_dir(self.cwd)
            .env_clear()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in self.env {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        #[cfg(unix)]
        command.process_group(0);
        if self.sandbox {
            Ok(sandbox::spawn(command, self.workspace).await?)
        } else {
            command.spawn().map_err(|source| ShellError::Spawn {
                program: self.name.to_owned(),
                source,
            })
        }
    }
}

//! `shell.run`: one guarded command, resolved to the program file it names and run
//! directly (no shell), in the workspace, isolated in its own namespaces, with a timeout
//! that kills everything it started, capped output and a scrubbed environment.

use std::sync::Arc;
use std::time::Duration;

use rein_tool::{Annotations, Attachment, Tool, ToolError, ToolOutput, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::ShellGuard;
use super::error::ShellError;
use super::isolate::{self, Isolation};
use super::limit::PidsCgroup;
use super::spawn::Start;
use crate::Workspace;
use crate::fs::{builtin_spec, parse, schema};

/// The environment variables a command gets by default (values from rein's own
/// environment; everything else is removed).
pub const DEFAULT_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER"];

/// How `shell.run` runs commands: which ones (the guard), for how long, how much output it
/// keeps, which environment variables pass.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    guard: ShellGuard,
    timeout: Duration,
    max_timeout: Duration,
    output_cap: usize,
    spill_cap: usize,
    env: Vec<String>,
    sandbox: bool,
    isolation: Isolation,
    max_processes: Option<u32>,
}

impl ShellConfig {
    /// Commands `guard` allows; 30 s timeout (a call may ask for up to 10 min), 64 KiB of
    /// each of stdout and stderr inline, up to 16 MiB of each kept as an attachment when the
    /// output is longer, [`DEFAULT_ENV`] passed through.
    #[must_use]
    pub fn new(guard: ShellGuard) -> Self {
        Self {
            guard,
            timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            output_cap: 64 * 1024,
            spill_cap: Attachment::MAX_BYTES,
            env: DEFAULT_ENV.iter().map(|&s| s.to_owned()).collect(),
            sandbox: false,
            isolation: Isolation::Namespaces,
            max_processes: None,
        }
    }

    /// How commands are isolated from the machine's other processes:
    /// [`Isolation::Namespaces`] by default (a command sees no other process and nothing
    /// it starts outlives the call); [`Isolation::None`] opts out.
    #[must_use]
    pub const fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Runs every command in a filesystem sandbox (Linux Landlock: read anywhere but
    /// `/proc`, write only inside the workspace). Where the kernel lacks Landlock, calls
    /// fail with [`ShellError::Sandbox`] instead of running unconfined.
    #[must_use]
    pub const fn with_sandbox(mut self, sandbox: bool) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Bounds every command to `max` processes (itself and everything it starts, together),
    /// so a fork loop stops at the bound. Linux only, through a pids cgroup per call (see
    /// [`ProcessLimitError`] for what it needs); where none can be made, calls fail with
    /// [`ShellError::ProcessLimit`] instead of running unbounded. Off by default.
    ///
    /// [`ProcessLimitError`]: super::ProcessLimitError
    #[must_use]
    pub const fn with_max_processes(mut self, max: u32) -> Self {
        self.max_processes = Some(max);
        self
    }

    /// The timeout when a call names none, and the longest a call may ask for.
    #[must_use]
    pub const fn with_timeout(mut self, default: Duration, max: Duration) -> Self {
        self.timeout = default;
        self.max_timeout = max;
        self
    }

    /// How many bytes of stdout and of stderr the output's JSON shows inline. A stream
    /// longer than that is kept whole (up to the spill cap) in an attachment named `stdout`
    /// or `stderr`, which the engine stores as an artifact; the JSON names it.
    #[must_use]
    pub const fn with_output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }

    /// How many bytes of a stream past the inline cap are kept for its attachment, at most
    /// [`Attachment::MAX_BYTES`] (a larger value is clamped); beyond it, bytes are counted
    /// and dropped, so memory stays bounded whatever the command prints. `0` keeps no
    /// attachment.
    #[must_use]
    pub const fn with_spill_cap(mut self, bytes: usize) -> Self {
        self.spill_cap = if bytes > Attachment::MAX_BYTES {
            Attachment::MAX_BYTES
        } else {
            bytes
        };
        self
    }

    /// The environment variables that pass through (all others are removed).
    #[must_use]
    pub fn with_env_allowlist<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.env = names.into_iter().map(Into::into).collect();
        self
    }

    /// The guard.
    pub const fn guard(&self) -> &ShellGuard {
        &self.guard
    }
}

/// The input of `shell.run`: exactly one of `argv` and `command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunInput {
    /// The program and its arguments, run as given (no shell).
    #[serde(default)]
    argv: Option<Vec<String>>,
    /// A command line, parsed with POSIX quoting into one plain invocation; operators,
    /// substitutions, redirections and the like are refused, never interpreted.
    #[serde(default)]
    command: Option<String>,
    /// The working directory, relative to the workspace (default: the workspace).
    #[serde(default)]
    cwd: Option<String>,
    /// The timeout in milliseconds (capped by the tool's configuration).
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// The built-in `shell.run` tool: destructive and high risk, so the default approval policy
/// asks before every call.
///
/// ```
/// use rein_tools::shell::{ShellConfig, ShellGuard, ShellRun};
/// use rein_tools::Workspace;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = tempfile::tempdir()?;
/// let run = ShellRun::new(
///     Workspace::open(dir.path())?,
///     ShellConfig::new(ShellGuard::new(["echo"], Vec::<&str>::new())),
/// );
/// let out = run.run(json!({"command": "echo 'hello world'"})).await?;
/// assert_eq!(out["stdout"], "hello world\n");
/// assert!(run.run(json!({"command": "echo hi; rm -rf /"})).await.is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ShellRun {
    spec: ToolSpec,
    workspace: Workspace,
    config: Arc<ShellConfig>,
}

impl ShellRun {
    /// The tool's name.
    pub const NAME: &'static str = "shell.run";

    /// `shell.run` in `workspace`, running what `config`'s guard allows.
    #[must_use]
    pub fn new(workspace: Workspace, config: ShellConfig) -> Self {
        Self {
            spec: Self::spec(),
            workspace,
            config: Arc::new(config),
        }
    }

    /// Destructive, high risk, not idempotent: a command can do anything its program can.
    #[must_use]
    pub const fn annotations() -> Annotations {
        Annotations::destructive()
    }

    /// The tool's spec.
    #[must_use]
    pub fn spec() -> ToolSpec {
        builtin_spec(
            Self::NAME,
            "Runs one program with arguments in the workspace (no shell: pipes, redirections, substitutions and chaining are refused), with a timeout, capped output and a scrubbed environment",
            Self::annotations(),
            schema::<RunInput>(),
        )
    }

    /// Runs the command `input` describes and returns the output's JSON (a stream longer
    /// than the inline cap is cut there; [`ShellRun::run_with_attachments`] keeps the rest).
    ///
    /// # Errors
    /// The [`ShellError`] that says what was refused or went wrong. A command that runs and
    /// exits non-zero is not an error: the output says so.
    pub async fn run(&self, input: Value) -> Result<Value, ShellError> {
        self.run_with_attachments(input)
            .await
            .map(ToolOutput::into_value)
    }

    /// Runs the command `input` describes. A stream longer than the inline cap comes back
    /// whole (up to the spill cap) as an attachment named `stdout` or `stderr`, and the
    /// JSON says so: `stdout_truncated: true`, `stdout_attachment: "stdout"`.
    ///
    /// # Errors
    /// As [`ShellRun::run`].
    pub async fn run_with_attachments(&self, input: Value) -> Result<ToolOutput, ShellError> {
        let input: RunInput =
            parse(Self::NAME, input).map_err(|message| ShellError::Input { message })?;
        let argv = match (input.argv, input.command) {
            (Some(words), None) => self.config.guard.check_argv(words)?,
            (None, Some(line)) => self.config.guard.check(&line)?,
            _ => {
                return Err(ShellError::Input {
                    message: "shell.run: give exactly one of `argv` (a list of words) and `command` (a command line)".to_owned(),
                });
            }
        };
        let cwd_shown = input.cwd.unwrap_or_else(|| ".".to_owned());
        let cwd = self.workspace.resolve_dir(&cwd_shown)?;
        let timeout = input
            .timeout_ms
            .map_or(self.config.timeout, Duration::from_millis)
            .min(self.config.max_timeout);
        let program = argv.program().to_owned();
        let resolved = self
            .config
            .guard
            .resolve(&argv, &cwd, self.workspace.root())?;

        // The isolation's own process counts against the bound, not against the command.
        let overhead = match self.config.isolation {
            Isolation::Namespaces => isolate::OVERHEAD,
            Isolation::None => 0,
        };
        let cgroup = self
            .config
            .max_processes
            .map(|max| PidsCgroup::create(max.saturating_add(overhead)))
            .transpose()?;
        let mut child = Start {
            name: &program,
            program: &resolved,
            args: argv.args(),
            cwd: &cwd,
            workspace: self.workspace.root(),
            env: &self.config.env,
            sandbox: self.config.sandbox,
            isolation: self.config.isolation,
            cgroup: cgroup.as_ref(),
        }
        .spawn()
        .await?;
        // Whatever happens from here (exit, timeout, the future dropped), the whole group
        // is killed when this guard goes; isolated, that kills the namespace's first
        // process, and with it every process of the namespace (one that left the group
        // too): no orphan outlives the call.
        // Dropped last (after the group is killed): kills what is left in the cgroup.
        let _cgroup = cgroup;
        let _group = KillGroup(child.id());
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let cap = self.config.output_cap.max(self.config.spill_cap);
        let work = async {
            let (out, err, status) =
                tokio::join!(capture(stdout, cap), capture(stderr, cap), child.wait());
            (out, err, status)
        };
        let Ok((out, err, status)) = tokio::time::timeout(timeout, work).await else {
            return Err(ShellError::TimedOut {
                program,
                after: timeout,
            });
        };
        let status = status.map_err(|source| ShellError::Wait {
            program: program.clone(),
            source,
        })?;
        let mut value = json!({
            "argv": argv.words(),
            "program": resolved.display().to_string(),
            "cwd": cwd_shown,
            "exit_code": status.code(),
            "success": status.success(),
            "sandbox": if self.config.sandbox { "landlock" } else { "none" },
            "isolation": self.config.isolation.name(),
            "max_processes": self.config.max_processes,
        });
        let mut attachments = Vec::new();
        for (stream, captured) in [("stdout", out), ("stderr", err)] {
            let inline = self.config.output_cap;
            let shown = captured.kept.len().min(inline);
            value[stream] = String::from_utf8_lossy(&captured.kept[..shown]).into();
            value[format!("{stream}_bytes")] = captured.total.into();
            let truncated = captured.total > shown as u64;
            value[format!("{stream}_truncated")] = truncated.into();
            if truncated && captured.kept.len() > shown {
                let kept = captured.kept.len() as u64;
                value[format!("{stream}_attachment")] = stream.into();
                value[format!("{stream}_note")] = if kept < captured.total {
                    format!(
                        "{shown} of {} bytes shown; the first {kept} bytes are in the attachment `{stream}` (the rest was dropped)",
                        captured.total
                    )
                } else {
                    format!(
                        "{shown} of {} bytes shown; the whole output is in the attachment `{stream}`",
                        captured.total
                    )
                }
                .into();
                attachments.push((stream, captured.kept));
            }
        }
        let mut output = ToolOutput::new(value);
        for (stream, bytes) in attachments {
            // Both bounded by construction: at most MAX_BYTES each, two of them.
            if let Ok(attachment) = Attachment::new(stream, "text/plain", bytes) {
                let _ = output.push_attachment(attachment);
            }
        }
        Ok(output)
    }
}

impl Tool for ShellRun {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.run_with_attachments(input)
            .await
            .map_err(ToolError::from)
    }
}

/// What was read from a stream: the first bytes, and how many there were in all.
#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    total: u64,
}

/// Reads `stream` to its end, keeping the first `cap` bytes.
async fn capture(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> Captured {
    let mut captured = Captured::default();
    let Some(mut stream) = stream else {
        return captured;
    };
    let mut buf = vec![0; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        captured.total += n as u64;
        let room = cap.saturating_sub(captured.kept.len());
        captured.kept.extend_from_slice(&buf[..n.min(room)]);
    }
    captured
}

/// Kills a process group when dropped.
#[derive(Debug)]
struct KillGroup(Option<u32>);

impl Drop for KillGroup {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self
            .0
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            // ESRCH (the group is already gone) is the usual, fine outcome.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

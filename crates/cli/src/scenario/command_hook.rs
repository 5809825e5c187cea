//! `CommandHook`: a hook that runs a program — the payload as JSON on its stdin; exit 0
//! allows (or, with a JSON verdict on stdout, narrows), exit 2 denies with stderr as the
//! reason, any other exit denies (hooks fail closed). Run with a cleared environment (only
//! the variables the scenario names), in the workspace, its output bounded, and its whole
//! process group killed when it ends or is dropped (on the engine's timeout).

use std::path::PathBuf;
use std::process::Stdio;

use rein::hook::{Hook, HookError, HookPayload, HookVerdict, Narrowing};
use rein::run::BudgetName;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

/// The most of stdout and of stderr a hook's verdict is read from (64 KiB each).
const MAX_OUTPUT: usize = 64 * 1024;

/// A hook that runs `command` in `cwd`.
#[derive(Debug)]
pub(crate) struct CommandHook {
    command: Vec<String>,
    env: Vec<String>,
    cwd: PathBuf,
}

/// A verdict a hook prints on stdout (with exit 0).
#[derive(Debug, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case", deny_unknown_fields)]
enum Printed {
    Allow {},
    Deny {
        reason: String,
    },
    RequireApproval {
        #[serde(default)]
        reason: String,
    },
    Budget {
        name: String,
        limit: u64,
        #[serde(default)]
        reason: String,
    },
}

impl CommandHook {
    /// `command` (its paths resolved), given the variables `env` names, run in `cwd`.
    pub(crate) const fn new(command: Vec<String>, env: Vec<String>, cwd: PathBuf) -> Self {
        Self { command, env, cwd }
    }
}

impl Hook for CommandHook {
    async fn check(&self, payload: &HookPayload) -> Result<HookVerdict, HookError> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(HookError::new("the hook has no command"));
        };
        let stdin = serde_json::to_vec(payload)
            .map_err(|e| HookError::new(format!("the payload could not be written: {e}")))?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in &self.env {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| HookError::new(format!("`{program}` could not be started: {e}")))?;
        // Whatever the hook started goes when it is done, or when the engine gives up on it.
        let _group = KillGroup(child.id());
        let (Some(mut input), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(HookError::new("the command's pipes could not be opened"));
        };
        let write = async move {
            // A hook that exits without reading its input is its own business.
            let _ = input.write_all(&stdin).await;
            drop(input);
        };
        let ((), out, err) = tokio::join!(write, bounded(stdout), bounded(stderr));
        let status = child
            .wait()
            .await
            .map_err(|e| HookError::new(format!("waiting for the command failed: {e}")))?;
        let stderr = String::from_utf8_lossy(&err.0).trim().to_owned();
        match status.code() {
            Some(0) if out.1 => Err(HookError::new(format!(
                "the command printed more than {} KiB on stdout",
                MAX_OUTPUT / 1024
            ))),
            Some(0) => verdict(&out.0),
            Some(2) if stderr.is_empty() => Ok(HookVerdict::deny(
                "the command exited with 2 (deny) without a reason on stderr",
            )),
            Some(2) => Ok(HookVerdict::deny(stderr)),
            _ => Err(HookError::new(format!(
                "the command exited with {status}{}",
                if stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {stderr}")
                }
            ))),
        }
    }
}

/// The verdict printed on stdout by a hook that exited with 0: nothing is allow; anything
/// else must be one JSON verdict.
fn verdict(stdout: &[u8]) -> Result<HookVerdict, HookError> {
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return Ok(HookVerdict::Allow);
    }
    let garbage = |why: String| {
        let shown: String = text.trim().chars().take(200).collect();
        HookError::new(format!(
            "the command printed {shown:?}, which is not a verdict ({why}); print nothing to allow, or \
             {{\"verdict\": \"deny\" | \"require_approval\" | \"budget\", …}}"
        ))
    };
    let printed: Printed = serde_json::from_str(text.trim()).map_err(|e| garbage(e.to_string()))?;
    Ok(match printed {
        Printed::Allow {} => HookVerdict::Allow,
        Printed::Deny { reason } => HookVerdict::deny(reason),
        Printed::RequireApproval { reason } => {
            HookVerdict::Narrow(Narrowing::require_approval(reason))
        }
        Printed::Budget {
            name,
            limit,
            reason,
        } => {
            let name = BudgetName::new(name).map_err(|e| garbage(e.to_string()))?;
            HookVerdict::Narrow(Narrowing::budget(name, limit, reason))
        }
    })
}

/// Reads `pipe` to its end, keeping at most [`MAX_OUTPUT`] bytes; whether there was more.
async fn bounded(pipe: impl AsyncRead + Unpin) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut limited = pipe.take(MAX_OUTPUT as u64 + 1);
    let _ = limited.read_to_end(&mut kept).await;
    let over = kept.len() > MAX_OUTPUT;
    kept.truncate(MAX_OUTPUT);
    // The rest is drained and dropped, so a hook that writes on is not blocked by a full pipe.
    let mut rest = limited.into_inner();
    let mut sink = [0u8; 8192];
    while let Ok(n) = rest.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
    (kept, over)
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

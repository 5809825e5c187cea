//! The opt-in filesystem sandbox of `shell.run`: on Linux, a Landlock ruleset (read
//! anywhere but `/proc`, write only inside the workspace and to `/dev/null`) that the child
//! inherits. `/proc` stays out of reach because under Landlock no fresh one can be mounted
//! for the command's PID namespace (Landlock forbids mounting), and the machine's `/proc`
//! would show every process's environment. Landlock also keeps the command from tracing
//! any process outside its sandbox. Where the kernel lacks Landlock the call is refused as
//! unsupported, never run unconfined.

use std::path::Path;

/// Why the sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The kernel (or platform) has no Landlock: nothing was run.
    #[error(
        "the filesystem sandbox is unsupported here ({reason}); nothing was run — turn the sandbox off to run unconfined"
    )]
    Unsupported {
        /// Why.
        reason: String,
    },
    /// The command could not be started inside the sandbox.
    #[error("cannot start the sandboxed command: {0}")]
    Spawn(#[source] std::io::Error),
}

/// Spawns `command` confined: a fresh thread restricts itself (Landlock is per thread and
/// inherited by children), spawns the child, and ends; rein's own threads stay unrestricted.
#[cfg(target_os = "linux")]
pub(crate) async fn spawn(
    mut command: tokio::process::Command,
    workspace: &Path,
) -> Result<tokio::process::Child, SandboxError> {
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
        path_beneath_rules,
    };

    let handle = tokio::runtime::Handle::current();
    let workspace = workspace.to_path_buf();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let abi = ABI::V3;
        let restricted = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .and_then(landlock::Ruleset::create)
            .and_then(|r| r.add_rules(path_beneath_rules(readable(), AccessFs::from_read(abi))))
            .and_then(|r| {
                r.add_rules(path_beneath_rules(
                    [workspace.as_path(), Path::new("/dev/null")],
                    AccessFs::from_all(abi),
                ))
            })
            .and_then(landlock::RulesetCreated::restrict_self);
        let result = match restricted {
            Ok(status) if status.ruleset == RulesetStatus::NotEnforced => {
                Err(SandboxError::Unsupported {
                    reason: "the kernel does not enforce Landlock".to_owned(),
                })
            }
            Err(e) => Err(SandboxError::Unsupported {
                reason: e.to_string(),
            }),
            Ok(_) => {
                let _runtime = handle.enter();
                command.spawn().map_err(SandboxError::Spawn)
            }
        };
        let _ = tx.send(result);
    });
    rx.await.unwrap_or_else(|_| {
        Err(SandboxError::Unsupported {
            reason: "the sandbox thread ended without an answer".to_owned(),
        })
    })
}

/// What the sandbox may read: every entry of `/` but `/proc` (Landlock grants whole trees,
/// so `/` itself cannot be granted without `/proc`).
#[cfg(target_os = "linux")]
fn readable() -> Vec<std::path::PathBuf> {
    let proc = Path::new("/proc");
    std::fs::read_dir("/")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            // A link to /proc (or into it) is /proc too.
            std::fs::canonicalize(path).is_ok_and(|real| !real.starts_with(proc))
        })
        .collect()
}

/// No Landlock outside Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) async fn spawn(
    _command: tokio::process::Command,
    _workspace: &Path,
) -> Result<tokio::process::Child, SandboxError> {
    Err(SandboxError::Unsupported {
        reason: "Landlock exists only on Linux".to_owned(),
    })
}

//! The isolation of `shell.run` (on by default): every command runs as the first process
//! of its own PID namespace, inside its own mount and user namespaces with a fresh `/proc`,
//! so it sees no other process (rein's `/proc/PID/environ`, API keys included, is out of
//! reach), and everything it starts dies with it.
//!
//! `unsafe` is forbidden, so there is no `pre_exec` hook: the namespaces come from
//! util-linux's `unshare` (essential on Debian and its derivatives), found once on the
//! search path and probed once per process:
//!
//! `unshare --user --map-root-user --pid --fork --mount-proc --kill-child --
//!  unshare --user --map-root-user --mount -- PROGRAM ARGS…`
//!
//! The outer `unshare` forks the command as PID 1 of a new PID namespace and mounts a
//! `/proc` that shows only that namespace; `--kill-child` kills it when the outer `unshare`
//! dies (the timeout kills it), and when PID 1 exits the kernel kills every process left in
//! the namespace — an orphan that left the process group included. The inner `unshare`
//! enters a second user and mount namespace, where every mount, the fresh `/proc`
//! included, is locked: unmounting it to uncover the machine's `/proc` fails.
//! `--map-root-user` keeps the user's own identity and file access (root stays root for
//! files; an unprivileged user needs unprivileged user namespaces).
//!
//! With the Landlock sandbox on, mounting is refused (Landlock forbids it), so the command
//! gets PID and user namespaces without a fresh `/proc` (`unshare --user --pid --fork
//! --kill-child`), and the sandbox leaves `/proc` out of reach instead. Its user is not
//! mapped there: it still owns its files, but holds no capability on the machine, root
//! included (no module loading, no raw devices).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How `shell.run` isolates a command from the other processes of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Isolation {
    /// Its own PID, mount and user namespaces with a fresh `/proc` (the default): it cannot
    /// read another process's environment or memory, and nothing it starts outlives the
    /// call. Where the kernel or a container refuses the namespaces, calls fail with
    /// [`IsolationError`] and nothing runs.
    #[default]
    Namespaces,
    /// None (an explicit opt-out): the command can read the environment of every process
    /// of the same user through `/proc` (rein's own, API keys included), and a process
    /// that leaves the command's process group outlives the call. Use it only where the
    /// machine holds no secret the command must not see.
    None,
}

impl Isolation {
    /// The scenario spelling: `"namespaces"` or `"none"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Namespaces => "namespaces",
            Self::None => "none",
        }
    }
}

/// Why the isolation ([`Isolation::Namespaces`]) could not be set up: nothing was run.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// No util-linux `unshare` on the search path.
    #[error(
        "shell.run isolates every command in its own PID, mount and user namespaces through util-linux `unshare`, and none was found on PATH; nothing was run — install util-linux, or opt out with isolation none (\"isolation\": \"none\" in the scenario's shell configuration; a command can then read other processes' environment and outlive its call)"
    )]
    NoUnshare,
    /// The kernel or the container refused the namespaces.
    #[error(
        "shell.run cannot isolate commands here: {missing} refused ({detail}); nothing was run — allow user namespaces (unprivileged ones where rein is not root; in a container, the unshare, clone and mount system calls in its seccomp profile), or opt out with isolation none (\"isolation\": \"none\" in the scenario's shell configuration; a command can then read other processes' environment and outlive its call)"
    )]
    Unavailable {
        /// What is missing, e.g. "PID, mount and user namespaces".
        missing: &'static str,
        /// What `unshare` said (its first line, bounded).
        detail: String,
    },
}

/// What the isolation needs, for [`IsolationError::Unavailable`].
pub(crate) const fn missing(sandbox: bool) -> &'static str {
    if sandbox {
        "PID and user namespaces"
    } else {
        "PID, mount and user namespaces"
    }
}

/// How many processes the isolation adds to a command's count: the outer `unshare`, which
/// waits outside the namespace.
pub(crate) const OVERHEAD: u32 = 1;

/// The `unshare` to isolate with, if any is on the search path (or in the usual folders).
pub(crate) fn find_unshare(workspace: &Path) -> Option<PathBuf> {
    let mut dirs = super::resolve::search_path(std::env::var_os("PATH"), workspace);
    dirs.extend(["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map(PathBuf::from));
    super::resolve::find_on("unshare", &dirs)
}

/// The program and arguments that run `program args…` isolated through `unshare`.
pub(crate) fn wrap(
    unshare: &Path,
    sandbox: bool,
    program: &Path,
    args: &[String],
) -> (PathBuf, Vec<OsString>) {
    let mut words: Vec<OsString> = Vec::new();
    if sandbox {
        // Landlock forbids mounting (and writing `/proc/self/uid_map`): PID and user
        // namespaces without a fresh `/proc`, which the sandbox keeps out of reach. The user
        // is not mapped in its namespace, so the command keeps its files (it is still their
        // owner) but holds no capability on the machine — root included.
        words.extend(["--user", "--pid", "--fork", "--kill-child", "--"].map(OsString::from));
    } else {
        words.extend(
            [
                "--user",
                "--map-root-user",
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "--",
            ]
            .map(OsString::from),
        );
        words.push(unshare.into());
        words.extend(["--user", "--map-root-user", "--mount", "--"].map(OsString::from));
    }
    words.push(program.into());
    words.extend(args.iter().map(OsString::from));
    (unshare.to_path_buf(), words)
}

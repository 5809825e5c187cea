//! The opt-in process bound of `shell.run` (a fork bomb stops at the bound): a pids cgroup
//! per call, with `pids.max` set, that the command joins *before* it runs.
//!
//! `unsafe` is forbidden, so there is no `pre_exec` hook. Instead the command is started
//! through a fixed launcher, `sh -c 'echo $$ >&0; exec "$@" </dev/null' sh PROGRAM ARGS…`,
//! whose standard input is the cgroup's `cgroup.procs` opened for writing: the launcher
//! writes its own pid there (joining the cgroup), then replaces itself with the program,
//! which keeps the pid. Nothing the program starts can be outside the cgroup, and the
//! arguments are positional parameters, never interpreted by the shell. The file is opened
//! by rein before the optional Landlock sandbox applies, so the two combine.
//!
//! Why not the alternatives: `setrlimit`/`prlimit` on the child's pid right after spawn is
//! racy (the child can fork before the limit lands), and `RLIMIT_NPROC` counts every
//! process of the user (not this command's) and is ignored for root — which rein often is
//! in containers. A cgroup bounds exactly the command's tree, for root too.
//!
//! A cgroup needs a writable pids hierarchy: cgroup v2 with the `pids` controller enabled
//! for rein's cgroup's children (a delegated subtree), or the v1 `pids` hierarchy. Where
//! there is none the call is refused as unsupported, never run unbounded.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why the process bound ([`ShellConfig::with_max_processes`]) could not be set up.
///
/// The bound is a pids cgroup per call, which the command joins before it runs (through a
/// fixed `sh` launcher whose standard input is the cgroup's `cgroup.procs`), so it covers
/// the command and everything it starts, for root too. It needs a writable pids cgroup:
/// cgroup v2 with `pids` in the `cgroup.subtree_control` of rein's own cgroup (a delegated
/// subtree), or the v1 `pids` hierarchy. `RLIMIT_NPROC` is not used: it counts every
/// process of the user and is ignored for root; setting a limit on the child's pid after
/// spawn would be racy. Without a writable cgroup a bounded call is refused, never run
/// unbounded.
///
/// [`ShellConfig::with_max_processes`]: super::ShellConfig::with_max_processes
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessLimitError {
    /// No writable pids cgroup: nothing was run.
    #[error(
        "the process bound is unsupported here: {reason}; nothing was run — give rein a writable pids cgroup (cgroup v2 with the pids controller delegated, or the v1 pids hierarchy) or drop max_processes"
    )]
    Unsupported {
        /// Why.
        reason: String,
    },
}

/// One call's pids cgroup; removed (after killing whatever is left in it) when dropped.
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    dir: PathBuf,
}

/// The launcher that joins the cgroup through its standard input, then runs the program.
pub(crate) const LAUNCHER: &str = "echo $$ >&0 && exec \"$@\" </dev/null";

static NEXT: AtomicU64 = AtomicU64::new(0);

impl PidsCgroup {
    /// A fresh cgroup allowing at most `max` processes (the command and everything it
    /// starts, together).
    pub(crate) fn create(max: u32) -> Result<Self, ProcessLimitError> {
        let mut reasons = Vec::new();
        for parent in candidates() {
            let dir = parent.join(format!(
                "rein-shell-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            if let Err(e) = std::fs::create_dir(&dir) {
                reasons.push(format!("{}: {e}", parent.display()));
                continue;
            }
            let cgroup = Self { dir };
            match std::fs::write(cgroup.dir.join("pids.max"), max.to_string()) {
                Ok(()) => return Ok(cgroup),
                Err(e) => reasons.push(format!("{}: pids.max: {e}", parent.display())),
            }
        }
        Err(ProcessLimitError::Unsupported {
            reason: if reasons.is_empty() {
                "no pids cgroup hierarchy is mounted".to_owned()
            } else {
                reasons.join("; ")
            },
        })
    }

    /// `cgroup.procs`, opened for writing: the launcher's standard input.
    pub(crate) fn procs(&self) -> std::io::Result<File> {
        File::options()
            .write(true)
            .open(self.dir.join("cgroup.procs"))
    }

    /// Kills every process left in the cgroup, a bounded number of rounds (a fork loop
    /// cannot outrun it: it is at its bound, and each round kills all it has).
    fn kill_all(&self) {
        if let Ok(mut kill) = File::options()
            .write(true)
            .open(self.dir.join("cgroup.kill"))
        {
            let _ = kill.write_all(b"1");
        }
        for _ in 0..1000 {
            let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<_> = procs
                .lines()
                .filter_map(|l| l.trim().parse::<i32>().ok())
                .filter_map(rustix::process::Pid::from_raw)
                .collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            std::thread::yield_now();
        }
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        self.kill_all();
        // Killed processes leave the cgroup as the kernel finishes them; retry, bounded.
        for _ in 0..1000 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::yield_now();
        }
    }
}

/// Where a per-call cgroup may be created: rein's own cgroup in the v2 hierarchy (when it
/// delegates `pids` to its children), then in the v1 `pids` hierarchy.
fn candidates() -> Vec<PathBuf> {
    let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                let dir = Path::new(root).join(path);
                let delegated = std::fs::read_to_string(dir.join("cgroup.subtree_control"))
                    .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"));
                if delegated {
                    found.insert(0, dir);
                }
            }
        } else if controllers.split(',').any(|c| c == "pids") {
            found.push(Path::new("/sys/fs/cgroup/pids").join(path));
        }
    }
    found
}

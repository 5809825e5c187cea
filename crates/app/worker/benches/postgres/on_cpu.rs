//! Time on a CPU, this process's and the database's, and context switches, from the
//! kernel's scheduler statistics.

/// Nanoseconds on a CPU, from the kernel's scheduler statistics: this process's threads
/// (`client`) and every `postgres` process's (`server`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OnCpu {
    pub(crate) client: u64,
    pub(crate) server: u64,
    /// This process's context switches.
    pub(crate) switches: u64,
}

impl std::ops::Add for OnCpu {
    type Output = Self;
    fn add(self, other: Self) -> Self {
        Self {
            client: self.client + other.client,
            server: self.server + other.server,
            switches: self.switches + other.switches,
        }
    }
}

impl OnCpu {
    /// The scheduler statistics files to read: this process's threads, and every
    /// `postgres` process's (listed once: the benchmark's connections stay open).
    pub(crate) fn files() -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
        let tasks = |dir: &std::path::Path| -> Vec<std::path::PathBuf> {
            std::fs::read_dir(dir.join("task"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|t| t.path().join("schedstat"))
                .collect()
        };
        let server = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|p| {
                std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim() == "postgres")
            })
            .flat_map(|p| tasks(&p.path()))
            .collect();
        (tasks(std::path::Path::new("/proc/self")), server)
    }

    pub(crate) fn now(files: &(Vec<std::path::PathBuf>, Vec<std::path::PathBuf>)) -> Self {
        let ran = |paths: &[std::path::PathBuf]| -> u64 {
            paths
                .iter()
                .filter_map(|path| {
                    std::fs::read_to_string(path)
                        .ok()?
                        .split_whitespace()
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .sum()
        };
        let switches = std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
            .flat_map(|status| {
                status
                    .lines()
                    .filter(|l| l.contains("ctxt_switches"))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .collect::<Vec<_>>()
            })
            .sum();
        Self {
            client: ran(&files.0),
            server: ran(&files.1),
            switches,
        }
    }

    pub(crate) fn since(self, before: Self) -> Self {
        Self {
            client: self.client.saturating_sub(before.client),
            server: self.server.saturating_sub(before.server),
            switches: self.switches.saturating_sub(before.switches),
        }
    }
}

//! The `rein worker` processes of the chaos test, started, killed and stopped by their
//! pids only, and the dice that picks which one to kill.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The worker processes this test started, each with its log; any still running when the
/// test ends (or fails) is killed by its pid.
pub(crate) struct Workers {
    pub(crate) url: String,
    pub(crate) dir: PathBuf,
    pub(crate) live: Vec<(String, Child)>,
    pub(crate) started: usize,
    pub(crate) killed: Vec<String>,
    /// Workers that exited without being told to: a defect.
    pub(crate) died: Vec<String>,
}

impl Workers {
    pub(crate) fn start(&mut self) {
        self.started += 1;
        let name = format!("chaos-{}", self.started);
        let log = std::fs::File::create(self.log(&name)).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_rein"))
            .args(["worker", "--name", &name, "--concurrency", "2"])
            // A dead worker's runs are taken over 2 s after its last renewal.
            .args(["--lease-ttl", "2", "--poll", "0.1"])
            .env("REIN_STORE", &self.url)
            .env_remove("RUST_LOG")
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.live.push((name, child));
    }

    pub(crate) fn log(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    /// SIGKILL to worker `name`.
    pub(crate) fn kill(&mut self, name: &str) {
        let at = self.live.iter().position(|(n, _)| n == name).unwrap();
        let (name, mut child) = self.live.remove(at);
        child.kill().unwrap();
        child.wait().unwrap();
        self.killed.push(name);
    }

    /// Notes the workers that exited by themselves (a defect), and replaces them.
    pub(crate) fn check(&mut self) {
        let mut i = 0;
        while i < self.live.len() {
            if let Ok(Some(status)) = self.live[i].1.try_wait() {
                let (name, _) = self.live.remove(i);
                let log = std::fs::read_to_string(self.log(&name)).unwrap_or_default();
                self.died.push(format!(
                    "{name} exited by itself ({status}); its log:\n{log}"
                ));
                self.start();
            } else {
                i += 1;
            }
        }
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.live.iter().map(|(n, _)| n.clone()).collect()
    }

    /// SIGTERM to every worker; each must stop cleanly.
    pub(crate) fn stop(&mut self) {
        for (name, mut child) in std::mem::take(&mut self.live) {
            let pid = child.id().to_string();
            let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
            assert!(sent.success());
            let status = child.wait().unwrap();
            if !status.success() {
                self.died
                    .push(format!("{name} stopped on SIGTERM with {status}"));
            }
        }
    }

    /// Every log line of every worker this test started, with the worker's name.
    pub(crate) fn lines(&self) -> Vec<(String, String)> {
        (1..=self.started)
            .map(|i| format!("chaos-{i}"))
            .flat_map(|name| {
                let text = std::fs::read_to_string(self.log(&name)).unwrap_or_default();
                text.lines()
                    .map(|l| (name.clone(), l.to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for (_, child) in &mut self.live {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A small deterministic generator (xorshift), seeded from the clock: the seed is printed.
pub(crate) struct Dice(pub(crate) u64);

impl Dice {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

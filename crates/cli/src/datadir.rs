//! The data directory: where the engine's filesystem stores keep runs, ledgers and
//! artifacts, and where `rein run` keeps each run's resolved scenario for `rein resume`.
//!
//! ```text
//! DATA_DIR/runs/RUN_ID.json          run snapshots (the engine's)
//! DATA_DIR/ledgers/RUN_ID.jsonl      ledgers (the engine's)
//! DATA_DIR/artifacts/…               large tool outputs (the engine's)
//! DATA_DIR/index.jsonl               the run index `rein runs list` keeps (a cache)
//! DATA_DIR/scenarios/RUN_ID.json     the scenario the run was started from, paths resolved
//! DATA_DIR/scenarios/RUN_ID.lock     held (flock) by the `rein` process driving the run
//! ```

use std::io::Write as _;
use std::path::{Path, PathBuf};

use rein::RunId;
use rein::store::FsLayout;

use crate::exit::CliError;
use crate::scenario::Scenario;

/// The lock on one run, held while this process drives it (see [`DataDir::lock_run`]).
#[derive(Debug)]
pub(crate) struct RunLock {
    _file: std::fs::File,
}

/// A data directory.
#[derive(Debug, Clone)]
pub(crate) struct DataDir {
    root: PathBuf,
    shown: String,
}

impl DataDir {
    /// The data directory at `path` (made absolute, nothing touched).
    ///
    /// # Errors
    /// When the path cannot be made absolute (the current directory is gone).
    pub(crate) fn new(path: &Path) -> Result<Self, CliError> {
        let root = std::path::absolute(path).map_err(|e| {
            CliError::bad_input(format!("cannot use data directory {}: {e}", path.display()))
        })?;
        Ok(Self {
            root,
            shown: path.display().to_string(),
        })
    }

    /// The absolute path.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The path as the user gave it (for messages and hints).
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Checks that the directory exists, for commands that only read.
    ///
    /// # Errors
    /// Bad input, when it does not exist or is not a directory.
    pub(crate) fn require(&self) -> Result<(), CliError> {
        if self.root.is_dir() {
            return Ok(());
        }
        Err(CliError::bad_input(format!(
            "no data directory at {}{}; runs are stored where `rein run --data-dir DIR` put them (default ./.rein)",
            self.shown,
            if self.root.exists() {
                " (it is not a directory)"
            } else {
                ""
            }
        )))
    }

    /// Where the stores keep what (the stores' own layout).
    pub(crate) fn layout(&self) -> FsLayout {
        FsLayout::new(&self.root)
    }

    /// Where run `id`'s ledger is.
    pub(crate) fn ledger(&self, id: &RunId) -> PathBuf {
        self.layout().ledger(id)
    }

    /// Where run `id`'s snapshot is.
    pub(crate) fn snapshot(&self, id: &RunId) -> PathBuf {
        self.layout().snapshot(id)
    }

    /// Where run `id`'s scenario is.
    pub(crate) fn scenario(&self, id: &RunId) -> PathBuf {
        self.root.join("scenarios").join(format!("{id}.json"))
    }

    /// Where the path of run `id`'s original scenario file is stored (`rein resume` reads
    /// MCP `env`/`headers` literals from there: they are never stored here).
    pub(crate) fn scenario_source(&self, id: &RunId) -> PathBuf {
        self.root.join("scenarios").join(format!("{id}.source"))
    }

    /// Stores run `id`'s resolved scenario, atomically (temporary file, fsync, rename),
    /// with every literal MCP `env`/`headers` value redacted, and the path of its original
    /// file (`source`) beside it.
    ///
    /// # Errors
    /// Bad input when the directory cannot be written.
    pub(crate) fn save_scenario(
        &self,
        id: &RunId,
        scenario: &Scenario,
        source: &std::path::Path,
    ) -> Result<(), CliError> {
        let path = self.scenario(id);
        let scenario = &crate::scenario::secrets::redacted(scenario);
        let write = || -> std::io::Result<()> {
            let dir = self.root.join("scenarios");
            std::fs::create_dir_all(&dir)?;
            let source = std::path::absolute(source)?;
            std::fs::write(
                self.scenario_source(id),
                source.as_os_str().as_encoded_bytes(),
            )?;
            let tmp = dir.join(format!(".{id}.json.tmp"));
            let mut file = std::fs::File::create(&tmp)?;
            let mut json = serde_json::to_vec_pretty(scenario).map_err(std::io::Error::other)?;
            json.push(b'\n');
            file.write_all(&json)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            CliError::bad_input(format!(
                "cannot write to data directory {}: {e}",
                self.shown
            ))
        })
    }

    /// Takes run `id`'s lock, waiting while another `rein` process holds it, so that two
    /// commands driving one run take turns: the second starts from what the first left,
    /// and gets the same answer whatever the timing. The lock is released when the
    /// returned file is dropped (or the process ends).
    ///
    /// # Errors
    /// Bad input when the lock file cannot be created.
    pub(crate) async fn lock_run(&self, id: &RunId) -> Result<RunLock, CliError> {
        let path = self.root.join("scenarios").join(format!("{id}.lock"));
        let open = || -> std::io::Result<std::fs::File> {
            std::fs::create_dir_all(self.root.join("scenarios"))?;
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
        };
        let file = open().map_err(|e| {
            CliError::bad_input(format!(
                "cannot write to data directory {}: {e}",
                self.shown
            ))
        })?;
        match file.try_lock() {
            Ok(()) => return Ok(RunLock { _file: file }),
            // A filesystem that cannot lock: go on unlocked (the ledger store still refuses
            // a second writer).
            Err(std::fs::TryLockError::Error(_)) => return Ok(RunLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => {}
        }
        eprintln!(
            "waiting: another rein process is driving run {id}; this one continues when it is done"
        );
        tokio::task::spawn_blocking(move || file.lock().map(|()| RunLock { _file: file }))
            .await
            .map_err(|e| {
                CliError::new(
                    crate::exit::Exit::Failed,
                    format!("waiting for the lock of run {id}: {e}"),
                )
            })?
            .map_err(|e| {
                CliError::new(
                    crate::exit::Exit::Failed,
                    format!("waiting for the lock of run {id}: {e}"),
                )
            })
    }

    /// Removes run `id`'s stored scenario (when the run could not start).
    pub(crate) fn forget_scenario(&self, id: &RunId) {
        let _ = std::fs::remove_file(self.scenario(id));
        let _ = std::fs::remove_file(self.scenario_source(id));
    }
}

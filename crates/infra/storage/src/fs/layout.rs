//! `FsLayout`: where the filesystem stores keep what under their root — the one place that
//! knows the data directory's folders and file names, for the stores and for tools (such as
//! the CLI) that read a data directory without opening the stores.

use std::path::{Path, PathBuf};

use rein_run::RunId;

/// The layout of a data directory: `runs/<run id>.json` (run snapshots),
/// `ledgers/<run id>.jsonl` (ledgers, one JSON entry per line), `artifacts/` (content
/// addressed, sharded by the first two hex digits of the id) and `index.jsonl` (the run
/// index, a cache).
///
/// Building paths touches nothing on disk.
///
/// ```
/// use std::path::Path;
/// use rein_storage::FsLayout;
///
/// let layout = FsLayout::new("/data");
/// let id = "run-1".parse()?;
/// assert_eq!(layout.ledger(&id), Path::new("/data/ledgers/run-1.jsonl"));
/// assert_eq!(layout.snapshot(&id), Path::new("/data/runs/run-1.json"));
/// assert_eq!(FsLayout::ledger_run("run-1.jsonl"), Some(id.clone()));
/// let (found, run) = FsLayout::of_ledger(Path::new("/data/ledgers/run-1.jsonl")).unwrap();
/// assert_eq!((found.root(), run), (Path::new("/data"), id));
/// # Ok::<(), rein_run::RunIdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsLayout {
    root: PathBuf,
}

impl FsLayout {
    /// The folder of the run snapshots.
    pub const RUNS: &'static str = "runs";
    /// The folder of the ledgers.
    pub const LEDGERS: &'static str = "ledgers";
    /// The folder of the artifacts.
    pub const ARTIFACTS: &'static str = "artifacts";
    /// The run index file.
    pub const INDEX: &'static str = "index.jsonl";
    /// The folder of the stop requests (`stops/<run id>.json`).
    pub const STOPS: &'static str = "stops";

    const LEDGER_SUFFIX: &'static str = ".jsonl";
    const SNAPSHOT_SUFFIX: &'static str = ".json";

    /// The layout under `root`.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The data directory itself.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder of the run snapshots.
    #[must_use]
    pub fn runs(&self) -> PathBuf {
        self.root.join(Self::RUNS)
    }

    /// The folder of the ledgers.
    #[must_use]
    pub fn ledgers(&self) -> PathBuf {
        self.root.join(Self::LEDGERS)
    }

    /// The folder of the artifacts.
    #[must_use]
    pub fn artifacts(&self) -> PathBuf {
        self.root.join(Self::ARTIFACTS)
    }

    /// The run index: what a listing knows of every run (see
    /// [`FsRunIndex`](crate::FsRunIndex)).
    #[must_use]
    pub fn index(&self) -> PathBuf {
        self.root.join(Self::INDEX)
    }

    /// Where the ledger of run `id` is.
    #[must_use]
    pub fn ledger(&self, id: &RunId) -> PathBuf {
        Self::ledger_in(&self.ledgers(), id)
    }

    /// Where the snapshot of run `id` is.
    #[must_use]
    pub fn snapshot(&self, id: &RunId) -> PathBuf {
        Self::snapshot_in(&self.runs(), id)
    }

    /// The two files of artifact `id`: its content (`artifacts/<2 hex>/<62 hex>.bin`) and
    /// its reference (`….json`).
    #[must_use]
    pub fn artifact(&self, id: &rein_artifact::ArtifactId) -> [PathBuf; 2] {
        let (folder, file) = id.shard();
        let shard = self.artifacts().join(folder);
        [
            shard.join(format!("{file}.bin")),
            shard.join(format!("{file}.json")),
        ]
    }

    /// The run whose ledger file is named `name` (`<run id>.jsonl`), if it is one.
    #[must_use]
    pub fn ledger_run(name: &str) -> Option<RunId> {
        name.strip_suffix(Self::LEDGER_SUFFIX)?.parse().ok()
    }

    /// The run whose snapshot file is named `name` (`<run id>.json`), if it is one.
    #[must_use]
    pub fn snapshot_run(name: &str) -> Option<RunId> {
        name.strip_suffix(Self::SNAPSHOT_SUFFIX)?.parse().ok()
    }

    /// The data directory and run of a path shaped `ROOT/ledgers/<run id>.jsonl` (a bare
    /// `ledgers/…` means the current directory). Nothing on disk is checked.
    #[must_use]
    pub fn of_ledger(path: &Path) -> Option<(Self, RunId)> {
        let run = Self::ledger_run(path.file_name()?.to_str()?)?;
        let ledgers = path.parent()?;
        if ledgers.file_name()? != Self::LEDGERS {
            return None;
        }
        let root = match ledgers.parent()? {
            p if p.as_os_str().is_empty() => Path::new("."),
            p => p,
        };
        Some((Self::new(root), run))
    }

    /// `<dir>/<run id>.jsonl`: the stores keep their own folder.
    pub(crate) fn ledger_in(dir: &Path, id: &RunId) -> PathBuf {
        // A run id is ASCII letters, digits, '-' and '_': always one plain file name.
        dir.join(format!("{id}{}", Self::LEDGER_SUFFIX))
    }

    /// `<dir>/<run id>.json`.
    pub(crate) fn snapshot_in(dir: &Path, id: &RunId) -> PathBuf {
        dir.join(format!("{id}{}", Self::SNAPSHOT_SUFFIX))
    }
}

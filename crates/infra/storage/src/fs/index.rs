//! `FsRunIndex`: one file in the data directory that remembers what a listing showed of
//! each run, and the stamp of the ledger and snapshot it was read from, so a listing
//! reads only the runs that changed since.

use std::collections::HashMap;
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use rein_run::RunId;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::FsLayout;
use super::file::{self, Opened};

/// The run index of a data directory, `<root>/index.jsonl`: for every run, a summary (what
/// a listing shows of it, of a type the caller chooses) and the [`Stamp`] of the files it
/// was read from.
///
/// [`refresh`](Self::refresh) lists the run files by name, takes each one's stamp (one
/// `lstat` per file, nothing read), and asks the caller to summarize only the runs whose
/// stamp changed: a ledger appended to, a snapshot replaced, a run new or gone. A listing of
/// a data directory where nothing changed therefore reads one file, whatever the number of
/// runs and the length of their ledgers.
///
/// - **Never trusted blindly.** A summary is kept only while both stamps are what they were
///   when it was made; the stamp is taken *before* the files are read, so a run written
///   while it is summarized is read again next time. A stamp (length, modification time and,
///   on Unix, inode) changes with every append and every atomic replacement.
/// - **A cache.** It is rebuilt from the ledgers when missing or unreadable (and said so in
///   [`Refreshed::rebuilt`]), written atomically (temporary file, rename) and never synced.
///   Processes listing at once each write a whole index; the last rename wins, and either
///   is a correct cache of what it read.
///
/// ```
/// use rein_storage::{FsLayout, FsRunIndex};
///
/// let root = tempfile::tempdir()?;
/// std::fs::create_dir_all(root.path().join("ledgers"))?;
/// std::fs::write(root.path().join("ledgers/run-1.jsonl"), "{}\n")?;
/// let index = FsRunIndex::new(&FsLayout::new(root.path()));
///
/// let mut read = 0;
/// let first = index.refresh(|id| { read += 1; id.to_string().len() })?;
/// assert_eq!((first.runs.len(), first.runs[0].summary, read), (1, 5, 1));
/// // Nothing changed: nothing is read again.
/// let again = index.refresh(|_| -> usize { unreachable!() })?;
/// assert_eq!((again.reread, again.runs[0].summary), (0, 5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FsRunIndex {
    layout: FsLayout,
    path: PathBuf,
}

/// What a file looked like when a summary was made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Its length in bytes.
    pub len: u64,
    /// Its modification time, in nanoseconds since the Unix epoch (0 when unknown).
    pub modified: u64,
    /// Its inode (0 off Unix): an atomic replacement changes it.
    pub inode: u64,
}

/// The stamps of a run's ledger and snapshot (`None`: the file is missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The ledger's.
    pub ledger: Option<FileStamp>,
    /// The snapshot's.
    pub snapshot: Option<FileStamp>,
}

/// One run in the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexedRun<T> {
    /// The run.
    pub id: RunId,
    /// The stamps its summary was made at.
    pub stamp: Stamp,
    /// What the caller made of it.
    pub summary: T,
}

/// The runs of a data directory, after a [`FsRunIndex::refresh`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Refreshed<T> {
    /// Every run with a ledger or a snapshot, by id (oldest first for uuid v7 ids).
    pub runs: Vec<IndexedRun<T>>,
    /// How many runs were summarized again (new or changed).
    pub reread: usize,
    /// Why the index was rebuilt from nothing, if it was: it was missing, unreadable, or of
    /// another version.
    pub rebuilt: Option<String>,
    /// Why the updated index could not be written, if it could not (a read-only data
    /// directory): the runs are still all here, read from their files.
    pub unsaved: Option<RunIndexError>,
}

/// Why the run index could not be refreshed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunIndexError {
    /// A folder of the data directory could not be listed, or a run file inspected.
    #[error("cannot read {path}: {source}; check that the data directory is readable")]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The index could not be written.
    #[error(
        "cannot write the run index {path}: {source}; check that the data directory is writable"
    )]
    Write {
        /// The index file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// The first line of the index: its format.
#[derive(Serialize, Deserialize)]
struct Header {
    rein_run_index: u32,
}

impl FsRunIndex {
    /// The format written; an index of another one is rebuilt.
    const VERSION: u32 = 1;

    /// The index of the data directory laid out as `layout`. Touches nothing on disk.
    #[must_use]
    pub fn new(layout: &FsLayout) -> Self {
        Self {
            layout: layout.clone(),
            path: layout.index(),
        }
    }

    /// The index of the data directory laid out as `layout`, kept in the file `name` at its
    /// root instead of `index.jsonl`: for a reader whose summaries are of another type than
    /// the CLI's (the console), so that neither throws the other's away. Touches nothing.
    #[must_use]
    pub fn named(layout: &FsLayout, name: &str) -> Self {
        Self {
            layout: layout.clone(),
            path: layout.root().join(name),
        }
    }

    /// The index file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Brings the index up to date and returns every run: the summaries of unchanged runs
    /// as stored, `summarize(id)` for the others (new, changed, or all of them when the
    /// index is rebuilt). Writes the index back when anything changed.
    ///
    /// `summarize` is called after the run's stamp is taken, so what it reads is at least
    /// as new as the stamp says.
    ///
    /// # Errors
    /// [`RunIndexError`] when the data directory cannot be listed or a run file inspected.
    /// An index that cannot be read is not an error (it is rebuilt), nor one that cannot be
    /// written ([`Refreshed::unsaved`]).
    pub fn refresh<T, F>(&self, summarize: F) -> Result<Refreshed<T>, RunIndexError>
    where
        T: Serialize + DeserializeOwned,
        F: FnMut(&RunId) -> T,
    {
        let (known, rebuilt) = match self.read::<T>() {
            Ok(known) => (known, None),
            Err(why) => (HashMap::new(), Some(why)),
        };
        self.update(known, rebuilt, summarize)
    }

    /// As [`refresh`](Self::refresh), from `kept` (the runs an earlier refresh of this index
    /// returned, kept in memory by a long-lived reader) instead of the index file: the file
    /// is neither read nor parsed, only written when anything changed. Every stamp is still
    /// checked, so `kept` is never trusted blindly.
    ///
    /// # Errors
    /// As [`refresh`](Self::refresh).
    pub fn refresh_kept<T, F>(
        &self,
        kept: Vec<IndexedRun<T>>,
        summarize: F,
    ) -> Result<Refreshed<T>, RunIndexError>
    where
        T: Serialize + DeserializeOwned,
        F: FnMut(&RunId) -> T,
    {
        let known = kept.into_iter().map(|run| (run.id.clone(), run)).collect();
        self.update(known, None, summarize)
    }

    /// The runs of the data directory now, from `known` where their stamps still match.
    fn update<T, F>(
        &self,
        mut known: HashMap<RunId, IndexedRun<T>>,
        rebuilt: Option<String>,
        mut summarize: F,
    ) -> Result<Refreshed<T>, RunIndexError>
    where
        T: Serialize + DeserializeOwned,
        F: FnMut(&RunId) -> T,
    {
        let ids = self.run_ids()?;
        let mut reread = 0;
        let mut runs = Vec::with_capacity(ids.len());
        for id in ids {
            let stamp = self.stamp(&id)?;
            let run = match known.remove(&id) {
                Some(run) if run.stamp == stamp => run,
                _ => {
                    reread += 1;
                    let summary = summarize(&id);
                    IndexedRun { id, stamp, summary }
                }
            };
            runs.push(run);
        }
        // Runs gone since (pruned, moved away) are left out: the index changed too. An
        // index that cannot be written is only a cache lost: the listing stands.
        let changed = reread > 0 || !known.is_empty() || rebuilt.is_some();
        let unsaved = changed.then(|| self.write(&runs).err()).flatten();
        Ok(Refreshed {
            runs,
            reread,
            rebuilt,
            unsaved,
        })
    }

    /// Removes run `id` from the index (after its files were removed), so a reader never
    /// finds a row for a run that is gone. A missing index is left missing.
    ///
    /// # Errors
    /// As [`refresh`](Self::refresh).
    pub fn forget<T>(&self, ids: &[RunId]) -> Result<(), RunIndexError>
    where
        T: Serialize + DeserializeOwned,
    {
        let Ok(mut known) = self.read::<T>() else {
            return Ok(());
        };
        let before = known.len();
        for id in ids {
            known.remove(id);
        }
        if known.len() == before {
            return Ok(());
        }
        let mut runs: Vec<IndexedRun<T>> = known.into_values().collect();
        runs.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        self.write(&runs)
    }

    /// The stored index, by run; why it cannot be used, if it cannot.
    fn read<T: DeserializeOwned>(&self) -> Result<HashMap<RunId, IndexedRun<T>>, String> {
        let opened = file::open_regular(&self.path, fs::OpenOptions::new().read(true))
            .map_err(|e| format!("it could not be opened ({e})"))?;
        let stored = match opened {
            Opened::File(stored, _) => stored,
            Opened::Missing => return Err("there was none".to_owned()),
            Opened::Foreign(found) => return Err(format!("it is {found}")),
        };
        let mut lines = BufReader::new(stored).lines();
        let header = lines
            .next()
            .ok_or_else(|| "it was empty".to_owned())?
            .map_err(|e| format!("it could not be read ({e})"))?;
        match serde_json::from_str::<Header>(&header) {
            Ok(h) if h.rein_run_index == Self::VERSION => {}
            Ok(h) => {
                return Err(format!(
                    "it has format {}, not {}",
                    h.rein_run_index,
                    Self::VERSION
                ));
            }
            Err(e) => return Err(format!("its first line is not an index header ({e})")),
        }
        let mut known = HashMap::new();
        for (number, line) in lines.enumerate() {
            let line = line.map_err(|e| format!("it could not be read ({e})"))?;
            let run: IndexedRun<T> = serde_json::from_str(&line)
                .map_err(|e| format!("line {} is not an index entry ({e})", number + 2))?;
            known.insert(run.id.clone(), run);
        }
        Ok(known)
    }

    fn write<T: Serialize>(&self, runs: &[IndexedRun<T>]) -> Result<(), RunIndexError> {
        let failed = |source| RunIndexError::Write {
            path: self.path.clone(),
            source,
        };
        let mut bytes = Vec::with_capacity(64 + runs.len() * 256);
        push_line(
            &mut bytes,
            &Header {
                rein_run_index: Self::VERSION,
            },
        )
        .map_err(failed)?;
        for run in runs {
            push_line(&mut bytes, run).map_err(failed)?;
        }
        // A cache: replaced whole, never synced (it is rebuilt from the ledgers).
        file::replace(&self.path, &bytes, file::Sync::Relaxed).map_err(failed)
    }

    /// The runs with a ledger or a snapshot, by id.
    fn run_ids(&self) -> Result<Vec<RunId>, RunIndexError> {
        let mut ids = Vec::new();
        /// A folder of the data directory and how its file names name runs.
        type Folder = (PathBuf, fn(&str) -> Option<RunId>);
        let folders: [Folder; 2] = [
            (self.layout.ledgers(), FsLayout::ledger_run),
            (self.layout.runs(), FsLayout::snapshot_run),
        ];
        for (dir, run_of) in folders {
            let read = |source| RunIndexError::Read {
                path: dir.clone(),
                source,
            };
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(read(e)),
            };
            for entry in entries {
                let name = entry.map_err(read)?.file_name();
                if let Some(id) = name.to_str().and_then(run_of) {
                    ids.push(id);
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// The stamps of run `id`'s files.
    fn stamp(&self, id: &RunId) -> Result<Stamp, RunIndexError> {
        Ok(Stamp {
            ledger: file_stamp(&self.layout.ledger(id))?,
            snapshot: file_stamp(&self.layout.snapshot(id))?,
        })
    }
}

/// The stamp of the file at `path`, `None` when nothing is there. A symbolic link is
/// stamped as itself, never followed.
fn file_stamp(path: &Path) -> Result<Option<FileStamp>, RunIndexError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(RunIndexError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Ok(Some(FileStamp {
        len: meta.len(),
        modified,
        inode,
    }))
}

/// Appends `value` to `out` as one compact JSON line.
fn push_line(out: &mut Vec<u8>, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

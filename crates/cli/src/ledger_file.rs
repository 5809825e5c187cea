//! Reading a ledger file (one JSON entry per line) and verifying its hash chain — and, for
//! a ledger in the data directory, that it reaches the head its run's snapshot was saved
//! after — straight from the bytes on disk, writing nothing; and what a run's ledger says
//! about the run.

use std::path::{Path, PathBuf};

use rein::ledger::{Entry, LedgerLines, RunOutline, TornTail, VerifyError};
use rein::run::{LedgerHead, Timestamp};
use rein::{Ledger, Run, RunId};

use crate::datadir::DataDir;
use crate::exit::{CliError, Exit};

/// A ledger file as read.
#[derive(Debug)]
pub(crate) struct LedgerFile {
    /// The entries that could be read, in file order.
    pub(crate) entries: Vec<Entry>,
    /// A torn final line (no newline): the process died while writing it. It is not part
    /// of the chain, exactly as the store cuts it when the run is opened.
    pub(crate) torn: Option<TornTail>,
    /// Whether the chain verifies, and reaches its run snapshot's head.
    pub(crate) verdict: Result<(), Broken>,
    /// What the ledger was checked against besides itself.
    pub(crate) anchor: Anchor,
}

/// The run snapshot a ledger is checked against: the engine saves a snapshot only after
/// appending the entries it reflects, and records the head (last entry) it was saved after,
/// so a ledger that is only ever appended to reaches that head.
#[derive(Debug, Clone)]
pub(crate) enum Anchor {
    /// The ledger file is not the data directory's ledger of its run, so no snapshot belongs
    /// to it.
    Outside,
    /// The data directory holds no snapshot of the run.
    NoSnapshot(PathBuf),
    /// The snapshot could not be read.
    Unreadable(PathBuf, String),
    /// The snapshot was saved before rein recorded ledger heads.
    NoHead(PathBuf),
    /// The ledger reaches the head the snapshot records (or was not checked, being broken).
    Head(PathBuf, LedgerHead),
}

impl Anchor {
    /// A line saying what the end of the chain was checked against, for `ledger verify`.
    pub(crate) fn describe(&self, data: &DataDir) -> String {
        let unchecked = "so entries cut from the end of the chain cannot be detected";
        match self {
            Self::Outside => format!(
                "note: this file is not a ledger of data directory {}; without its run snapshot, {unchecked}",
                data.shown()
            ),
            Self::NoSnapshot(path) => {
                format!("note: no run snapshot at {}; {unchecked}", path.display())
            }
            Self::Unreadable(path, reason) => format!(
                "note: the run snapshot {} could not be read ({reason}); {unchecked}",
                path.display()
            ),
            Self::NoHead(path) => format!(
                "note: the run snapshot {} was saved before rein recorded ledger heads; {unchecked}",
                path.display()
            ),
            Self::Head(path, head) => format!(
                "reaches entry {}, the head run snapshot {} was saved after ✓",
                head.seq,
                path.display()
            ),
        }
    }
}

/// Why a ledger does not verify.
#[derive(Debug, Clone)]
pub(crate) enum Broken {
    /// The chain breaks at an entry.
    Chain(VerifyError),
    /// A line (not the last) is not a ledger entry.
    Unreadable {
        /// The line, from 1 (one entry per line, so also the entry's number).
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The ledger file is missing or empty although its run's snapshot was saved after
    /// entries were appended to it: every entry was cut.
    Gone {
        /// The snapshot.
        snapshot: PathBuf,
        /// The head it records.
        head: LedgerHead,
        /// Whether the file is missing (rather than empty).
        missing: bool,
    },
    /// The chain verifies, but does not reach the head its run's snapshot was saved after:
    /// whole entries were cut from its end, or it was rewritten from that entry on.
    BehindSnapshot {
        /// The snapshot.
        snapshot: PathBuf,
        /// The head it records.
        head: LedgerHead,
        /// The ledger's last sequence number (0 for none).
        last: u64,
    },
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Chain(e) => write!(f, "{e}"),
            Self::Unreadable { line, reason } => write!(
                f,
                "entry {line} (line {line}) is not a readable ledger entry: {reason}"
            ),
            Self::Gone {
                snapshot,
                head,
                missing,
            } => write!(
                f,
                "the ledger falls short of its run snapshot: {} was saved after ledger {head}, but the ledger file {}; restore it from a backup",
                snapshot.display(),
                if *missing {
                    "is missing (deleted or moved)"
                } else {
                    "is empty (every entry was cut)"
                }
            ),
            Self::BehindSnapshot {
                snapshot,
                head,
                last,
            } => {
                let found = if *last < head.seq {
                    format!("the ledger ends at entry {last}: its last entries were cut")
                } else {
                    format!(
                        "the ledger's entry {} has another hash: the ledger was rewritten or replaced",
                        head.seq
                    )
                };
                write!(
                    f,
                    "the ledger falls short of its run snapshot: {} was saved after ledger {head}, but {found}; restore the ledger file from a backup (nothing was written to it)",
                    snapshot.display()
                )
            }
        }
    }
}

impl LedgerFile {
    /// The run whose stored scenario rebuilds run `id`: its own; for a child run (which has
    /// none), its parent's, up to the root of its tree; for a follow-up (which has none
    /// either), the run's it continues, up to the first run of its conversation.
    pub(crate) fn scenario_owner(data: &DataDir, id: &RunId) -> RunId {
        let mut owner = id.clone();
        let mut seen = std::collections::HashSet::new();
        while !data.scenario(&owner).is_file() && seen.insert(owner.clone()) {
            let parent = Self::read(&data.ledger(&owner), Some(&owner), data)
                .ok()
                .and_then(|file| {
                    file.entries.iter().find_map(|e| match e.event() {
                        rein::ledger::EntryKind::ChildOf { parent, .. } => Some(parent.clone()),
                        rein::ledger::EntryKind::FollowUpOf { previous, .. } => {
                            Some(previous.clone())
                        }
                        _ => None,
                    })
                });
            match parent {
                Some(parent) => owner = parent,
                None => return id.clone(),
            }
        }
        owner
    }

    /// Reads the ledger at `path`; `expected` is the run it must belong to, if known. When
    /// the file is the ledger of a run in `data`, it is also checked against the run's
    /// snapshot there: the snapshot is read first (a live `rein run` appends entries before
    /// it saves a snapshot, so a ledger read after it reaches the head it records).
    ///
    /// # Errors
    /// Bad input when the file does not exist, is empty, or is not a ledger at all (its
    /// first line is not an entry).
    pub(crate) fn read(
        path: &Path,
        expected: Option<&RunId>,
        data: &DataDir,
    ) -> Result<Self, CliError> {
        let anchor = Self::anchor(path, expected, data);
        if let Anchor::Head(snapshot, head) = &anchor {
            // A snapshot saved after entries were appended: a ledger without any entry falls
            // short of it, whatever removed them.
            let missing = match std::fs::read(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(true),
                Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Some(false),
                _ => None,
            };
            if let Some(missing) = missing {
                return Ok(Self {
                    entries: Vec::new(),
                    torn: None,
                    verdict: Err(Broken::Gone {
                        snapshot: snapshot.clone(),
                        head: *head,
                        missing,
                    }),
                    anchor,
                });
            }
        }
        let mut file = Self::read_file(path, expected)?;
        if let (Ok(()), Anchor::Head(snapshot, head)) = (&file.verdict, &anchor)
            && !Ledger::entries_reach(&file.entries, head)
        {
            file.verdict = Err(Broken::BehindSnapshot {
                snapshot: snapshot.clone(),
                head: *head,
                last: file.entries.last().map_or(0, Entry::seq),
            });
        }
        file.anchor = anchor;
        Ok(file)
    }

    /// The snapshot of the run whose ledger in `data` is `path`, if it is one.
    pub(crate) fn anchor(path: &Path, expected: Option<&RunId>, data: &DataDir) -> Anchor {
        let id = expected.cloned().or_else(|| {
            let id = rein::store::FsLayout::ledger_run(path.file_name()?.to_str()?)?;
            let ours = data.ledger(&id).canonicalize().ok()?;
            (path.canonicalize().ok()? == ours).then_some(id)
        });
        let Some(id) = id else {
            return Anchor::Outside;
        };
        let snapshot = data.snapshot(&id);
        let bytes = match std::fs::read(&snapshot) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Anchor::NoSnapshot(snapshot);
            }
            Err(e) => return Anchor::Unreadable(snapshot, e.to_string()),
        };
        match serde_json::from_slice::<Run>(&bytes) {
            Ok(run) if run.id() != &id => Anchor::Unreadable(
                snapshot,
                format!("it is the snapshot of run {}, not {id}", run.id()),
            ),
            Ok(run) => match run.ledger_head() {
                Some(head) => Anchor::Head(snapshot, head),
                None => Anchor::NoHead(snapshot),
            },
            Err(e) => Anchor::Unreadable(snapshot, e.to_string()),
        }
    }

    /// Reads the ledger at `path` and verifies its chain, nothing else.
    fn read_file(path: &Path, expected: Option<&RunId>) -> Result<Self, CliError> {
        let bytes = std::fs::read(path).map_err(|e| {
            let what = if e.kind() == std::io::ErrorKind::NotFound {
                "no such file".to_owned()
            } else {
                e.to_string()
            };
            CliError::bad_input(format!("cannot read ledger {}: {what}", path.display()))
        })?;
        let not_a_ledger = |why: String| {
            CliError::bad_input(format!(
                "{} is not a rein ledger: {why}; a ledger has one JSON entry per line, as `rein run` writes under DATA_DIR/ledgers/",
                path.display()
            ))
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(not_a_ledger("it is empty".to_owned()));
        }
        let lines = LedgerLines::split(&bytes);
        let torn = lines.torn();
        let mut entries = Vec::with_capacity(usize::try_from(lines.count()).unwrap_or(0));
        let mut unreadable = None;
        for entry in lines.entries() {
            match entry {
                Ok(entry) => entries.push(entry),
                Err(e) if e.line == 1 => {
                    return Err(not_a_ledger(format!(
                        "line 1 is not a ledger entry ({})",
                        e.source
                    )));
                }
                Err(e) => {
                    unreadable = Some(Broken::Unreadable {
                        line: e.line,
                        reason: e.source.to_string(),
                    });
                    break;
                }
            }
        }
        let Some(first) = entries.first() else {
            return Err(not_a_ledger(
                "it has no complete line: its only line ends without a newline (a write cut short)"
                    .to_owned(),
            ));
        };
        let verdict = match unreadable {
            Some(broken) => Err(broken),
            None => {
                let run = expected.cloned().unwrap_or_else(|| first.run_id().clone());
                Ledger::verify_entries(&run, &entries).map_err(Broken::Chain)
            }
        };
        Ok(Self {
            entries,
            torn,
            verdict,
            anchor: Anchor::Outside,
        })
    }

    /// Reads and insists that the chain verifies.
    ///
    /// # Errors
    /// As [`LedgerFile::read`], and exit 4 naming the first broken entry, or the head of
    /// the run's snapshot the ledger falls short of.
    pub(crate) fn read_verified(
        path: &Path,
        expected: Option<&RunId>,
        data: &DataDir,
    ) -> Result<Self, CliError> {
        let file = Self::read(path, expected, data)?;
        if let Err(broken) = &file.verdict {
            return Err(CliError::new(
                Exit::LedgerBroken,
                format!("ledger {} failed verification: {broken}", path.display()),
            ));
        }
        Ok(file)
    }

    /// The run the ledger belongs to: `expected` if given, else its first entry's.
    pub(crate) fn run_id(&self, expected: Option<&RunId>) -> Option<RunId> {
        expected
            .cloned()
            .or_else(|| self.entries.first().map(|e| e.run_id().clone()))
    }

    /// What the ledger says about its run.
    pub(crate) fn outline(&self) -> RunOutline {
        RunOutline::of(&self.entries)
    }

    /// When the run started: the time of its first entry.
    pub(crate) fn started(&self) -> Option<Timestamp> {
        self.entries.first().map(Entry::at)
    }
}

//! Reading a ledger file (one JSON entry per line) and verifying its hash chain — straight
//! from the bytes on disk, writing nothing — and what a run's ledger says about the run.

use std::path::Path;

use rein::{Entry, EntryKind, Ledger, RunId, RunStatus, State, Timestamp, VerifyError};

use crate::exit::{CliError, Exit};

/// A ledger file as read.
#[derive(Debug)]
pub(crate) struct LedgerFile {
    /// The entries that could be read, in file order.
    pub(crate) entries: Vec<Entry>,
    /// A torn final line (no newline, unreadable): the process died while writing it.
    pub(crate) torn: Option<Torn>,
    /// Whether the chain verifies.
    pub(crate) verdict: Result<(), Broken>,
}

/// A torn final line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Torn {
    /// Its line number.
    pub(crate) line: usize,
    /// Its length.
    pub(crate) bytes: usize,
}

/// Why a ledger does not verify.
#[derive(Debug, Clone)]
pub(crate) enum Broken {
    /// The chain breaks at an entry.
    Chain(VerifyError),
    /// A line (not the last) is not a ledger entry.
    Unreadable {
        /// The line, from 1 (one entry per line, so also the entry's number).
        line: usize,
        /// What is wrong with it.
        reason: String,
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
        }
    }
}

impl LedgerFile {
    /// Reads the ledger at `path`; `expected` is the run it must belong to, if known.
    ///
    /// # Errors
    /// Bad input when the file does not exist, is empty, or is not a ledger at all (its
    /// first line is not an entry).
    pub(crate) fn read(path: &Path, expected: Option<&RunId>) -> Result<Self, CliError> {
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
        let complete = bytes.ends_with(b"\n");
        let lines: Vec<&[u8]> = bytes
            .strip_suffix(b"\n")
            .unwrap_or(&bytes)
            .split(|&b| b == b'\n')
            .collect();
        let mut entries = Vec::with_capacity(lines.len());
        let mut torn = None;
        let mut unreadable = None;
        for (i, line) in lines.iter().enumerate() {
            match serde_json::from_slice::<Entry>(line) {
                Ok(entry) => entries.push(entry),
                Err(e) if i == 0 => {
                    return Err(not_a_ledger(format!("line 1 is not a ledger entry ({e})")));
                }
                Err(_) if i + 1 == lines.len() && !complete => {
                    torn = Some(Torn {
                        line: i + 1,
                        bytes: line.len(),
                    });
                }
                Err(e) => {
                    unreadable = Some(Broken::Unreadable {
                        line: i + 1,
                        reason: e.to_string(),
                    });
                    break;
                }
            }
        }
        let verdict = match unreadable {
            Some(broken) => Err(broken),
            None => {
                let run = expected
                    .cloned()
                    .unwrap_or_else(|| entries[0].run_id().clone());
                Ledger::verify_entries(&run, &entries).map_err(Broken::Chain)
            }
        };
        Ok(Self {
            entries,
            torn,
            verdict,
        })
    }

    /// Reads and insists that the chain verifies.
    ///
    /// # Errors
    /// As [`LedgerFile::read`], and exit 4 naming the first broken entry.
    pub(crate) fn read_verified(path: &Path, expected: Option<&RunId>) -> Result<Self, CliError> {
        let file = Self::read(path, expected)?;
        if let Err(broken) = &file.verdict {
            return Err(CliError::new(
                Exit::LedgerBroken,
                format!("ledger {} failed verification: {broken}", path.display()),
            ));
        }
        Ok(file)
    }

    /// What the ledger says about its run.
    pub(crate) fn info(&self) -> RunInfo {
        RunInfo::of(&self.entries)
    }
}

/// A run as its ledger tells it: enough to list it.
#[derive(Debug, Clone)]
pub(crate) struct RunInfo {
    /// The run.
    pub(crate) id: Option<RunId>,
    /// Its goal.
    pub(crate) goal: String,
    /// Its status.
    pub(crate) status: RunStatus,
    /// Its state.
    pub(crate) state: State,
    /// Decisions taken.
    pub(crate) steps: u32,
    /// When it started.
    pub(crate) started: Option<Timestamp>,
}

impl RunInfo {
    /// Reads `entries`, oldest first.
    pub(crate) fn of(entries: &[Entry]) -> Self {
        let mut info = Self {
            id: entries.first().map(|e| e.run_id().clone()),
            goal: String::new(),
            status: RunStatus::Running,
            state: State::Intake,
            steps: 0,
            started: entries.first().map(Entry::at),
        };
        for entry in entries {
            match entry.event() {
                EntryKind::RunStarted { goal, .. } => info.goal.clone_from(goal),
                EntryKind::Decision { .. } => info.steps += 1,
                EntryKind::Transition { to, .. } => info.state = *to,
                EntryKind::RunCompleted { .. } => {
                    info.status = RunStatus::Completed;
                    info.state = State::Done;
                }
                EntryKind::RunFailed { .. } => {
                    info.status = RunStatus::Failed;
                    info.state = State::Failed;
                }
                EntryKind::RunPaused { .. } => info.status = RunStatus::Paused,
                EntryKind::RunInterrupted { .. } => info.status = RunStatus::Interrupted,
                EntryKind::RunResumed { .. } | EntryKind::HumanInputReceived { .. } => {
                    info.status = RunStatus::Running;
                }
                _ => {}
            }
        }
        info
    }
}

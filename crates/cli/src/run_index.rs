//! What `rein runs list` and `rein runs prune` know of each run, read from its ledger (the
//! source of truth) and checked against its snapshot, kept in the data directory's run
//! index so that only runs whose files changed are read again.

use rein::ledger::EntryKind;
use rein::run::Timestamp;
use rein::store::{FsRunIndex, IndexedRun};
use rein::{RunId, RunStatus};
use serde::{Deserialize, Serialize};

use crate::datadir::DataDir;
use crate::exit::{CliError, Exit};
use crate::ledger_file::{Anchor, Broken, LedgerFile};
use crate::text::truncate;

/// The status shown for a run that waits for a verdict.
pub(crate) const WAITING_APPROVAL: &str = "WAITING-APPROVAL";

/// The status shown for a run whose ledger does not verify.
pub(crate) const BROKEN: &str = "BROKEN";

/// The status shown for a run whose ledger cannot be read.
pub(crate) const UNREADABLE: &str = "unreadable";

/// One run, as its ledger describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunSummary {
    /// The status shown: the run's, or `WAITING-APPROVAL`, `BROKEN`, `unreadable`.
    pub(crate) shown: String,
    /// The run's status by its ledger, when the ledger was read and verified.
    pub(crate) status: Option<RunStatus>,
    /// The state it is in.
    pub(crate) state: String,
    /// How many decisions it made.
    pub(crate) decisions: u32,
    /// When its first and its last entry were recorded (Unix milliseconds).
    pub(crate) started: Option<u64>,
    pub(crate) last: Option<u64>,
    /// What the listing shows after the columns: the goal, what it waits for, or why the
    /// ledger is broken or unreadable.
    pub(crate) detail: String,
    /// The run that delegated to it (its `child_of` entry).
    pub(crate) parent: Option<RunId>,
    /// The child runs it started (its `child_started` entries).
    pub(crate) children: Vec<RunId>,
    /// The run it follows up on (its `follow_up_of` entry): the run before it in its
    /// conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) follows: Option<RunId>,
    /// How its snapshot disagrees with its ledger, if it does.
    pub(crate) snapshot: Option<String>,
}

impl RunSummary {
    /// Whether the run has ended (completed or failed) and its ledger verifies: the only
    /// runs a prune may remove.
    pub(crate) fn finished(&self) -> bool {
        matches!(self.status, Some(RunStatus::Completed | RunStatus::Failed))
            && self.shown != BROKEN
    }

    /// Reads run `id`'s ledger (and its snapshot) into its summary.
    pub(crate) fn read(data: &DataDir, id: &RunId) -> Self {
        let file = match LedgerFile::read(&data.ledger(id), Some(id), data) {
            Err(e) => {
                return Self {
                    shown: UNREADABLE.to_owned(),
                    status: None,
                    state: String::new(),
                    decisions: 0,
                    started: None,
                    last: None,
                    detail: e.to_string(),
                    parent: None,
                    children: Vec::new(),
                    follows: None,
                    snapshot: None,
                };
            }
            Ok(file) => file,
        };
        let parent = file.entries.iter().find_map(|e| match e.event() {
            EntryKind::ChildOf { parent, .. } => Some(parent.clone()),
            _ => None,
        });
        let follows = file.entries.iter().take(4).find_map(|e| match e.event() {
            EntryKind::FollowUpOf { previous, .. } => Some(previous.clone()),
            _ => None,
        });
        let children = file
            .entries
            .iter()
            .filter_map(|e| match e.event() {
                EntryKind::ChildStarted { child, .. } => Some(child.clone()),
                _ => None,
            })
            .collect();
        let info = file.outline();
        let waiting = crate::tree::pending_approval(&file.entries).map(|pending| {
            format!(
                "{} (risk {}, step {})",
                pending.tool, pending.risk, pending.step
            )
        });
        let shown = if file.verdict.is_err() {
            BROKEN.to_owned()
        } else if waiting.is_some() {
            WAITING_APPROVAL.to_owned()
        } else {
            info.status.to_string()
        };
        let detail = match (&file.verdict, waiting) {
            (Ok(()), Some(waiting)) => format!("{waiting} — {}", truncate(&info.goal, 40)),
            (Err(Broken::Gone { missing, .. }), _) => format!(
                "(the ledger {}: it falls short of its run snapshot; `rein ledger verify {id}` says more)",
                if *missing { "is missing" } else { "is empty" }
            ),
            _ => truncate(&info.goal, 60),
        };
        let last_seq = file.entries.last().map_or(0, rein::ledger::Entry::seq);
        let settled = info.status != RunStatus::Running;
        let snapshot = match (&file.anchor, &file.verdict) {
            (Anchor::NoSnapshot(_), Ok(())) if settled => {
                Some("its snapshot is missing".to_owned())
            }
            (Anchor::Unreadable(_, reason), _) => {
                Some(format!("its snapshot could not be read ({reason})"))
            }
            (Anchor::Head(_, head), Ok(())) if settled && head.seq < last_seq => Some(format!(
                "its snapshot is behind its ledger (saved after entry {}, the ledger ends at entry {last_seq})",
                head.seq
            )),
            _ => None,
        };
        Self {
            status: file.verdict.is_ok().then_some(info.status),
            shown,
            state: info.state().as_str().to_owned(),
            decisions: info.decisions,
            started: file.started().map(Timestamp::as_unix_millis),
            last: file.entries.last().map(|e| e.at().as_unix_millis()),
            detail,
            parent,
            children,
            follows,
            snapshot,
        }
    }
}

/// Every run in `data`, through its run index: runs whose files changed since the index was
/// written are read again (and the index rewritten), the others come from the index.
///
/// # Errors
/// Exit 1 when the data directory cannot be listed (an index that cannot be written is
/// said on stderr, and the listing goes on).
pub(crate) fn runs(data: &DataDir) -> Result<Vec<IndexedRun<RunSummary>>, CliError> {
    let index = FsRunIndex::new(&data.layout());
    let refreshed = index
        .refresh(|id| RunSummary::read(data, id))
        .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?;
    if let Some(e) = refreshed.unsaved {
        eprintln!("note: {e}; the listing is whole, the next one reads the changed runs again");
    }
    Ok(refreshed.runs)
}

//! The conversation a ledger continues: from a follow-up's `follow_up_of` entry back to the
//! first run of its conversation, each earlier ledger read from the data directory,
//! verified, and checked against the run after it — it ends exactly at the head that run
//! recorded, and the turns count down by one (`rein ledger verify`).

use rein::RunId;
use rein::conversation::MAX_CONVERSATION_RUNS;
use rein::ledger::{Entry, EntryKind};
use rein::run::LedgerHead;

use crate::datadir::DataDir;
use crate::exit::{CliError, Exit};
use crate::ledger_file::LedgerFile;

/// A run's `follow_up_of` link: the run it continues, that run's head, its own turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) previous: RunId,
    pub(crate) head: LedgerHead,
    pub(crate) turn: u32,
}

impl Link {
    /// The link `entry` records, if it is a `follow_up_of` entry.
    pub(crate) fn of(entry: &Entry) -> Option<Self> {
        match entry.event() {
            EntryKind::FollowUpOf {
                previous,
                previous_head,
                turn,
            } => Some(Self {
                previous: previous.clone(),
                head: *previous_head,
                turn: *turn,
            }),
            _ => None,
        }
    }
}

/// Verifies the runs before run `run`, whose ledger (verified) records `link`: returns
/// their ids, oldest first.
///
/// # Errors
/// As [`read`].
pub(crate) fn check(run: &RunId, link: Link, data: &DataDir) -> Result<Vec<RunId>, CliError> {
    Ok(read(run, link, data)?
        .into_iter()
        .map(|(id, _)| id)
        .collect())
}

/// Reads and verifies the runs before run `run`, whose ledger (verified) records `link`:
/// each run's id and entries, oldest first (at most [`MAX_CONVERSATION_RUNS`] of them).
///
/// # Errors
/// Exit 4 naming the two runs and what is wrong: an earlier ledger that is missing, does
/// not verify, does not end at the recorded head, or a turn out of step.
pub(crate) fn read(
    run: &RunId,
    link: Link,
    data: &DataDir,
) -> Result<Vec<(RunId, Vec<Entry>)>, CliError> {
    let mut earlier = Vec::new();
    let (mut later, mut link) = (run.clone(), link);
    loop {
        let broken = |why: String| {
            CliError::new(
                Exit::LedgerBroken,
                format!(
                    "the conversation is broken between run {} and the run it follows up on, {}: {why} ✗",
                    later, link.previous
                ),
            )
        };
        if earlier.len() >= MAX_CONVERSATION_RUNS as usize {
            return Err(broken(format!(
                "the conversation is longer than {MAX_CONVERSATION_RUNS} runs, longer than any \
                 rein grows; its ledgers were assembled or edited by hand"
            )));
        }
        let path = data.ledger(&link.previous);
        if !path.is_file() {
            return Err(broken(format!("{} does not exist", path.display())));
        }
        let file = LedgerFile::read(&path, Some(&link.previous), data)?;
        if let Err(why) = &file.verdict {
            return Err(broken(format!("its ledger failed verification: {why}")));
        }
        let last = file.entries.last().map(Entry::head);
        if last != Some(link.head) {
            return Err(broken(format!(
                "the later run recorded its ledger ending at {}, but it ends at {}",
                link.head,
                last.map_or_else(|| "no entry".to_owned(), |h| h.to_string())
            )));
        }
        let before = file.entries.iter().take(4).find_map(Link::of);
        let turn = before.as_ref().map_or(0, |l| l.turn);
        if link.turn != turn.saturating_add(1) {
            return Err(broken(format!(
                "the later run is turn {} of the conversation, the earlier one turn {turn}",
                link.turn
            )));
        }
        earlier.push((link.previous.clone(), file.entries));
        match before {
            Some(next) => {
                later = std::mem::replace(&mut link, next).previous;
            }
            None => break,
        }
    }
    earlier.reverse();
    Ok(earlier)
}

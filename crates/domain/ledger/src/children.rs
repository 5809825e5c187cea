//! `ChildLink`: the children a run's ledger records (each `child_started`, and the
//! `child_ended` that settles it), with the rules their entries keep: a child starts once,
//! ends at most once and only after it started, and nothing about a child is recorded after
//! the run itself ended. The one reading of a parent's side of a tree of runs, for every
//! verifier of a tree (the engine's, the CLI's) and the replay.

use rein_run::{ChildOutcome, LedgerHead, RunId, Spend};

use crate::{Entry, EntryKind, Ledger};

/// A child run as its parent's ledger records it.
///
/// ```
/// use rein_ledger::{ChildLinkError, EntryKind, Ledger};
/// use rein_run::{LedgerHead, State, Timestamp};
/// use serde_json::json;
///
/// let t = Timestamp::from_unix_millis(0);
/// let mut ledger = Ledger::new("parent".parse()?);
/// ledger.append(t, State::Intake, EntryKind::RunStarted { goal: "g".into(), vars: Default::default(), policy: json!({}).into() });
/// ledger.append(t, State::Explore, EntryKind::ChildStarted { child: "child".parse()?, goal: "look".into(), carved: Default::default(), planner: None });
/// let links = ledger.child_links()?;
/// assert_eq!(links.len(), 1);
/// assert_eq!((links[0].child.as_str(), links[0].started.seq, links[0].ended.is_none()), ("child", 2, true));
///
/// // A child started after the run ended is refused, naming both entries.
/// ledger.append(t, State::Done, EntryKind::RunCompleted { summary: "done".into(), result: json!(null) });
/// ledger.append(t, State::Done, EntryKind::ChildStarted { child: "forged".parse()?, goal: "g".into(), carved: Default::default(), planner: None });
/// let err = ledger.child_links().unwrap_err();
/// assert!(matches!(err, ChildLinkError::AfterEnd { seq: 4, ended: 3, .. }));
/// assert_eq!(err.child().as_str(), "forged");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChildLink {
    /// The child run.
    pub child: RunId,
    /// The parent's `child_started` entry: the child's `child_of` entry names it.
    pub started: LedgerHead,
    /// How the child ended, if the parent recorded it.
    pub ended: Option<ChildEnd>,
}

/// The end of a child, as its parent recorded it in a `child_ended` entry.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChildEnd {
    /// The parent's `child_ended` entry.
    pub recorded: LedgerHead,
    /// The last entry of the child's ledger when it ended: its ledger ends exactly there.
    pub head: LedgerHead,
    /// How it ended.
    pub outcome: ChildOutcome,
    /// What it spent, charged to the parent.
    pub spent: Spend,
}

/// What is wrong with the children a parent's ledger records: each variant names the child
/// and the parent's entries concerned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChildLinkError {
    /// An entry about a child comes after the entry that ended the run.
    #[error(
        "the parent's ledger records {kind} for it at entry {seq}, after the parent ended at \
         entry {ended}; nothing about a child is recorded after its parent ended, so the entry \
         was added afterwards"
    )]
    AfterEnd {
        /// The child the entry names.
        child: RunId,
        /// `child_started` or `child_ended`.
        kind: &'static str,
        /// The entry.
        seq: u64,
        /// The parent's `run_completed` or `run_failed` entry.
        ended: u64,
    },
    /// Two `child_started` entries name the same child.
    #[error(
        "the parent's ledger starts it twice (entries {first} and {again}); each child run is \
         started once"
    )]
    StartedTwice {
        /// The child.
        child: RunId,
        /// The first `child_started` entry.
        first: u64,
        /// The second.
        again: u64,
    },
    /// A `child_ended` entry names a child no earlier `child_started` entry started.
    #[error("the parent's ledger records its end at entry {seq}, but no earlier entry started it")]
    EndedUnstarted {
        /// The child.
        child: RunId,
        /// The `child_ended` entry.
        seq: u64,
    },
    /// Two `child_ended` entries name the same child.
    #[error(
        "the parent's ledger records its end twice (entries {first} and {again}); a child ends \
         once"
    )]
    EndedTwice {
        /// The child.
        child: RunId,
        /// The first `child_ended` entry.
        first: u64,
        /// The second.
        again: u64,
    },
}

impl ChildLinkError {
    /// The child the error is about.
    #[must_use]
    pub const fn child(&self) -> &RunId {
        match self {
            Self::AfterEnd { child, .. }
            | Self::StartedTwice { child, .. }
            | Self::EndedUnstarted { child, .. }
            | Self::EndedTwice { child, .. } => child,
        }
    }
}

impl ChildLink {
    /// The children `entries` (a run's ledger, oldest first) record, in the order they
    /// started.
    ///
    /// # Errors
    /// [`ChildLinkError`] naming the first entry that breaks a rule.
    pub fn of(entries: &[Entry]) -> Result<Vec<Self>, ChildLinkError> {
        let mut links: Vec<Self> = Vec::new();
        let mut ended_at = None;
        for entry in entries {
            let (child, kind) = match entry.event() {
                EntryKind::RunCompleted { .. } | EntryKind::RunFailed { .. } => {
                    ended_at.get_or_insert(entry.seq());
                    continue;
                }
                EntryKind::ChildStarted { child, .. } => (child, "child_started"),
                EntryKind::ChildEnded { child, .. } => (child, "child_ended"),
                _ => continue,
            };
            if let Some(ended) = ended_at {
                return Err(ChildLinkError::AfterEnd {
                    child: child.clone(),
                    kind,
                    seq: entry.seq(),
                    ended,
                });
            }
            let known = links.iter_mut().find(|l| l.child == *child);
            match (entry.event(), known) {
                (EntryKind::ChildStarted { .. }, Some(link)) => {
                    return Err(ChildLinkError::StartedTwice {
                        child: child.clone(),
                        first: link.started.seq,
                        again: entry.seq(),
                    });
                }
                (EntryKind::ChildStarted { .. }, None) => links.push(Self {
                    child: child.clone(),
                    started: entry.head(),
                    ended: None,
                }),
                (EntryKind::ChildEnded { .. }, None) => {
                    return Err(ChildLinkError::EndedUnstarted {
                        child: child.clone(),
                        seq: entry.seq(),
                    });
                }
                (
                    EntryKind::ChildEnded {
                        head,
                        outcome,
                        spent,
                        ..
                    },
                    Some(link),
                ) => {
                    if let Some(first) = &link.ended {
                        return Err(ChildLinkError::EndedTwice {
                            child: child.clone(),
                            first: first.recorded.seq,
                            again: entry.seq(),
                        });
                    }
                    link.ended = Some(ChildEnd {
                        recorded: entry.head(),
                        head: *head,
                        outcome: outcome.clone(),
                        spent: spent.clone(),
                    });
                }
                _ => {}
            }
        }
        Ok(links)
    }
}

impl Ledger {
    /// The children this ledger records, in the order they started ([`ChildLink::of`]).
    ///
    /// # Errors
    /// [`ChildLinkError`] naming the first entry that breaks a rule.
    pub fn child_links(&self) -> Result<Vec<ChildLink>, ChildLinkError> {
        ChildLink::of(self.entries())
    }
}

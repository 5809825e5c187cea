//! `VerifyError`: where a ledger's hash chain breaks, and what that means.

use std::fmt;

use rein_run::RunId;
use serde::{Deserialize, Serialize};

/// A ledger failed verification: the first broken sequence number and what is wrong there.
///
/// `seq` is the sequence number of the first position in the chain that cannot be trusted
/// (the entry that should have number `seq` is edited, missing, out of place, preceded by
/// an inserted entry, foreign, or rewritten). See [`Problem`] for how each is recognised.
///
/// ```
/// use rein_ledger::{Problem, VerifyError};
/// let e = VerifyError { seq: 7, problem: Problem::Edited };
/// assert_eq!(
///     e.to_string(),
///     "entry 7 was edited after it was written: its hash does not match its content"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyError {
    /// The first broken sequence number (from 1).
    pub seq: u64,
    /// What is wrong there.
    pub problem: Problem,
}

/// What is wrong at the first broken position of a ledger.
///
/// A ledger is checked entry by entry, in order. At the position where entry `seq` belongs:
/// an entry of another run is [`WrongRun`](Problem::WrongRun); an entry whose hash does not
/// match its content is [`Edited`](Problem::Edited); a wrong number is classified as
/// [`Inserted`](Problem::Inserted), [`Reordered`](Problem::Reordered) or
/// [`Dropped`](Problem::Dropped); an entry that matches its own hash but does not link
/// into the chain is [`BrokenLink`](Problem::BrokenLink), or `Inserted` when its neighbours
/// link to each other around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Problem {
    /// The entry's hash does not match its content: it was changed in place.
    Edited,
    /// The number jumps ahead and entry `missing` appears nowhere later: it was removed.
    Dropped {
        /// The sequence number that is missing.
        missing: u64,
    },
    /// The number jumps ahead to `found`, but the expected entry appears later: entries
    /// were moved.
    Reordered {
        /// The number of the entry standing in the expected one's place.
        found: u64,
    },
    /// An entry that does not belong in the chain stands here: its number goes backwards
    /// or repeats (a duplicate), or it matches its own hash while its neighbours link to
    /// each other around it (a forged entry).
    Inserted {
        /// The number the inserted entry carries.
        found: u64,
    },
    /// The entry belongs to another run's ledger.
    WrongRun {
        /// The run it names.
        found: RunId,
    },
    /// The entry matches its own hash, but the chain does not link through it: its `prev`
    /// is not the previous entry's hash, or the next entry recorded a different hash for
    /// it. It was rewritten and re-hashed after it was written.
    ///
    /// At the end of a ledger, a re-hashed entry `n` and a re-hashed `prev` of entry `n + 1`
    /// (the last) look the same; the earlier, `n`, is reported.
    BrokenLink,
}

impl Problem {
    /// A short, stable name for the problem (as in its serialized `kind` tag).
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Edited => "edited",
            Self::Dropped { .. } => "dropped",
            Self::Reordered { .. } => "reordered",
            Self::Inserted { .. } => "inserted",
            Self::WrongRun { .. } => "wrong_run",
            Self::BrokenLink => "broken_link",
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seq = self.seq;
        match &self.problem {
            Problem::Edited => write!(
                f,
                "entry {seq} was edited after it was written: its hash does not match its content"
            ),
            Problem::Dropped { missing } => write!(
                f,
                "entry {missing} was dropped: the chain skips it and it appears nowhere later"
            ),
            Problem::Reordered { found } => write!(
                f,
                "entry {seq} is out of order: entry {found} stands in its place and entry {seq} \
                 appears later"
            ),
            Problem::Inserted { found } => write!(
                f,
                "an entry numbered {found} was inserted where entry {seq} belongs: it is a \
                 duplicate or a forged entry that the chain does not link through"
            ),
            Problem::WrongRun { found } => write!(
                f,
                "entry {seq} belongs to run {found}: entries of another run's ledger were mixed in"
            ),
            Problem::BrokenLink => write!(
                f,
                "entry {seq} does not link into the chain: it matches its own hash, but its prev \
                 or the next entry's prev disagrees, so it was rewritten and re-hashed after it \
                 was written"
            ),
        }
    }
}

impl std::error::Error for VerifyError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_seq_and_say_what_it_means() {
        let found: RunId = "other".parse().unwrap();
        for (problem, expected) in [
            (Problem::Dropped { missing: 4 }, "entry 4 was dropped"),
            (
                Problem::Reordered { found: 5 },
                "entry 4 is out of order: entry 5 stands in its place",
            ),
            (
                Problem::Inserted { found: 2 },
                "an entry numbered 2 was inserted where entry 4 belongs",
            ),
            (Problem::WrongRun { found }, "entry 4 belongs to run other"),
            (Problem::BrokenLink, "entry 4 does not link into the chain"),
        ] {
            let name = problem.name();
            let message = VerifyError { seq: 4, problem }.to_string();
            assert!(message.starts_with(expected), "{name}: {message}");
        }
    }
}

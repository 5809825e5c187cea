//! Appends not yet written: under [`CommitPolicy::EveryStep`](crate::CommitPolicy) the
//! entries a step appends wait here, per run, until the step's sync writes them in one
//! statement (`append::flush`); and the last entry this process wrote to each run, which
//! the next batch of the run may follow.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use rein_ledger::Entry;
use rein_run::{Digest, RunId};

/// A batch is written at once, whatever the policy, when it holds this many entries…
const MAX_ENTRIES: usize = 256;
/// …or this many bytes of lines: a step that appends a lot (a large batch of tool calls,
/// large outputs) keeps memory bounded, and one statement's parameters small.
const MAX_BYTES: usize = 1024 * 1024;

/// Whether a batch of `entries` entries holding `bytes` bytes of lines is written at once.
const fn full(entries: usize, bytes: usize) -> bool {
    entries >= MAX_ENTRIES || bytes >= MAX_BYTES
}

/// How many runs' last written entries are remembered: past this, they are forgotten all
/// at once (a process driving many runs keeps bounded memory; a forgotten one only costs
/// its run's next batch the chain check in SQL).
const MAX_WRITTEN: usize = 4096;

/// The entries appended and not yet written, by run.
#[derive(Debug, Default)]
pub(crate) struct Pending(Mutex<Runs>);

#[derive(Debug, Default)]
struct Runs {
    batches: HashMap<RunId, Batch>,
    /// The number and hash of the last entry this process wrote to each run, recorded once
    /// the database said the write committed, and forgotten when a new connection is made.
    written: HashMap<RunId, (u64, Digest)>,
}

/// Consecutive entries of one run, appended under one lease token.
#[derive(Debug)]
pub(crate) struct Batch {
    /// The lease token this process held for the run when the first was appended (`None`:
    /// no lease): what the write is checked against.
    pub(crate) token: Option<u64>,
    pub(crate) first_seq: u64,
    /// What the first entry links to: the stored tip it must follow.
    pub(crate) first_prev: Digest,
    pub(crate) hashes: Vec<Digest>,
    /// Every entry's line, one after the other; `ends[i]` is where line `i` ends.
    lines: Vec<u8>,
    ends: Vec<usize>,
}

impl Batch {
    fn new(entry: &Entry, token: Option<u64>) -> Self {
        let mut batch = Self {
            token,
            first_seq: entry.seq(),
            first_prev: entry.prev(),
            hashes: Vec::new(),
            lines: Vec::new(),
            ends: Vec::new(),
        };
        batch.add(entry);
        batch
    }

    fn add(&mut self, entry: &Entry) {
        self.hashes.push(entry.hash());
        self.lines.extend_from_slice(entry.json_line());
        self.ends.push(self.lines.len());
    }

    /// How many entries it holds (at least one).
    pub(crate) fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Each entry's line, in order.
    pub(crate) fn lines(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let line = &self.lines[start..end];
                start = end;
                line
            })
            .collect()
    }

    /// The last entry's number and hash.
    pub(crate) fn last(&self) -> (u64, Digest) {
        let last = self.first_seq + (self.len() as u64 - 1);
        (last, self.hashes.last().copied().unwrap_or(self.first_prev))
    }

    /// Whether `entry` continues the batch: the next number, linking to the last hash.
    fn continued_by(&self, entry: &Entry) -> bool {
        let (last, hash) = self.last();
        entry.seq() == last.saturating_add(1) && entry.prev() == hash
    }
}

/// What [`Pending::push`] did with an entry.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Kept: written at the run's next flush.
    Kept,
    /// Kept, and the batch must be written now (the policy says so, or it is full).
    Due,
    /// Not kept: the run's batch was appended under another lease token; write it first,
    /// then push again.
    FlushFirst,
    /// Not kept: it does not continue the run's batch (another writer of the same run in
    /// this process, against the store's contract).
    NotNext {
        /// The batch's last entry: its number and hash.
        last: (u64, Digest),
    },
}

impl Pending {
    /// Keeps `entry`, appended under `token`, for its run's next flush; `every_entry` makes
    /// every push due at once. With `only_if_kept`, an entry that would make the batch due
    /// is left alone (`Due` returned, nothing kept): the caller appends it the slow way.
    pub(crate) fn push(
        &self,
        entry: &Entry,
        token: Option<u64>,
        every_entry: bool,
        only_if_kept: bool,
    ) -> Pushed {
        let runs = &mut self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .batches;
        let (entries, bytes) = match runs.get(entry.run_id()) {
            Some(batch) if batch.token != token => return Pushed::FlushFirst,
            Some(batch) if !batch.continued_by(entry) => {
                return Pushed::NotNext { last: batch.last() };
            }
            Some(batch) => (batch.len(), batch.lines.len()),
            None => (0, 0),
        };
        let due = every_entry || full(entries + 1, bytes + entry.json_line().len());
        if due && only_if_kept {
            return Pushed::Due;
        }
        match runs.get_mut(entry.run_id()) {
            Some(batch) => batch.add(entry),
            None => {
                runs.insert(entry.run_id().clone(), Batch::new(entry, token));
            }
        }
        if due { Pushed::Due } else { Pushed::Kept }
    }

    /// Takes `run_id`'s batch out, to be written: nothing stays behind, whether the write
    /// succeeds or not (a refused batch is never written).
    pub(crate) fn take(&self, run_id: &RunId) -> Option<Batch> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .batches
            .remove(run_id)
    }

    /// Whether `batch`'s first entry follows the last entry this process wrote to its run
    /// `run_id`. Asked once the connection the batch goes over is in hand: making it
    /// forgets what was written before.
    pub(crate) fn follows_written(&self, run_id: &RunId, batch: &Batch) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written
            .get(run_id)
            .is_some_and(|&(seq, hash)| {
                batch.first_seq == seq.saturating_add(1) && batch.first_prev == hash
            })
    }

    /// Forgets the last entry written to every run (a new connection was made: the
    /// database it reaches may not hold them).
    pub(crate) fn forget_written(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written
            .clear();
    }

    /// Records that the database committed `run_id`'s entries up to `last` (its number and
    /// hash), written by this process. Stored rows are never changed, so once true this
    /// stays true: a batch that follows it needs no look at the stored tip.
    pub(crate) fn written(&self, run_id: &RunId, last: (u64, Digest)) {
        let written = &mut self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written;
        // The run's own slot from its second batch on: no copy of its id.
        if let Some(slot) = written.get_mut(run_id) {
            *slot = last;
            return;
        }
        if written.len() >= MAX_WRITTEN {
            written.clear();
        }
        written.insert(run_id.clone(), last);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let runs = &self
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .batches;
        for (run_id, batch) in runs.iter() {
            // The process is letting go of the stores mid-step: as after a crash, the run
            // resumes from its last synced entry.
            tracing::warn!(
                run = %run_id,
                entries = batch.len(),
                first = batch.first_seq,
                "ledger entries appended but never synced are dropped with the stores"
            );
        }
    }
}

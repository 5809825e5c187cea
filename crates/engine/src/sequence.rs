//! Sequences: a `sequence` decision applied member by member, each member checked and
//! recorded exactly as if it had been proposed alone, stopping at the first that does not
//! take effect.
//!
//! The record of a sequence, after its one `decision` entry: per member, a
//! `sequence_member` entry (its index and kind), then the member's own entries. A member
//! that is refused (a `policy_violation`, handed back or not: the run's `on_violation`
//! decides, as for any decision) or whose call fails for good (a final `tool_error`) stops
//! the sequence; so does a graceful interrupt before a member that would call a tool or
//! delegate. When members remain, one `sequence_stopped` entry names them and says why, and
//! they never run; the planner finds that note in its evidence. A member that ends the run
//! (`finish`, `fail`) may only be the last; a member that pauses it (an approval awaited)
//! leaves the rest for the resume.
//!
//! Where a sequence stands is a function of the ledger (the projection's `SequenceTrack`),
//! read between members live and after a restart alike: a resume first finishes the member
//! a stop cut short, like any unsettled step (by the in-doubt rule for a call in doubt),
//! then goes on with the next member; a sequence whose stopping member is on record but
//! whose `sequence_stopped` is not gets it.

use rein_ledger::EntryKind;
use rein_run::{BoxFuture, RunStatus};

use crate::driver::Driver;
use crate::error::EngineError;
use crate::gate::NextMember;

/// Why a sequence stops when the run is stopped through its handle.
const STOPPED: &str = "the run was stopped through its handle, so nothing new is started";

impl Driver {
    /// Applies the members of the step's sequence from the next one on, as the ledger
    /// shows it, until the last, or until one does not take effect or the run stops.
    pub(crate) fn continue_sequence(&mut self) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a member is applied by `apply`, which applies a sequence through here.
        Box::pin(async move {
            loop {
                if self.rec.status() != RunStatus::Running {
                    return Ok(());
                }
                match self.gate().next_member() {
                    NextMember::Done => return Ok(()),
                    NextMember::Stop(reason) => return self.stop_sequence(reason).await,
                    NextMember::Apply(..) => {}
                }
                // Between members as between steps: controls first, then the run's limits.
                self.drain_controls().await?;
                if self.aborted() {
                    return self.abort().await;
                }
                if self.stop_requested() {
                    self.stop_sequence(STOPPED.to_owned()).await?;
                    return self.halt().await;
                }
                let gate = self.gate();
                if let Some(failure) = gate.overdue() {
                    return self.rec.fail(failure.kind, failure.message).await;
                }
                let NextMember::Apply(index, member) = gate.next_member() else {
                    return Ok(());
                };
                if let Err(reason) = gate.member_may_start(member) {
                    return self.stop_sequence(reason.to_owned()).await;
                }
                let member = member.clone();
                let Some(step) = self.rec.proj.sequence.as_ref().map(|track| track.step) else {
                    return Ok(());
                };
                self.rec
                    .record(EntryKind::SequenceMember {
                        step,
                        index: u32::try_from(index).unwrap_or(u32::MAX),
                        kind: member.kind().to_owned(),
                    })
                    .await?;
                self.apply(member).await?;
            }
        })
    }

    /// Records that the sequence's remaining members are not run, and why.
    async fn stop_sequence(&mut self, reason: String) -> Result<(), EngineError> {
        let Some(track) = self.rec.proj.sequence.as_ref() else {
            return Ok(());
        };
        let kind = EntryKind::SequenceStopped {
            step: track.step,
            not_run: track.not_run(),
            reason,
        };
        self.rec.record(kind).await
    }
}

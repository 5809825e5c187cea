//! Where each model call of a step starts in a ledger: the one reading of "the Nth model
//! call of step S" that `inspect --prompt --call` and the request rebuild share.

use crate::{Entry, EntryKind, Ledger, Violation};

/// The positions in `entries` of the first attempt of each model call step `step` made, in
/// order. A call starts with the step's first `planner_attempt`, and again with the first
/// attempt after each correction handed back to the model (`policy_violation` of kind
/// `invalid_reply`) and after each `prompt_compacted` (the step sends a compacted request
/// instead); the attempts between are retries of the same call (attempts are
/// numbered across the step, and a ledger written before that numbered each call's from 1:
/// either reads the same here). The step's `decision` ends the scan.
#[must_use]
pub fn model_call_starts(entries: &[Entry], step: u32) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut new_call = true;
    for (at, entry) in entries.iter().enumerate() {
        match entry.event() {
            // An old ledger numbered each call's attempts from 1.
            EntryKind::PlannerAttempt { step: s, attempt }
                if *s == step && (new_call || attempt.attempt == 1) =>
            {
                starts.push(at);
                new_call = false;
            }
            EntryKind::PolicyViolation {
                violation: Violation::InvalidReply,
                ..
            } if !starts.is_empty() => new_call = true,
            EntryKind::PromptCompacted { step: s, .. } if *s == step && !starts.is_empty() => {
                new_call = true;
            }
            EntryKind::Decision { step: s, .. } if *s == step => break,
            _ => {}
        }
    }
    starts
}

impl Ledger {
    /// The entries that start each model call of step `step` ([`model_call_starts`]).
    #[must_use]
    pub fn model_calls_of_step(&self, step: u32) -> Vec<&Entry> {
        let entries = self.entries();
        model_call_starts(entries, step)
            .into_iter()
            .map(|at| &entries[at])
            .collect()
    }
}

//! `PromptCompaction`: what a planner dropped from its prompt and what summary stands for
//! it, recorded before the compacted request is sent, so the request can be rebuilt from
//! the ledger and what the model no longer saw is on the record.

use serde::{Deserialize, Serialize};

use crate::Digest;

/// Why a prompt was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CompactionReason {
    /// Its estimated size passed the planner's configured limit.
    OverLimit,
    /// The provider said the prompt exceeds the model's context.
    ContextExceeded,
}

/// One compaction of the prompt about to be sent, as the planner announces it: recorded
/// as a `prompt_compacted` entry before the attempt that sends it.
///
/// The settings it was built with (`keep_last`, `max_item_chars`) and where it cut
/// (`kept_from`) are on the record so that a rebuild of the request from the ledger makes
/// the same bytes. What the model no longer saw is named by that range of the run's own
/// evidence, already on the record, rather than repeated: its size does not grow with the
/// run. An entry written before `kept_from` was recorded names each message left out by
/// its hash instead (`dropped`), and rebuilds with the cut it was made with then (the last
/// `keep_last` evidence items kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptCompaction {
    /// Why.
    pub reason: CompactionReason,
    /// The evidence items kept verbatim (the most recent ones).
    pub keep_last: u64,
    /// The longest rendering of one evidence item, in characters.
    pub max_item_chars: u64,
    /// The model's earlier replies dropped, each with its results.
    pub replies: u32,
    /// The tool results dropped (those of dropped replies included).
    pub results: u32,
    /// As an earlier version recorded what was left out: the SHA-256 of each message of
    /// the full request that the compacted one no longer holds (its canonical JSON), in
    /// order. `None` in what this version records (see `kept_from`): one digest per
    /// message left out made every entry of a long run as long as the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Vec<Digest>>,
    /// Where the request was cut: the index (from 0) of the first evidence item from
    /// which everything stays verbatim, counting the run's evidence and the step's
    /// corrections. The model's replies answered wholly before it and the tool results
    /// before it were left out. `None` in an entry written before it was recorded, whose
    /// cut kept the last `keep_last` items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_from: Option<u64>,
    /// The SHA-256 of the summary note that stands for what was dropped.
    pub summary: Digest,
    /// The full request's estimated size, in tokens, as far as it was measured: measuring
    /// stops once it passes the planner's `max_prompt_tokens` (so with `over_limit` this is
    /// just past the limit, not the whole history's size), and a compaction after the
    /// provider said the context was exceeded records the estimate of the request it
    /// refused. An entry written before this version holds the whole full request's.
    pub tokens_before: u64,
    /// The compacted request's estimated size, in tokens.
    pub tokens_after: u64,
}

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
/// The settings it was built with (`keep_last`, `max_item_chars`) are on the record so that
/// a rebuild of the request from the ledger makes the same bytes; the hashes say what the
/// model no longer saw without repeating it.
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
    /// The SHA-256 of each message of the full request that the compacted one no longer
    /// holds (its canonical JSON), in order.
    pub dropped: Vec<Digest>,
    /// The SHA-256 of the summary note that stands for what was dropped.
    pub summary: Digest,
    /// The full request's estimated size, in tokens.
    pub tokens_before: u64,
    /// The compacted request's estimated size, in tokens.
    pub tokens_after: u64,
}

//! Conversations: a follow-up is a new run that continues a finished one (DESIGN.md §7, "a
//! conversation is a chain of runs"). Its second entry, `follow_up_of`, names the run it
//! continues and the head of that run's ledger, so the runs of a conversation form a chain
//! of chains that `verify_conversation` checks; its planner sees the earlier runs (their
//! goals, evidence, model replies and outcomes) through `PlanRequest::conversation`.

mod chain;

pub(crate) use chain::{earlier_run, link_of, read};

/// The most runs a conversation holds: a follow-up of a conversation this long is refused
/// ([`ConversationError::TooLong`](crate::ConversationError::TooLong)), so what a planner is shown, and what a verification
/// reads, stays bounded.
pub const MAX_CONVERSATION_RUNS: u32 = 64;

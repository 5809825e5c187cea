//! The run domain of rein: a run's identity, lifecycle, decisions, evidence and budget use.
//!
//! A [`Run`] is the aggregate the engine drives: it moves through the seven [`State`]s of the
//! lifecycle, collects [`Evidence`], counts [`BudgetUsage`] and ends `done` or `failed`. Its
//! methods keep its invariants — nothing leaves a terminal state, nothing is added after
//! completion, a run pauses only with a pending question — so no caller can break them.
//!
//! Planners see a [`PlanRequest`] and propose one [`Decision`] per step through the
//! [`Planner`] port; runs are persisted through the [`RunStore`] port. Time comes in as a
//! [`Timestamp`] given by the caller: this crate has no clock, no I/O and no randomness.
//!
//! ```
//! use rein_run::{Decision, Run, RunId, RunStatus, State, Timestamp};
//! use serde_json::json;
//!
//! let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
//! let mut run = Run::new("run-1".parse()?, "Say hello", Default::default(), json!({}), t0);
//! run.enter(State::Explore, t0)?;
//! run.complete("greeted", json!({"status": "done"}), t0)?;
//! assert_eq!(run.status(), RunStatus::Completed);
//! assert!(run.enter(State::Explore, t0).is_err()); // no way out of a terminal state
//!
//! let d = Decision::transition(State::Decide, "have it");
//! assert_eq!(serde_json::to_value(&d)?["type"], "transition");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod approval;
mod budget;
mod call;
mod compaction;
mod conversation;
mod decision;
mod delta;
mod describe;
mod dialogue;
mod error;
mod evidence;
mod head;
mod id;
mod meter;
mod money;
mod planner;
mod run;
mod skill;
mod state;
mod stop;
mod store;
mod subrun;
pub mod telemetry;
mod time;

pub use approval::PendingApproval;
pub use budget::{
    BudgetExhausted, BudgetName, BudgetNameError, BudgetSnapshot, BudgetUsage, Counter, Reservation,
};
pub use call::{CurrencyWithoutAmount, PlannerAttempt, PlannerCall, WorstCase};
pub use compaction::{CompactionReason, PromptCompaction};
pub use conversation::EarlierRun;
pub use decision::{Decision, ProposedCall, SequenceError, check_sequence};
pub use delta::{DeltaSink, ModelDelta};
pub use dialogue::{ModelCall, ModelReply, StateRules, Turn};
pub use error::RunError;
pub use evidence::{ArtifactLink, Evidence, EvidenceKind, NoteSource, Payload};
pub use head::LedgerHead;
pub use id::{RunId, RunIdError};
pub use meter::{PlanEvent, PlanMeter, PlanSink, PlanSinkClosed};
pub use money::{Cost, Currency, Money, MoneyError, parse_micros};
pub use planner::{Delegation, DynPlanner, PlanRequest, Planner, PlannerError};
pub use run::{Failure, FailureKind, PendingQuestion, Run};
pub use skill::{MAX_SKILL_NAME, Skill, SkillError};
pub use state::{RunStatus, State, UnknownState};
pub use stop::{DynStopRequestStore, StopKind, StopRequest, StopRequestStore};
pub use store::{BoxError, DynRunStore, Fenced, RunStore, RunStoreError};
pub use subrun::{ChildOutcome, Spend};
pub use time::Timestamp;

/// The tool-domain types that appear in this crate's API, re-exported so crates that may
/// depend on `rein-run` only (the ledger) name them the same way.
pub use rein_tool::{BoxFuture, Digest, ToolError, ToolName, ToolSpec};

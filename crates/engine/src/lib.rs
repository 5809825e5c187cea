//! rein's application layer: the governed run loop.
//!
//! An [`Engine`] holds tools, a planner, an optional approver, stores and policies, and
//! drives runs. Each step the planner proposes one decision; the engine checks it against
//! every policy (registry, input schema, eligibility, approval, budget, transition table),
//! executes it through the resilience stack, and records it in the run's hash-chained ledger
//! **before** it changes the run: the run is a projection of its ledger. That one rule is
//! what makes resume after a crash, in-doubt detection and replay exact.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rein_engine::Engine;
//! use rein_planner::{ScriptStep, ScriptedPlanner};
//! use rein_run::{Decision, FailureKind, RunStatus, State};
//! use serde_json::json;
//!
//! // A planner that tries to call a tool nobody registered: rejected, recorded, run failed.
//! let engine = Engine::builder()
//!     .planner(ScriptedPlanner::new([
//!         ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
//!         ScriptStep::expect(State::Explore, Decision::call_tool("rm", json!({}), "clean up")),
//!     ]))
//!     .build()?;
//! let run = engine.run("Tidy up").await?;
//! assert_eq!(run.status(), RunStatus::Failed);
//! assert_eq!(run.failure().map(|f| f.kind), Some(FailureKind::PolicyViolation));
//! assert!(engine.ledger(run.id()).await?.verify().is_ok());
//! # Ok(()) }
//! ```
//!
//! The facade crate `rein` re-exports what users need; this crate is its engine room.

mod apply;
mod approval;
mod attachments;
mod attempts;
mod batch;
mod builder;
mod call;
mod call_scope;
mod charge;
mod child_task;
mod children;
mod clock;
mod config;
mod consult;
mod controls;
mod conversation;
mod deadline;
mod depth;
mod driver;
mod durable;
mod engine;
mod error;
mod events;
mod follow_up;
mod gate;
mod handle;
pub mod hook;
mod load;
mod narrow;
mod open;
mod operator_stop;
mod overdue;
mod overrun;
mod payload;
mod plan_attempts;
mod plan_link;
mod planning;
mod progress;
mod project;
mod projection_error;
mod prompt_view;
mod record_first;
mod record_only;
mod recorder;
mod recovery;
mod rejection;
mod replay;
mod replay_hooks;
mod replay_serve;
mod sequence;
mod shared;
mod spec;
mod stop_requests;
mod subrun;
mod telemetry;
mod tools;
mod tree;
mod writer;

pub use builder::EngineBuilder;
pub use call_scope::CurrentCall;
pub use clock::{Clock, IdGenerator, ManualClock, SequentialIds, SystemClock, UuidV7Ids};
pub use config::{
    DEFAULT_HAND_BACK_LIMIT, DEFAULT_MAX_DEPTH, EngineConfig, InDoubtPolicy, MAX_DEPTH_CEILING,
    OnToolError, OnViolation,
};
pub use conversation::MAX_CONVERSATION_RUNS;
pub use depth::MAX_JSON_DEPTH;
pub use engine::Engine;
pub use error::{
    BuildError, ConversationError, EngineError, LifecycleFault, NarrowingError, ProjectionError,
    RecordedPolicyError, TreeError,
};
pub use events::{
    ApprovalAsked, ApprovalDecided, ModelCallEnded, ModelCallOutcome, ModelCallStarted,
    ModelStreamed, ModelUsage, Moved, RunEnded, RunEvent, RunEvents, StepStarted, ToolFinished,
    ToolNoticed, ToolOutcome, ToolStarted,
};
pub use handle::{QueuedFollowUp, RunControl, RunHandle};
pub use narrow::PolicyNarrowing;
pub use replay::ReplayReport;
pub use spec::{FollowUp, RunSpec};
pub use tree::RunTree;

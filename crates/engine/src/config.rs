//! `EngineConfig`: how the engine treats in-doubt calls and outputs (what rejections and
//! failed tool calls do is part of each run's policy: [`OnViolation`], [`OnToolError`]).

pub use rein_policy::{OnToolError, OnViolation};

/// How many rejected decisions a run hands back to a planner that corrects itself
/// (`Planner::corrects_itself`) when the configuration says neither
/// [`OnViolation`] nor a `violations` budget.
pub const DEFAULT_HAND_BACK_LIMIT: u64 = 3;

/// What resume does with a tool call the ledger shows started but not finished (the process
/// died in between).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InDoubtPolicy {
    /// Retry idempotent tools; fail the run with `InDoubtToolCall` for any other tool, which
    /// may or may not have run (the default: at most once unless idempotent).
    #[default]
    RetryIdempotentOnly,
    /// Retry every tool, accepting that a non-idempotent tool may run twice.
    RetryAll,
}

/// How deep a tree of runs may grow by default: a root, its children, their children.
pub const DEFAULT_MAX_DEPTH: u32 = 2;

/// The deepest `max_depth` an engine accepts: a tree of a root and 32 levels below it. Far
/// deeper than any delegation that divides work, and a bound on what one tree holds at
/// once (a driver, a task and a ledger per level) and on how far resume walks down it.
pub const MAX_DEPTH_CEILING: u32 = 32;

/// Engine-wide settings besides policies, tools and stores.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    /// Calls left in doubt by a crash.
    pub in_doubt: InDoubtPolicy,
    /// Tool outputs whose JSON is larger than this many bytes go to the artifact store;
    /// evidence and ledger keep the reference.
    pub inline_output_limit: usize,
    /// How many events a run's broadcast channel buffers for slow subscribers.
    pub event_capacity: usize,
    /// The skills every plan request offers (knowledge, never tools or permissions).
    pub skills: Vec<rein_run::Skill>,
    /// The most calls one `call_tools` batch may hold; a larger batch is rejected whole
    /// before any call runs (0 counts as 1).
    pub max_batch: usize,
    /// How many read-only calls of one batch run at once (0 counts as 1).
    pub batch_concurrency: usize,
    /// How deep a tree of runs may grow through delegation (the root is at depth 0); at
    /// most [`MAX_DEPTH_CEILING`].
    pub max_depth: u32,
    /// The exporter's trace context, when telemetry is exported: each drive of a run
    /// records its span's context (`trace_started`) and a resumed run's span links to the
    /// drive before it.
    pub trace_context: Option<std::sync::Arc<dyn rein_run::telemetry::TraceContext>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            in_doubt: InDoubtPolicy::RetryIdempotentOnly,
            inline_output_limit: 64 * 1024,
            event_capacity: 256,
            skills: Vec::new(),
            max_batch: 64,
            batch_concurrency: 8,
            max_depth: DEFAULT_MAX_DEPTH,
            trace_context: None,
        }
    }
}

//! `Rejection`: a decision the engine refused — typed, recorded in the ledger as a policy
//! violation, and either handed back to the planner or fatal to the run.

use rein_ledger::Violation;
use rein_policy::{BudgetExhausted, Ineligible};
use rein_run::{State, ToolName};
use rein_statemachine::TransitionError;

/// A decision the engine refused. Recorded in the ledger as a policy violation; by default
/// it fails the run, or it is handed back to the planner as evidence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Rejection {
    /// The decision names a tool that is not registered.
    #[error("unknown tool {name:?}; registered tools: {}", known.join(", "))]
    UnknownTool {
        /// The name the planner used.
        name: String,
        /// The registered tools.
        known: Vec<String>,
    },
    /// The input does not satisfy the tool's input schema.
    #[error("input for tool `{tool}` violates its schema: {}", errors.join("; "))]
    InvalidInput {
        /// The tool.
        tool: ToolName,
        /// Each violation, with its JSON path.
        errors: Vec<String>,
    },
    /// The result of a `finish` does not match the run's result schema.
    #[error(
        "the result does not match the run's result schema: {}; finish with a result that \
         matches it",
        errors.join("; ")
    )]
    InvalidResult {
        /// Each violation, with its JSON path (the first is the first that failed).
        errors: Vec<String>,
    },
    /// The tool may not run in the run's state.
    #[error(transparent)]
    Ineligible(#[from] Ineligible),
    /// The transition was refused.
    #[error(transparent)]
    Transition(#[from] TransitionError),
    /// The approver (or the lack of one) denied the call.
    #[error("call of tool `{tool}` was not approved by {approver}: {reason}")]
    ApprovalDenied {
        /// The tool.
        tool: ToolName,
        /// Who denied it.
        approver: String,
        /// Why.
        reason: String,
    },
    /// A budget has nothing left.
    #[error(transparent)]
    BudgetExhausted(#[from] BudgetExhausted),
    /// The question to a human was empty, or its options empty or repeated.
    #[error("invalid question to a human: {reason}")]
    InvalidQuestion {
        /// What is wrong.
        reason: String,
    },
    /// A kind of decision this engine does not know.
    #[error("this engine does not support the proposed kind of decision")]
    UnsupportedDecision,
    /// The decision's JSON (a tool input, a result) nests deeper than
    /// [`MAX_JSON_DEPTH`](crate::MAX_JSON_DEPTH): the ledger could not read it back, so it
    /// is not recorded.
    #[error(
        "the decision holds JSON nested more than {limit} levels deep, which the ledger cannot \
         record; propose a flatter input or result"
    )]
    TooDeep {
        /// The deepest nesting accepted.
        limit: usize,
    },
    /// The run reached the step limit.
    #[error(
        "the run reached its limit of {limit} steps in {state}; raise max_steps or finish sooner"
    )]
    MaxSteps {
        /// The limit.
        limit: u32,
        /// Where the run was.
        state: State,
    },
    /// A `call_tools` batch without calls.
    #[error("the batch holds no calls; propose at least one call, or another kind of decision")]
    EmptyBatch,
    /// A `call_tools` batch with more calls than the engine's `max_batch`.
    #[error(
        "the batch holds {calls} calls, more than the limit of {limit}; split it into batches \
         of at most {limit} calls (or raise max_batch)"
    )]
    BatchTooLarge {
        /// How many calls the batch held.
        calls: usize,
        /// The engine's limit.
        limit: usize,
    },
    /// Two calls of a batch are the same call (same tool, same input).
    #[error(
        "calls {first} and {second} of the batch are the same call of `{tool}` with the same \
         input; propose each call once"
    )]
    DuplicateCall {
        /// The tool.
        tool: ToolName,
        /// The first call's index in the batch.
        first: usize,
        /// The repeat's index in the batch.
        second: usize,
    },
    /// One call of a batch failed a check, so the batch was rejected whole: no call ran.
    #[error("call {index} of the batch was refused, so no call of the batch ran: {source}")]
    InBatch {
        /// The call's index in the batch.
        index: usize,
        /// Why it was refused.
        source: Box<Rejection>,
    },
    /// A sequence that breaks a rule of sequences (empty, nested, a member that ends the
    /// run before the last).
    #[error("{0}")]
    InvalidSequence(rein_run::SequenceError),
    /// A delegation with an empty goal.
    #[error("a delegation needs a goal for the child run; propose one")]
    EmptyDelegation,
    /// A delegation deeper than the engine's limit.
    #[error(
        "delegating would start a run at depth {depth}, deeper than the limit of {limit}; do \
         the work in this run, or raise the engine's max_depth"
    )]
    DelegationTooDeep {
        /// The depth the child would have.
        depth: u32,
        /// The deepest allowed.
        limit: u32,
    },
    /// A delegation naming a planner the engine does not know.
    #[error(
        "no planner named {name:?} is registered for delegation; registered: [{}]; name one \
         of them or none (the parent's planner)",
        known.join(", ")
    )]
    UnknownPlanner {
        /// The name proposed.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// The planner proposed to end the run while a steering note it had not seen waited.
    #[error(
        "a steering note arrived while you were deciding: {note:?}; the run did not end — \
         decide again with the note in view (end it again if the note changes nothing)"
    )]
    SteeringUnread {
        /// The note (the last, when several arrived), cut to a few hundred characters.
        note: String,
    },
    /// A hook denied it (or failed, and hooks fail closed).
    #[error("hook `{hook}` refused this at {point}: {reason}")]
    HookDenied {
        /// The hook's name.
        hook: String,
        /// Where it was asked.
        point: rein_ledger::HookPoint,
        /// Why, as the hook said or as the engine found.
        reason: String,
    },
}

impl Rejection {
    /// The ledger's classification of this rejection.
    #[must_use]
    pub(crate) fn violation(&self) -> Violation {
        match self {
            Self::UnknownTool { .. } => Violation::UnknownTool,
            Self::InvalidInput { .. } | Self::InvalidResult { .. } => Violation::InvalidInput,
            Self::Ineligible(_) => Violation::IneligibleTool,
            Self::Transition(_) => Violation::TransitionRefused,
            Self::ApprovalDenied { .. } => Violation::ApprovalDenied,
            Self::BudgetExhausted(_) => Violation::BudgetExhausted,
            Self::MaxSteps { .. } => Violation::MaxSteps,
            Self::EmptyDelegation
            | Self::DelegationTooDeep { .. }
            | Self::UnknownPlanner { .. } => Violation::DelegationRefused,
            Self::InvalidQuestion { .. } | Self::UnsupportedDecision | Self::TooDeep { .. } => {
                Violation::InvalidInput
            }
            Self::EmptyBatch | Self::BatchTooLarge { .. } | Self::DuplicateCall { .. } => {
                Violation::InvalidInput
            }
            Self::InBatch { source, .. } => source.violation(),
            Self::InvalidSequence(_) => Violation::InvalidInput,
            Self::SteeringUnread { .. } => Violation::SteeringUnread,
            Self::HookDenied { .. } => Violation::HookDenied,
        }
    }
}

//! `RunError`: a method of `Run` was called in a state where it would break an invariant.

use crate::{LedgerHead, RunId, RunStatus, State};

/// A [`Run`](crate::Run) refused a change that would break one of its invariants. Nothing
/// changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The run is over; a finished run never changes.
    #[error("run {id} is {status}: a finished run cannot change")]
    Finished {
        /// The run.
        id: RunId,
        /// Its final status.
        status: RunStatus,
    },
    /// The run must be running for this (it is paused or interrupted).
    #[error("run {id} is {status}; resume it first")]
    NotRunning {
        /// The run.
        id: RunId,
        /// Its status.
        status: RunStatus,
    },
    /// Only a paused run takes an answer.
    #[error("run {id} is {status}, not paused: it has no pending question to answer")]
    NotPaused {
        /// The run.
        id: RunId,
        /// Its status.
        status: RunStatus,
    },
    /// A paused run goes on only with an answer.
    #[error("run {id} is paused waiting for an answer to {question:?}; resume it with an answer")]
    AwaitingAnswer {
        /// The run.
        id: RunId,
        /// The pending question.
        question: String,
    },
    /// Terminal states are entered by `complete` and `fail`, which record the outcome.
    #[error("cannot enter {to} directly; finish or fail the run instead")]
    EnterTerminal {
        /// The terminal state asked for.
        to: State,
    },
    /// A question must say something.
    #[error("the question to a human is empty")]
    EmptyQuestion,
    /// Offered answers must be distinct and non-empty.
    #[error("invalid answer options {options:?}: options must be non-empty and distinct")]
    InvalidOptions {
        /// The options given.
        options: Vec<String>,
    },
    /// The answer is not among the options offered.
    #[error("answer {answer:?} is not among the options offered: {options:?}")]
    AnswerNotOffered {
        /// The answer given.
        answer: String,
        /// The options offered.
        options: Vec<String>,
    },
    /// An empty answer to an open question.
    #[error("the answer is empty; give a non-empty answer")]
    EmptyAnswer,
    /// A run's ledger head only moves forward: its ledger only grows.
    #[error(
        "run {id} was saved after ledger {was}; it cannot be anchored to {head}, which is not \
         further along the same ledger"
    )]
    AnchorBackwards {
        /// The run.
        id: RunId,
        /// The head recorded.
        was: LedgerHead,
        /// The head refused.
        head: LedgerHead,
    },
    /// A persisted run whose fields contradict each other (e.g. completed but in `explore`).
    #[error("inconsistent run snapshot: {0}")]
    Inconsistent(String),
    /// A run paused for a durable approval goes on only with a verdict.
    #[error(
        "run {id} is paused waiting for approval of a call of `{tool}`; give a verdict with \
         `Engine::approve` (or `rein approve`)"
    )]
    AwaitingApproval {
        /// The run.
        id: RunId,
        /// The tool whose call waits.
        tool: crate::ToolName,
    },
}

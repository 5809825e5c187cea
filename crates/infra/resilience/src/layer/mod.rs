//! The stack's steps, outermost first, and the error that travels between them. They run
//! in one future per call (see `stack.rs`); only user layers are tower services.
//!
//! ```text
//! bulkhead     one permit per call, held through every retry          → Overloaded
//! retry        idempotent tools, transient errors, bounded, backoff    (skipped otherwise)
//! breaker      per tool; checked before the attempt starts            → CircuitOpen
//! attempt      the caller's admission (awaited when it waits) and report, once per attempt
//! timeout      per attempt                                           → TimedOut
//! catch_panic  the tool's and user layers' panics                    → Panicked
//! user layers  ExecutionStack::with_layer, first added outermost
//! tool         DynTool::call_boxed
//! ```

mod attempt;
mod breaker;
mod bulkhead;
mod catch_panic;
mod retry;
mod timeout;

use rein_tool::ToolError;

pub(crate) use attempt::{Report, admit};
pub(crate) use breaker::Circuit;
pub use breaker::CircuitState;
pub(crate) use bulkhead::Permits;
pub(crate) use catch_panic::catch_panic;
pub(crate) use retry::backoff;
pub(crate) use timeout::timeout;

/// Why an attempt failed, as the breaker and the retry step see it. Only the stack sees it;
/// callers get the [`ToolError`] inside.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The tool, a user layer, the timeout, the panic catcher, the breaker or the bulkhead
    /// failed the call.
    Tool(ToolError),
    /// The caller's observer vetoed an attempt, or the user layers failed to get ready for
    /// it: never retried, never counted by the breaker.
    Vetoed(ToolError),
}

impl Failure {
    /// The error the caller sees.
    pub(crate) fn into_tool_error(self) -> ToolError {
        match self {
            Self::Tool(error) | Self::Vetoed(error) => error,
        }
    }
}

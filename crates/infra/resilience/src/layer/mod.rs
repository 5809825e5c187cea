//! The stack's tower layers, outermost first, and the error that travels between them.
//!
//! ```text
//! bulkhead     one permit per call, held through every retry          → Overloaded
//! retry        idempotent tools, transient errors, bounded, backoff    (skipped otherwise)
//! breaker      per tool; checked before the inner service is called  → CircuitOpen
//! attempt      the caller's admission (awaited when it waits) and report, once per attempt
//! timeout      per attempt                                           → TimedOut
//! catch_panic  the tool's and user layers' panics                    → Panicked
//! user layers  ExecutionStack::with_layer, first added outermost
//! tool         SharedTool::call_boxed
//! ```

mod attempt;
mod breaker;
mod bulkhead;
mod catch_panic;
mod retry;
mod timeout;

use rein_tool::ToolError;

pub(crate) use attempt::{Attempt, AttemptLayer};
pub use breaker::CircuitState;
pub(crate) use breaker::{Breaker, BreakerLayer, Circuit};
pub(crate) use bulkhead::{BulkheadService, bulkhead};
pub(crate) use catch_panic::{CatchPanic, CatchPanicLayer};
pub(crate) use retry::IdempotentRetry;
pub(crate) use timeout::{Timeout, TimeoutLayer};

/// Why a call failed, between the layers above the attempt layer. Only the stack sees it;
/// callers get the [`ToolError`] inside.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The tool, a user layer, the timeout, the panic catcher, the breaker or the bulkhead
    /// failed the call.
    Tool(ToolError),
    /// The caller's observer vetoed an attempt: never retried, never counted by the breaker.
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

//! `ToolCall`, the request that travels down the stack, and `AttemptObserver`, the caller's
//! hook on every attempt.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rein_tool::{ToolError, ToolName, ToolOutput};
use serde_json::Value;

/// One call of a tool through its [`ToolStack`](crate::ToolStack): the input, and optionally
/// an [`AttemptObserver`] told about every attempt.
///
/// User layers (see [`ExecutionStack::with_layer`](crate::ExecutionStack::with_layer)) see
/// one `ToolCall` per attempt and can read which attempt it is.
///
/// ```
/// use rein_resilience::ToolCall;
/// use serde_json::json;
///
/// let call = ToolCall::new(json!({"query": "rust"}));
/// assert_eq!(call.input()["query"], "rust");
/// assert_eq!(call.attempt(), 1);
/// ```
#[derive(Clone)]
pub struct ToolCall {
    pub(crate) input: Value,
    pub(crate) attempt: u32,
    pub(crate) observer: Option<Arc<dyn AttemptObserver>>,
}

/// The caller's hook on every attempt of a call: it may veto an attempt before it starts and
/// is told how each one ended. The engine uses it to reserve a budget unit per attempt and
/// to ledger every attempt.
///
/// # Contract
/// - For every attempt that reaches the tool, [`before_attempt`] is called first. If it
///   returns `Err`, the tool is not called, no further attempt is made, and the call fails
///   with that error. A call rejected before any attempt (a full [fail-fast
///   bulkhead](crate::Bulkhead::FailFast), an [open circuit](crate::CircuitState::Open))
///   makes no attempt and calls neither method.
/// - Every `before_attempt` that returned `Ok` is followed by exactly one
///   [`after_attempt`] for the same attempt: with the tool's result, with
///   [`ToolError::TimedOut`] or [`ToolError::Panicked`] made by the stack, or with
///   [`ToolError::Cancelled`] when the call was dropped while the attempt ran.
/// - Both methods run synchronously on the task that polls the call, and
///   `after_attempt` may run inside a `Drop`: they MUST be quick, MUST NOT block and MUST NOT
///   panic. Hand slow work (a store write) to a channel.
///
/// Attempts are numbered from 1.
///
/// ```
/// use std::sync::Mutex;
/// use rein_resilience::{AttemptObserver, AttemptReport};
/// use rein_tool::{ToolError, ToolName};
///
/// /// Allows `limit` attempts in all, and keeps a line per finished attempt.
/// struct Budget { left: Mutex<u32>, log: Mutex<Vec<String>> }
///
/// impl AttemptObserver for Budget {
///     fn before_attempt(&self, _tool: &ToolName, _attempt: u32) -> Result<(), ToolError> {
///         let mut left = self.left.lock().unwrap();
///         if *left == 0 {
///             return Err(ToolError::failed("tool_calls budget exhausted"));
///         }
///         *left -= 1;
///         Ok(())
///     }
///     fn after_attempt(&self, report: &AttemptReport<'_>) {
///         let line = format!("{} #{}: ok={}", report.tool, report.attempt, report.outcome.is_ok());
///         self.log.lock().unwrap().push(line);
///     }
/// }
/// ```
///
/// [`before_attempt`]: AttemptObserver::before_attempt
/// [`after_attempt`]: AttemptObserver::after_attempt
pub trait AttemptObserver: Send + Sync {
    /// Called before attempt number `attempt` of `tool` starts; `Err` vetoes it (and every
    /// later attempt of the call), and becomes the call's error. The default allows it.
    ///
    /// # Errors
    /// The error the call fails with, when the attempt must not be made.
    fn before_attempt(&self, tool: &ToolName, attempt: u32) -> Result<(), ToolError> {
        let _ = (tool, attempt);
        Ok(())
    }

    /// Called once when an attempt that was allowed to start has ended. The default does
    /// nothing.
    fn after_attempt(&self, report: &AttemptReport<'_>) {
        let _ = report;
    }
}

/// How one attempt ended, as told to [`AttemptObserver::after_attempt`].
#[derive(Debug)]
#[non_exhaustive]
pub struct AttemptReport<'a> {
    /// The tool called.
    pub tool: &'a ToolName,
    /// The attempt's number, from 1.
    pub attempt: u32,
    /// What the attempt gave: the tool's result, or the stack's `TimedOut`, `Panicked` or
    /// `Cancelled`.
    pub outcome: &'a Result<ToolOutput, ToolError>,
    /// How long the attempt ran, on tokio's clock.
    pub elapsed: Duration,
}

impl ToolCall {
    /// A call with `input` and no observer.
    #[must_use]
    pub const fn new(input: Value) -> Self {
        Self {
            input,
            attempt: 1,
            observer: None,
        }
    }

    /// Returns the call with `observer` told about every attempt.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn AttemptObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The tool's input.
    #[must_use]
    pub const fn input(&self) -> &Value {
        &self.input
    }

    /// Which attempt of the call this is, from 1 (it goes up as the stack retries).
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Takes the tool's input.
    #[must_use]
    pub fn into_input(self) -> Value {
        self.input
    }
}

impl From<Value> for ToolCall {
    fn from(input: Value) -> Self {
        Self::new(input)
    }
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("input", &self.input)
            .field("attempt", &self.attempt)
            .field("observed", &self.observer.is_some())
            .finish()
    }
}

//! `ToolCall`, the request that travels down the stack, and `AttemptObserver`, the caller's
//! hook on every attempt, with the `Admission` it answers each attempt with.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rein_tool::{BoxFuture, ToolError, ToolName, ToolOutput};
use serde_json::Value;

/// One call of a tool through its [`ToolStack`](crate::ToolStack): the input, and optionally
/// an [`AttemptObserver`] told about every attempt.
///
/// User layers (see [`ExecutionStack::with_layer`](crate::ExecutionStack::with_layer)) see
/// one `ToolCall` per attempt and can read which attempt it is.
///
/// The tool gets the input by value. The stack copies it only while a later attempt may
/// still need it (an idempotent tool with attempts left); the last attempt, and the only
/// attempt of a call that is not retried, get the caller's input itself.
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
    /// The most attempts the retry layer may make of this call (it also keeps its own).
    pub(crate) max_attempts: u32,
    /// Whether the observer hands every retry its input, so the stack keeps no copy.
    pub(crate) retry_inputs_from_observer: bool,
}

/// The caller's hook on every attempt of a call: it admits (or vetoes) each attempt before it
/// starts, possibly after awaiting something, and is told how each one ended. The engine uses
/// it to charge a budget unit and ledger every attempt before the attempt runs (appended to
/// the ledger store; synced first only where the engine's fsync rules call for it, as for a
/// non-idempotent tool's call).
///
/// # Contract
/// - For every attempt that reaches the tool, [`before_attempt`] is called first and the
///   [`Admission`] it returns is settled before the attempt starts: [`Admission::allow`]
///   starts it at once, [`Admission::deny`] vetoes it, and [`Admission::wait`] holds it until
///   the future resolves (`Ok` starts it, `Err` vetoes it). The wait does not count against
///   the attempt's timeout. A vetoed attempt never reaches the tool, no further attempt is
///   made, and the call fails with the veto's error. A call rejected before any attempt (a
///   full [fail-fast bulkhead](crate::Bulkhead::FailFast), an [open
///   circuit](crate::CircuitState::Open)) makes no attempt and calls neither method.
/// - [`after_attempt`] for attempt `n` is called before [`before_attempt`] for attempt
///   `n + 1`: an observer learns how an attempt ended before it admits the next one.
/// - Every attempt admitted (and so started) is followed by exactly one [`after_attempt`]
///   for it: with the tool's result, with [`ToolError::TimedOut`] or
///   [`ToolError::Panicked`] made by the stack, or with [`ToolError::Cancelled`] when the
///   call was dropped while the attempt ran. A call dropped while it waits on an admission
///   starts no attempt and reports nothing for it.
/// - Both methods run synchronously on the task that polls the call, and `after_attempt` may
///   run inside a `Drop`: they MUST be quick, MUST NOT block and MUST NOT panic. Slow work
///   (a store write) goes to a channel; an admission that needs its answer returns
///   [`Admission::wait`] with the future of that answer. The future MUST resolve (with
///   `Err` if the other side is gone), or the call waits forever.
///
/// Attempts are numbered from 1. Admitting without waiting costs nothing: no allocation.
///
/// An admission may also hand the attempt its input ([`Admission::allow_with_input`],
/// [`Admission::wait_with_input`]), which then runs on that input instead of the call's. A
/// caller that keeps the input anyway (the engine has it on record) can so spare the stack
/// its copy of every input in case a retry follows: see [`ToolCall::with_retry_inputs`].
///
/// # Examples
///
/// An observer that admits attempts synchronously, from a budget it keeps itself:
///
/// ```
/// use std::sync::Mutex;
/// use rein_resilience::{Admission, AttemptObserver, AttemptReport};
/// use rein_tool::{ToolError, ToolName};
///
/// /// Allows `limit` attempts in all, and keeps a line per finished attempt.
/// struct Budget { left: Mutex<u32>, log: Mutex<Vec<String>> }
///
/// impl AttemptObserver for Budget {
///     fn before_attempt(&self, _tool: &ToolName, _attempt: u32) -> Admission {
///         let mut left = self.left.lock().unwrap();
///         if *left == 0 {
///             return Admission::deny(ToolError::failed("tool_calls budget exhausted"));
///         }
///         *left -= 1;
///         Admission::allow()
///     }
///     fn after_attempt(&self, report: &AttemptReport<'_>) {
///         let line = format!("{} #{}: ok={}", report.tool, report.attempt, report.outcome.is_ok());
///         self.log.lock().unwrap().push(line);
///     }
/// }
/// ```
///
/// Wrong: doing the slow work (here, writing a record somewhere durable) inside the method,
/// where it blocks the task that polls the call:
///
/// ```
/// use rein_resilience::{Admission, AttemptObserver};
/// use rein_tool::{ToolError, ToolName};
///
/// struct WriteFirst;
///
/// impl AttemptObserver for WriteFirst {
///     fn before_attempt(&self, tool: &ToolName, attempt: u32) -> Admission {
///         // Blocks the task that polls the call (and every call it polls) on the disk.
///         match std::fs::write("attempts.log", format!("{tool} {attempt}\n")) {
///             Ok(()) => Admission::allow(),
///             Err(e) => Admission::deny(ToolError::failed(e.to_string())),
///         }
///     }
/// }
/// ```
///
/// Right: ask whoever does the slow work, and let the attempt wait for the answer. The
/// first attempt, which the caller set up before the call, is admitted at once:
///
/// ```
/// use rein_resilience::{Admission, AttemptObserver};
/// use rein_tool::{ToolError, ToolName};
/// use tokio::sync::{mpsc, oneshot};
///
/// /// Asks the task that owns the record to write it, and starts a retry once it has.
/// struct RecordFirst { tx: mpsc::UnboundedSender<(u32, oneshot::Sender<Result<(), ToolError>>)> }
///
/// impl AttemptObserver for RecordFirst {
///     fn before_attempt(&self, _tool: &ToolName, attempt: u32) -> Admission {
///         if attempt == 1 {
///             return Admission::allow();
///         }
///         let (reply, answer) = oneshot::channel();
///         if self.tx.send((attempt, reply)).is_err() {
///             return Admission::deny(ToolError::Cancelled);
///         }
///         // No answer (the recorder is gone) vetoes the attempt rather than waiting forever.
///         Admission::wait(async move { answer.await.unwrap_or(Err(ToolError::Cancelled)) })
///     }
/// }
/// ```
///
/// [`before_attempt`]: AttemptObserver::before_attempt
/// [`after_attempt`]: AttemptObserver::after_attempt
pub trait AttemptObserver: Send + Sync {
    /// Called before attempt number `attempt` of `tool` starts; the [`Admission`] says
    /// whether and when it may. A veto (now or after a wait) stops the attempt and every
    /// later attempt of the call, and its error becomes the call's error. The default allows
    /// every attempt.
    fn before_attempt(&self, tool: &ToolName, attempt: u32) -> Admission {
        let _ = (tool, attempt);
        Admission::allow()
    }

    /// Called once when an attempt that was admitted has ended. The default does nothing.
    fn after_attempt(&self, report: &AttemptReport<'_>) {
        let _ = report;
    }

    /// Whether [`AttemptReport::elapsed`] is measured for this observer. An observer that
    /// times attempts on a clock of its own (the engine's does) returns `false`: the stack
    /// then reads no clock for its attempts, and reports them with `elapsed` zero. The
    /// default is `true`.
    fn times_attempts(&self) -> bool {
        true
    }
}

/// An [`AttemptObserver`]'s answer to "may this attempt start?": yes, no (with the error the
/// call fails with), or once a future says so.
///
/// ```
/// use rein_resilience::Admission;
/// use rein_tool::ToolError;
///
/// let now = Admission::allow();
/// let never = Admission::deny(ToolError::failed("no budget left"));
/// let later = Admission::wait(async { Ok(()) });
/// let from_result: Admission = Ok(()).into();
/// # let _ = (now, never, later, from_result);
/// ```
#[must_use = "an admission decides whether an attempt starts"]
pub struct Admission(pub(crate) Admit);

/// What an [`Admission`] holds.
pub(crate) enum Admit {
    Allow,
    Deny(ToolError),
    Wait(BoxFuture<'static, Result<(), ToolError>>),
    AllowWith(Value),
    WaitWith(BoxFuture<'static, Result<Value, ToolError>>),
}

impl Admission {
    /// The attempt starts now.
    pub const fn allow() -> Self {
        Self(Admit::Allow)
    }

    /// The attempt is vetoed: the call fails with `error`, and no later attempt is made.
    pub const fn deny(error: ToolError) -> Self {
        Self(Admit::Deny(error))
    }

    /// The attempt waits for `answer`: `Ok` starts it, `Err` vetoes it with that error.
    /// Dropping the call while it waits drops `answer` too.
    pub fn wait<F>(answer: F) -> Self
    where
        F: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        Self(Admit::Wait(Box::pin(answer)))
    }

    /// The attempt starts now, on `input` instead of the call's input.
    pub const fn allow_with_input(input: Value) -> Self {
        Self(Admit::AllowWith(input))
    }

    /// The attempt waits for `answer`: `Ok(input)` starts it on `input` instead of the
    /// call's input, `Err` vetoes it with that error. Dropping the call while it waits drops
    /// `answer` too.
    pub fn wait_with_input<F>(answer: F) -> Self
    where
        F: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        Self(Admit::WaitWith(Box::pin(answer)))
    }
}

impl From<Result<(), ToolError>> for Admission {
    fn from(answer: Result<(), ToolError>) -> Self {
        match answer {
            Ok(()) => Self::allow(),
            Err(error) => Self::deny(error),
        }
    }
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Admit::Allow => f.write_str("Admission::Allow"),
            Admit::Deny(error) => f.debug_tuple("Admission::Deny").field(error).finish(),
            Admit::Wait(_) => f.write_str("Admission::Wait(..)"),
            // The input is the caller's data: it stays out of logs.
            Admit::AllowWith(_) => f.write_str("Admission::AllowWithInput(..)"),
            Admit::WaitWith(_) => f.write_str("Admission::WaitWithInput(..)"),
        }
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
    /// How long the attempt ran, on tokio's clock (zero when the observer's
    /// [`times_attempts`](AttemptObserver::times_attempts) is `false`).
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
            max_attempts: u32::MAX,
            retry_inputs_from_observer: false,
        }
    }

    /// Returns the call made at most once: no retry, whatever the tool and the error
    /// (the engine's batches attempt each call once).
    ///
    /// ```
    /// use rein_resilience::ToolCall;
    /// use serde_json::json;
    ///
    /// let call = ToolCall::new(json!({})).without_retries();
    /// assert_eq!(call.attempt(), 1);
    /// ```
    #[must_use]
    pub const fn without_retries(mut self) -> Self {
        self.max_attempts = 1;
        self
    }

    /// Returns the call with `observer` told about every attempt.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn AttemptObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Returns the call with `observer` told about every attempt, as
    /// [`with_observer`](Self::with_observer), and handing every retry its input: the stack
    /// keeps no copy of the input in case a retry follows, and the tool gets the call's
    /// input itself on the first attempt.
    ///
    /// The observer admits each retry with [`Admission::allow_with_input`] or
    /// [`Admission::wait_with_input`]. A retry admitted without an input does not run: the
    /// call fails with an error saying so, as if the observer had vetoed it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rein_resilience::{Admission, AttemptObserver, ToolCall};
    /// use rein_tool::ToolName;
    /// use serde_json::{Value, json};
    ///
    /// /// Keeps the input (say, on record) and hands it to every retry.
    /// struct Kept(Value);
    /// impl AttemptObserver for Kept {
    ///     fn before_attempt(&self, _tool: &ToolName, attempt: u32) -> Admission {
    ///         if attempt == 1 { Admission::allow() } else { Admission::allow_with_input(self.0.clone()) }
    ///     }
    /// }
    ///
    /// let input = json!({"query": "rust"});
    /// let call = ToolCall::new(input.clone()).with_retry_inputs(Arc::new(Kept(input)));
    /// assert_eq!(call.attempt(), 1);
    /// ```
    #[must_use]
    pub fn with_retry_inputs(self, observer: Arc<dyn AttemptObserver>) -> Self {
        Self {
            retry_inputs_from_observer: true,
            ..self.with_observer(observer)
        }
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
            .field("max_attempts", &self.max_attempts)
            .field(
                "retry_inputs_from_observer",
                &self.retry_inputs_from_observer,
            )
            .finish()
    }
}

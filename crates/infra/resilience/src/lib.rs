//! rein's tool execution stack: how a tool call runs once the engine has decided it may run.
//!
//! Every tool gets a [`ToolStack`], built once per engine from a [`ResilienceConfig`]
//! (engine-wide defaults, per-tool [`ToolOverrides`], and the tool's own
//! [`Annotations`](rein_tool::Annotations)). Its policy layers run in one future per call,
//! so a layer with nothing to do costs a branch: no timer unless an attempt has to wait, no
//! copy of the input unless a retry may follow. User layers are [tower] layers, inside the
//! policy layers. Outermost first:
//!
//! | layer | per | does | fails with |
//! |---|---|---|---|
//! | bulkhead | call | caps concurrent calls of the tool; queues, or fails fast | [`ToolError::Overloaded`] |
//! | retry | call | idempotent tools only: retries [transient] errors, bounded, exponential backoff with jitter | – |
//! | circuit breaker | attempt | one per tool, on failsafe's state machine; an open breaker never reaches the tool | [`ToolError::CircuitOpen`] |
//! | attempt | attempt | asks the call's [`AttemptObserver`] first and waits for its [`Admission`] (a veto ends the call), reports how it ended | the veto's error |
//! | timeout | attempt | [`Annotations::timeout`](rein_tool::Annotations::timeout), else the default | [`ToolError::TimedOut`] |
//! | panic | attempt | a panic in the tool or a user layer | [`ToolError::Panicked`] |
//! | user layers | attempt | [`ExecutionStack::with_layer`], inside every policy layer | their own |
//!
//! Each attempt is a separate trip through the breaker, the observer and the timeout, so the
//! engine can charge a budget unit and write a ledger entry per attempt — and, since an
//! admission may wait, make both durable before the attempt starts — a timed-out attempt
//! is retried like any transient failure, a hanging tool opens its breaker, and an open
//! breaker cuts retries short. Errors stay typed: every failure is a [`ToolError`].
//!
//! The tool's future lives inside the future [`ToolStack::call`] returns; nothing is spawned,
//! so dropping the call cancels the tool (and tells the observer `Cancelled`).
//!
//! # Example
//!
//! A flaky, idempotent tool is retried until it succeeds; the observer sees every attempt.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::{Arc, Mutex};
//! use rein_resilience::{AttemptObserver, AttemptReport, ExecutionStack, ResilienceConfig, ToolCall};
//! use rein_tool::{Annotations, SharedTool, Tool, ToolError, ToolOutput, ToolSpec};
//! use serde_json::{Value, json};
//!
//! /// Fails once with a transient error, then answers.
//! struct Flaky { spec: ToolSpec, calls: AtomicU32 }
//! impl Tool for Flaky {
//!     fn spec(&self) -> &ToolSpec { &self.spec }
//!     async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
//!         match self.calls.fetch_add(1, Ordering::SeqCst) {
//!             0 => Err(ToolError::transient("connection reset")),
//!             _ => Ok(json!({ "echo": input }).into()),
//!         }
//!     }
//! }
//!
//! /// Keeps (attempt, succeeded) for every finished attempt.
//! #[derive(Default)]
//! struct Log(Mutex<Vec<(u32, bool)>>);
//! impl AttemptObserver for Log {
//!     fn after_attempt(&self, report: &AttemptReport<'_>) {
//!         self.0.lock().unwrap().push((report.attempt, report.outcome.is_ok()));
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?;
//! # runtime.block_on(async {
//! let spec = ToolSpec::new("lookup".parse()?, "Looks things up")
//!     .with_annotations(Annotations::read_only()); // read-only, hence idempotent
//! let tool: SharedTool = Arc::new(Flaky { spec, calls: AtomicU32::new(0) });
//!
//! let stack = ExecutionStack::new(ResilienceConfig::default()); // once per engine
//! let lookup = stack.build(tool);                                // once per tool
//!
//! let log = Arc::new(Log::default());
//! let out = lookup.call(ToolCall::new(json!("rust")).with_observer(log.clone())).await?;
//! assert_eq!(out.value()["echo"], "rust");
//! assert_eq!(*log.0.lock().unwrap(), [(1, false), (2, true)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```
//!
//! [transient]: rein_tool::ToolError::is_transient
//! [`ToolError`]: rein_tool::ToolError
//! [`ToolError::Overloaded`]: rein_tool::ToolError::Overloaded
//! [`ToolError::CircuitOpen`]: rein_tool::ToolError::CircuitOpen
//! [`ToolError::TimedOut`]: rein_tool::ToolError::TimedOut
//! [`ToolError::Panicked`]: rein_tool::ToolError::Panicked

mod call;
mod config;
mod layer;
mod stack;

pub use call::{Admission, AttemptObserver, AttemptReport, ToolCall};
pub use config::{
    BreakerConfig, Bulkhead, Jitter, ResilienceConfig, RetryConfig, ToolOverrides, ToolPolicy,
};
pub use layer::CircuitState;
pub use stack::{ExecutionStack, ToolService, ToolStack};

//! The run's side of one tool call in flight ([`CallScope`]): what a tool may ask of the
//! run the call belongs to (a completion from the run's model, charged to the run) and
//! what it may tell the run's subscribers while it works (progress, log lines). A tool
//! finds the scope of its call through [`CallScopes`], at the start of the call, in the
//! task running it: a connection shared by every run (an MCP server's) ties what arrives
//! on it to the call in flight, and so to the run.

use std::sync::Arc;

use serde_json::Value;

use crate::{BoxFuture, SampleError, SampleReply, SampleRequest};

/// What a tool tells the run's subscribers while it works: never recorded in the ledger.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolNotice {
    /// How far the call got.
    Progress {
        /// The progress so far (increasing).
        progress: f64,
        /// The total, when known.
        total: Option<f64>,
        /// What is being done, as the tool words it.
        message: Option<String>,
    },
    /// A log line the tool (an MCP server) sent.
    Log {
        /// Its level, as sent (`debug`, `info`, `warning`, `error`, …).
        level: String,
        /// The logger that wrote it, if named.
        logger: Option<String>,
        /// What it says (any JSON).
        data: Value,
    },
}

/// The run's side of one tool call in flight, implemented by the engine.
///
/// # Contract
/// - `sample` answers with the run's model under the run's budgets, as [`Sampler`] does
///   (charged and recorded like the planner's model calls); it refuses with
///   [`SampleError::Budget`] when the request's worst case does not fit, and with
///   [`SampleError::Refused`] when the run has no model or the call has ended.
/// - `notice` MUST NOT wait and MUST NOT fail: a notice nobody watches is dropped.
/// - Neither MUST panic on any input.
///
/// [`Sampler`]: crate::Sampler
pub trait CallScope: Send + Sync + 'static {
    /// Asks the run's model, charged to the run.
    fn sample(&self, request: SampleRequest) -> BoxFuture<'_, Result<SampleReply, SampleError>>;

    /// Passes `notice` on to the run's subscribers.
    fn notice(&self, notice: ToolNotice);
}

/// Finds the [`CallScope`] of the tool call running in the current task.
///
/// # Contract
/// `current` MUST return `None` outside a governed tool call (a tool called directly, by a
/// test or another program); a tool then has no run to charge and refuses what needs one.
pub trait CallScopes: Send + Sync + 'static {
    /// The scope of the call running in the current task, if any.
    fn current(&self) -> Option<Arc<dyn CallScope>>;
}

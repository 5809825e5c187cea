//! The attempt step: asks the caller's observer before each attempt (waiting for its answer
//! when it has to) and tells it how the attempt ended.

use std::sync::Arc;
use std::time::Duration;

use rein_tool::{ToolError, ToolName, ToolOutput};
use serde_json::Value;
use tokio::time::Instant;

use crate::call::Admit;
use crate::{AttemptObserver, AttemptReport};

/// An attempt that started and owes its observer one `after_attempt`; paid on completion,
/// or with `Cancelled` when dropped first.
pub(crate) struct Report<'a> {
    observer: Arc<dyn AttemptObserver>,
    tool: &'a ToolName,
    attempt: u32,
    /// When the attempt started, if the observer times attempts.
    started: Option<Instant>,
    sent: bool,
}

/// Settles `observer`'s admission of attempt `attempt` of `tool`: `Ok` once it may start
/// (with the input it runs on, if the admission handed one over), the veto's error if it
/// may not. Admitting at once costs no allocation.
pub(crate) async fn admit(
    observer: &dyn AttemptObserver,
    tool: &ToolName,
    attempt: u32,
) -> Result<Option<Value>, ToolError> {
    let error = match observer.before_attempt(tool, attempt).0 {
        Admit::Allow => return Ok(None),
        Admit::AllowWith(input) => return Ok(Some(input)),
        Admit::Deny(error) => error,
        Admit::Wait(answer) => match answer.await {
            Ok(()) => return Ok(None),
            Err(error) => error,
        },
        Admit::WaitWith(answer) => match answer.await {
            Ok(input) => return Ok(Some(input)),
            Err(error) => error,
        },
    };
    tracing::debug!(tool = %tool, attempt, %error, "attempt vetoed by the caller");
    Err(error)
}

impl<'a> Report<'a> {
    /// A report owed for `attempt`, which starts now (the clock is read only if the
    /// observer times attempts).
    pub(crate) fn start(
        observer: Arc<dyn AttemptObserver>,
        tool: &'a ToolName,
        attempt: u32,
    ) -> Self {
        let started = observer.times_attempts().then(Instant::now);
        Self {
            observer,
            tool,
            attempt,
            started,
            sent: false,
        }
    }

    /// Tells the observer how the attempt ended, once.
    pub(crate) fn send(&mut self, outcome: &Result<ToolOutput, ToolError>) {
        if !self.sent {
            self.sent = true;
            self.observer.after_attempt(&AttemptReport {
                tool: self.tool,
                attempt: self.attempt,
                outcome,
                elapsed: self
                    .started
                    .map_or(Duration::ZERO, |started| started.elapsed()),
            });
        }
    }
}

impl Drop for Report<'_> {
    fn drop(&mut self) {
        if !self.sent {
            self.send(&Err(ToolError::Cancelled));
        }
    }
}

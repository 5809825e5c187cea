//! What the driver does about a run's deadline (see `deadline`): no step starts after it,
//! a tool call in flight is given what remains, and the run fails as `DeadlineExceeded`.

use std::time::Duration;

use rein_run::{BoxFuture, FailureKind};

use crate::driver::Driver;
use crate::error::EngineError;

impl Driver {
    /// Whether the run's deadline has passed, on the engine's clock.
    pub(crate) fn deadline_passed(&self) -> bool {
        self.deadline
            .is_some_and(|due| self.shared.clock.now() >= due.at)
    }

    /// The time left before the deadline, if the run has one.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        let due = self.deadline?;
        Some(Duration::from_millis(
            due.at.millis_since(self.shared.clock.now()),
        ))
    }

    /// Fails the run: its deadline passed.
    pub(crate) fn exceed_deadline(&mut self) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            let Some(due) = self.deadline else {
                return Ok(());
            };
            let paused = if due.paused_ms > 0 {
                format!(" (not counting {} ms spent paused)", due.paused_ms)
            } else {
                String::new()
            };
            self.rec
                .fail(
                    FailureKind::DeadlineExceeded,
                    format!(
                        "the run's deadline of {} ms passed at {}{paused}; no step starts after it: \
                         give the run a longer deadline, or less to do",
                        due.time_ms, due.at
                    ),
                )
                .await
        })
    }
}

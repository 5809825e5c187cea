//! What the driver does about a run's deadline (see `deadline`): no step starts after it,
//! a tool call in flight is given what remains, and the run fails as `DeadlineExceeded`.

use std::time::Duration;

use rein_run::BoxFuture;

use crate::driver::Driver;
use crate::error::EngineError;

impl Driver {
    /// Whether the run's deadline has passed, on the engine's clock.
    pub(crate) fn deadline_passed(&self) -> bool {
        self.gate().deadline_passed()
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
            let failure = crate::gate::deadline_failure(due);
            self.rec.fail(failure.kind, failure.message).await
        })
    }
}

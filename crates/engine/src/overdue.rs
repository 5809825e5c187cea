//! What the driver does about a run's deadline (see `deadline`): a tool call or the
//! planner in flight is given what remains. Whether it passed, and the `DeadlineExceeded`
//! failure it makes, are the gate's (`Gate::overdue`).

use std::time::Duration;

use crate::driver::Driver;

impl Driver {
    /// The time left before the deadline, if the run has one.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        let due = self.deadline?;
        Some(Duration::from_millis(
            due.at.millis_since(self.shared.clock.now()),
        ))
    }
}

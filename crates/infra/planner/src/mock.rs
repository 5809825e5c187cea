//! `MockPlanner`: a planner that answers from a closure, for tests that compute decisions
//! from the request.

use std::fmt;

use rein_run::{Decision, PlanRequest, Planner, PlannerError};

/// The closure behind a [`MockPlanner`].
type Answer = dyn Fn(&PlanRequest<'_>) -> Result<Decision, PlannerError> + Send + Sync;

/// A planner that answers every request with a closure.
///
/// ```
/// use rein_planner::MockPlanner;
/// use rein_run::{Decision, PlannerError, State};
///
/// let planner = MockPlanner::new(|request| match request.state() {
///     State::Intake => Ok(Decision::transition(State::Explore, "start")),
///     State::Explore if request.step() < 5 => Ok(Decision::transition(State::Decide, "enough")),
///     state => Err(PlannerError::failed(format!("no plan for {state}"))),
/// });
/// # let _ = planner;
/// ```
pub struct MockPlanner {
    answer: Box<Answer>,
}

impl MockPlanner {
    /// A planner whose every decision (or error) is `answer(&request)`.
    #[must_use]
    pub fn new(
        answer: impl Fn(&PlanRequest<'_>) -> Result<Decision, PlannerError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            answer: Box::new(answer),
        }
    }
}

impl Planner for MockPlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        (self.answer)(&request)
    }
}

impl fmt::Debug for MockPlanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockPlanner").finish_non_exhaustive()
    }
}

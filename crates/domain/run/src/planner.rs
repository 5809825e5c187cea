//! The `Planner` port: what proposes decisions, and the view of the run it decides on.

use std::future::Future;

use serde_json::{Map, Value};

use crate::{BoxFuture, BudgetSnapshot, Decision, Evidence, Run, Skill, State, ToolSpec};

/// What a planner sees when asked for the next decision. Borrowed from the engine: building
/// one costs nothing.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    run: &'a Run,
    tools: &'a [ToolSpec],
    budget: BudgetSnapshot<'a>,
    skills: &'a [Skill],
}

impl<'a> PlanRequest<'a> {
    /// A request over `run`, offering `tools` (the specs of the tools allowed in the run's
    /// current state) and a view of the budgets.
    #[must_use]
    pub const fn new(run: &'a Run, tools: &'a [ToolSpec], budget: BudgetSnapshot<'a>) -> Self {
        Self {
            run,
            tools,
            budget,
            skills: &[],
        }
    }

    /// The same request, offering `skills` (knowledge the planner may load; never tools or
    /// permissions).
    #[must_use]
    pub const fn with_skills(mut self, skills: &'a [Skill]) -> Self {
        self.skills = skills;
        self
    }

    /// The whole run, read-only.
    #[must_use]
    pub const fn run(&self) -> &'a Run {
        self.run
    }

    /// The run's goal.
    #[must_use]
    pub fn goal(&self) -> &'a str {
        self.run.goal()
    }

    /// The current state.
    #[must_use]
    pub const fn state(&self) -> State {
        self.run.state()
    }

    /// Evidence so far, oldest first.
    #[must_use]
    pub fn evidence(&self) -> &'a [Evidence] {
        self.run.evidence()
    }

    /// The run's variables.
    #[must_use]
    pub const fn vars(&self) -> &'a Map<String, Value> {
        self.run.vars()
    }

    /// The number of this step, from 0 (how many decisions were taken before it).
    #[must_use]
    pub const fn step(&self) -> u32 {
        self.run.steps()
    }

    /// Specs of the tools allowed in the current state.
    #[must_use]
    pub const fn tools(&self) -> &'a [ToolSpec] {
        self.tools
    }

    /// Budget limits and use.
    #[must_use]
    pub const fn budget(&self) -> BudgetSnapshot<'a> {
        self.budget
    }

    /// The skills the planner may load (names and descriptions to list; bodies to load).
    #[must_use]
    pub const fn skills(&self) -> &'a [Skill] {
        self.skills
    }
}

/// Why a planner could not propose a decision. The engine records it and fails the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlannerError {
    /// A scripted step expected the run in another state.
    #[error("script step {step} expects state {expected}, but the run is in {actual}")]
    StateMismatch {
        /// The step (from 0).
        step: u32,
        /// The state the script expected.
        expected: State,
        /// The run's state.
        actual: State,
    },
    /// The planner failed (a model error, a malformed response, …).
    #[error("planner failed: {message}")]
    Failed {
        /// What went wrong.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl PlannerError {
    /// A planner failure with a message.
    #[must_use]
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            source: None,
        }
    }
}

/// Proposes one [`Decision`] per step. Implement it with a plain `async fn`.
///
/// # Contract
/// - `plan` MUST only propose: the engine checks every decision against the policies and
///   rejects what they do not allow. A planner cannot grant itself anything.
/// - `plan` SHOULD be a function of the request: one planner instance serves many
///   concurrent runs, and a resumed run asks again for the step it was on.
/// - `plan` MAY fail with [`PlannerError`]; the run then fails with that error, recorded.
///
/// ```
/// use rein_run::{Decision, PlanRequest, Planner, PlannerError, State};
/// use serde_json::json;
///
/// /// Explores once, then finishes with the number of pieces of evidence seen.
/// struct CountingPlanner;
///
/// impl Planner for CountingPlanner {
///     async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
///         Ok(match request.state() {
///             State::Intake => Decision::transition(State::Explore, "look around"),
///             State::Explore => Decision::transition(State::Decide, "seen enough"),
///             _ => Decision::finish("counted", json!(request.evidence().len())),
///         })
///     }
/// }
/// # let _ = CountingPlanner;
/// ```
pub trait Planner: Send + Sync + 'static {
    /// Proposes the next decision for the run in `request`.
    fn plan(
        &self,
        request: PlanRequest<'_>,
    ) -> impl Future<Output = Result<Decision, PlannerError>> + Send;
}

/// The object-safe twin of [`Planner`], implemented for every planner.
pub trait DynPlanner: Send + Sync + 'static {
    /// Proposes the next decision, boxed.
    fn plan_boxed<'a>(
        &'a self,
        request: PlanRequest<'a>,
    ) -> BoxFuture<'a, Result<Decision, PlannerError>>;
}

impl<P: Planner> DynPlanner for P {
    fn plan_boxed<'a>(
        &'a self,
        request: PlanRequest<'a>,
    ) -> BoxFuture<'a, Result<Decision, PlannerError>> {
        Box::pin(self.plan(request))
    }
}

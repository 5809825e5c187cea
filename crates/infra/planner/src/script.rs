//! `ScriptedPlanner` and `ScriptStep`: a planner that proposes the decisions of a script, one
//! per step, positioned by the run's step number.

use rein_run::{Decision, PlanRequest, Planner, PlannerError, State};
use serde::{Deserialize, Serialize};

use crate::Condition;

/// A planner that proposes the decisions of a script: step `n` of a run gets the script's
/// step `n`.
///
/// It is **stateless across runs**: the position is the run's step number
/// ([`PlanRequest::step`]), not a cursor inside the planner. One instance serves any number
/// of concurrent runs, each at its own step, and a resumed run continues where it stopped.
///
/// For each request it:
/// 1. takes the script step at the run's step number; past the end of the script it
///    proposes [`Decision::Fail`] with a reason saying where the script ended;
/// 2. checks the step's expected state, if any: a run in another state is a
///    [`PlannerError::StateMismatch`] naming the step, the expected and the actual state;
/// 3. proposes the step's decision, or its `otherwise` decision when the step has a
///    [`Condition`] that does not hold.
///
/// ```
/// use rein_planner::{ScriptStep, ScriptedPlanner};
/// use rein_run::{Decision, State};
/// use serde_json::json;
///
/// let planner = ScriptedPlanner::new([
///     ScriptStep::expect(State::Intake, Decision::transition(State::Decide, "straight to it")),
///     ScriptStep::expect(State::Decide, Decision::finish("nothing to do", json!(null))),
/// ]);
/// assert_eq!(planner.steps().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedPlanner {
    steps: Vec<ScriptStep>,
}

/// One step of a script: an optional expected state, the decision to propose, and optionally
/// a [`Condition`] with the decision to propose instead when it does not hold.
///
/// In JSON (unknown fields are errors; `when` and `otherwise` go together):
///
/// ```
/// use rein_planner::{Condition, ScriptStep};
/// use rein_run::{Decision, State};
/// use serde_json::json;
///
/// let step: ScriptStep = serde_json::from_value(json!({
///     "expect": "validate",
///     "decision": {"type": "finish", "summary": "deployed"},
///     "when": "last_tool_succeeded",
///     "otherwise": {"type": "transition", "to": "decide", "reason": "check failed"}
/// }))?;
/// assert_eq!(
///     step,
///     ScriptStep::expect(State::Validate, Decision::finish("deployed", json!(null)))
///         .when(Condition::LastToolSucceeded, Decision::transition(State::Decide, "check failed"))
/// );
/// let err = serde_json::from_value::<ScriptStep>(json!({
///     "decision": {"type": "fail", "reason": "x"}, "when": "last_tool_failed"
/// })).unwrap_err();
/// assert!(err.to_string().contains("no `otherwise`"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StepRepr", into = "StepRepr")]
pub struct ScriptStep {
    expect: Option<State>,
    decision: Decision,
    branch: Option<(Condition, Decision)>,
}

impl ScriptedPlanner {
    /// A planner following `steps`; step `n` of a run gets `steps[n]`.
    #[must_use]
    pub fn new(steps: impl IntoIterator<Item = ScriptStep>) -> Self {
        Self {
            steps: steps.into_iter().collect(),
        }
    }

    /// The script.
    #[must_use]
    pub fn steps(&self) -> &[ScriptStep] {
        &self.steps
    }

    /// The decision for `request`, as [`Planner::plan`] proposes it.
    fn decide(&self, request: &PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let step = request.step();
        let Some(script_step) = usize::try_from(step).ok().and_then(|i| self.steps.get(i)) else {
            let len = self.steps.len();
            return Ok(Decision::fail(format!(
                "the script ended at step {len}: it has {len} steps (numbered from 0) and the run asked for step {step}; add steps, or end the script with a finish or fail decision"
            )));
        };
        if let Some(expected) = script_step.expect {
            let actual = request.state();
            if expected != actual {
                return Err(PlannerError::StateMismatch {
                    step,
                    expected,
                    actual,
                });
            }
        }
        Ok(script_step.choose(request).clone())
    }
}

impl Planner for ScriptedPlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        self.decide(&request)
    }

    /// Always `Some`: a script decides from the request alone.
    fn try_plan_now(&self, request: &PlanRequest<'_>) -> Option<Result<Decision, PlannerError>> {
        Some(self.decide(request))
    }
}

impl ScriptStep {
    /// A step that expects the run in `state` and proposes `decision`.
    #[must_use]
    pub const fn expect(state: State, decision: Decision) -> Self {
        Self {
            expect: Some(state),
            decision,
            branch: None,
        }
    }

    /// A step that proposes `decision` whatever state the run is in.
    #[must_use]
    pub const fn any(decision: Decision) -> Self {
        Self {
            expect: None,
            decision,
            branch: None,
        }
    }

    /// Makes the step conditional: it proposes its decision when `condition` holds, and
    /// `otherwise` when it does not. The expected state is checked either way. Replaces any
    /// earlier condition.
    #[must_use]
    pub fn when(mut self, condition: Condition, otherwise: Decision) -> Self {
        self.branch = Some((condition, otherwise));
        self
    }

    /// The state the run must be in at this step, if any.
    #[must_use]
    pub const fn expected_state(&self) -> Option<State> {
        self.expect
    }

    /// The decision proposed (when the condition holds, if there is one).
    #[must_use]
    pub const fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The condition, if the step has one.
    #[must_use]
    pub fn condition(&self) -> Option<&Condition> {
        self.branch.as_ref().map(|(condition, _)| condition)
    }

    /// The decision proposed when the condition does not hold, if the step has one.
    #[must_use]
    pub fn otherwise(&self) -> Option<&Decision> {
        self.branch.as_ref().map(|(_, otherwise)| otherwise)
    }

    fn choose(&self, request: &PlanRequest<'_>) -> &Decision {
        match &self.branch {
            Some((condition, otherwise)) if !condition.holds(request) => otherwise,
            _ => &self.decision,
        }
    }
}

/// A script step as written in JSON.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expect: Option<State>,
    decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    when: Option<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    otherwise: Option<Decision>,
}

/// Why a script step read from JSON is not a valid step.
#[derive(Debug, thiserror::Error)]
enum StepReprError {
    #[error(
        "script step has `when` but no `otherwise`: add the decision to propose when the condition does not hold"
    )]
    WhenWithoutOtherwise,
    #[error(
        "script step has `otherwise` but no `when`: add the condition that chooses between `decision` and `otherwise`, or remove `otherwise`"
    )]
    OtherwiseWithoutWhen,
}

impl TryFrom<StepRepr> for ScriptStep {
    type Error = StepReprError;
    fn try_from(repr: StepRepr) -> Result<Self, Self::Error> {
        let branch = match (repr.when, repr.otherwise) {
            (Some(condition), Some(otherwise)) => Some((condition, otherwise)),
            (None, None) => None,
            (Some(_), None) => return Err(StepReprError::WhenWithoutOtherwise),
            (None, Some(_)) => return Err(StepReprError::OtherwiseWithoutWhen),
        };
        Ok(Self {
            expect: repr.expect,
            decision: repr.decision,
            branch,
        })
    }
}

impl From<ScriptStep> for StepRepr {
    fn from(step: ScriptStep) -> Self {
        let (when, otherwise) = step.branch.unzip();
        Self {
            expect: step.expect,
            decision: step.decision,
            when,
            otherwise,
        }
    }
}

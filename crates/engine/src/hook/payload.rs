//! `HookPayload`: what a hook is shown at a point, one a run, reset in place point after
//! point.

use std::sync::Arc;

use rein_run::{Decision, RunId, RunStatus, Spend, State, ToolName};
use serde::Serialize;
use serde_json::Value;

use super::HookPoint;

/// What a hook is shown: where the run is and what is about to happen (or just happened).
/// Serialized as the JSON a command hook reads on stdin; fields that do not apply at the
/// point are left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HookPayload {
    /// Where the hook is asked.
    pub point: HookPoint,
    /// The run.
    pub run: RunId,
    /// The run's step (decisions taken so far).
    pub step: u32,
    /// The run's state.
    pub state: State,
    /// The run's goal (`run_start`), or the child's (`child_start`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The tool (the tool points).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolName>,
    /// The call's input (the tool points), shared with the call's decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Arc<Value>>,
    /// The call's index in its batch, for a call of a `call_tools` batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_index: Option<u32>,
    /// The call's output (`after_tool`, when it succeeded; an output stored as an artifact
    /// is shown as its reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// What went wrong (`after_tool` when the call failed, `run_end` when the run failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The decision the planner proposed (`after_model`), as the planner gave it. A decision
    /// whose JSON nests deeper than [`MAX_JSON_DEPTH`](crate::MAX_JSON_DEPTH) is refused
    /// before the `after_model` hooks are asked, and never shown to them: it is never copied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The child run (`child_end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child: Option<RunId>,
    /// The question the run waits on (`pause`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// How the run (`run_end`) or the child (`child_end`) ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    /// What the run has used of each budget so far.
    pub used: Spend,
}

impl HookPayload {
    /// A payload at `point` of run `run`, at `step` in `state`, with nothing else.
    #[must_use]
    pub fn new(point: HookPoint, run: RunId, step: u32, state: State) -> Self {
        Self {
            point,
            run,
            step,
            state,
            goal: None,
            tool: None,
            input: None,
            batch_index: None,
            output: None,
            error: None,
            decision: None,
            child: None,
            question: None,
            status: None,
            used: Spend::new(),
        }
    }

    /// Makes this payload one at `point` of its run, at `step` in `state`, with nothing
    /// else but `used`, which the caller brings up to date: the engine reuses one payload a
    /// run, point after point, when no hook kept the last one.
    #[inline]
    pub(crate) fn reset(&mut self, point: HookPoint, step: u32, state: State) {
        self.point = point;
        self.step = step;
        self.state = state;
        // Each field is dropped only when a point filled it (most points fill one or two):
        // an empty one costs a test, not a call of its drop.
        clear(&mut self.goal);
        self.tool = None;
        clear(&mut self.input);
        self.batch_index = None;
        clear(&mut self.output);
        clear(&mut self.error);
        clear(&mut self.decision);
        clear(&mut self.child);
        clear(&mut self.question);
        self.status = None;
    }
}

/// Empties `field`, dropping what it held, if anything.
fn clear<T>(field: &mut Option<T>) {
    if field.is_some() {
        *field = None;
    }
}

//! The model's own dialogue, as the ledger records it: each reply a planner's model gave
//! ([`ModelReply`], kept with its `planner_call`), where it falls among the run's evidence
//! ([`Turn`]), and what the run's policy allows in each state ([`StateRules`]), so a
//! planner can show the model its earlier turns, exactly, at every step.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{State, ToolSpec};

/// What a model answered, as its planner recorded it: enough to show the model its own turn
/// again, byte for byte (its call ids echoed exactly).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelReply {
    /// Its prose, possibly empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The functions it called, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ModelCall>,
}

impl ModelReply {
    /// Whether the reply holds nothing: no text, no call.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.calls.is_empty()
    }
}

/// One function call in a [`ModelReply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCall {
    /// The provider's id for the call.
    pub id: String,
    /// The function's name, as the model wrote it.
    pub name: String,
    /// The arguments, as the JSON text the model produced (possibly invalid).
    pub arguments: String,
}

/// One model reply in a run's history: the step and state it was given in, and how many
/// evidence items the run held then (the reply follows them; what it led to follows it).
///
/// ```
/// use std::sync::Arc;
/// use rein_run::{ModelReply, State, Turn};
/// let turn = Turn { step: 2, state: State::Explore, after: 3, reply: Arc::new(ModelReply::default()) };
/// assert!(turn.reply.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The step it was given in.
    pub step: u32,
    /// The state the run was in.
    pub state: State,
    /// How many evidence items the run held when it was recorded.
    pub after: usize,
    /// What the model answered.
    pub reply: Arc<ModelReply>,
}

/// What the run's policy allows in each state: the tools that run there and the states it
/// may move to. A planner that offers a model the run's tools every step (so the model's
/// cached prefix holds) tells it with this which of them each state allows.
///
/// ```
/// use rein_run::{State, StateRules, ToolName, ToolSpec};
/// let read = ToolSpec::new(ToolName::new("fs.read")?, "reads a file");
/// let mut rules = StateRules::default();
/// rules.set(State::Explore, vec![read.clone()], vec![State::Decide, State::Failed]);
/// assert_eq!(rules.tools(State::Explore), [read]);
/// assert!(rules.tools(State::Decide).is_empty());
/// assert_eq!(rules.run_tools().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateRules {
    tools: [Vec<ToolSpec>; 7],
    next: [Vec<State>; 7],
    /// Every tool some state allows, each once, in the order first met through
    /// [`State::ALL`].
    all: Vec<ToolSpec>,
}

impl StateRules {
    /// Says that `state` allows `tools` and may move to `next`.
    pub fn set(&mut self, state: State, tools: Vec<ToolSpec>, next: Vec<State>) {
        self.tools[state.index()] = tools;
        self.next[state.index()] = next;
        self.all = State::ALL
            .iter()
            .flat_map(|s| self.tools[s.index()].iter())
            .fold(Vec::<ToolSpec>::new(), |mut all, spec| {
                if !all.iter().any(|s| s.name() == spec.name()) {
                    all.push(spec.clone());
                }
                all
            });
    }

    /// The tools `state` allows.
    #[must_use]
    pub fn tools(&self, state: State) -> &[ToolSpec] {
        &self.tools[state.index()]
    }

    /// The states `state` may move to.
    #[must_use]
    pub fn next(&self, state: State) -> &[State] {
        &self.next[state.index()]
    }

    /// Every tool some state allows: the run's tools.
    #[must_use]
    pub fn run_tools(&self) -> &[ToolSpec] {
        &self.all
    }
}

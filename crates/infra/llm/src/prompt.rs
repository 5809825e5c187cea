//! The one function that builds what a step sends: a pure function of the run's recorded
//! history (goal, the model's earlier replies, evidence, handed-back rejections, human
//! answers), the skills the request offers and the prompt configuration, so replay and
//! inspection rebuild exactly what was sent.
//!
//! The request is the model's own dialogue: the goal first, each earlier reply as the
//! assistant turn it was, its calls answered by their results, then what else happened as
//! short user messages appended at the end. The system prompt and the functions offered
//! stay the same from one step to the next, so a provider can reuse its cached prefix.

use rein_run::{Evidence, PlanRequest, Skill, State, Turn};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::chat::{ChatRequest, FunctionDef};
use crate::names::function_name;

mod dialogue;
mod render;

pub(crate) use dialogue::record;

/// The default system prompt.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are the planner of an agent run governed by rein. \
Each reply calls functions: tools to gather evidence or act, `transition` to move to another \
state, `finish` when the goal is met, `fail` when it cannot be met, or `ask_human` when only a \
person can answer. One reply may do several things in order (move to a state and call its \
tools, or call tools and then `finish`); rein applies them in that order, checks each against \
its policies, stops at the first it refuses and tells you why; then choose differently.";

/// How prompts are built and compacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptConfig {
    /// The system prompt.
    #[serde(default = "default_system")]
    pub system: String,
    /// Above this estimated prompt size (tokens), older tool I/O is compacted; none: never
    /// before the provider says the context is too long.
    #[serde(default)]
    pub max_prompt_tokens: Option<u64>,
    /// Evidence items kept verbatim when compacting (the most recent ones).
    #[serde(default = "default_keep_last")]
    pub keep_last: usize,
    /// The longest rendering of one evidence item, in characters; longer ones are cut.
    #[serde(default = "default_max_item_chars")]
    pub max_item_chars: usize,
}

impl Default for PromptConfig {
    fn default() -> Self {
        Self {
            system: default_system(),
            max_prompt_tokens: None,
            keep_last: default_keep_last(),
            max_item_chars: default_max_item_chars(),
        }
    }
}

fn default_system() -> String {
    DEFAULT_SYSTEM_PROMPT.to_owned()
}
const fn default_keep_last() -> usize {
    4
}
const fn default_max_item_chars() -> usize {
    4000
}

/// What each working state is for, as the model is told.
#[must_use]
pub const fn state_guidance(state: State) -> &'static str {
    match state {
        State::Intake => "understand the goal; no tools run here",
        State::Explore => "gather information with read-only tools",
        State::Decide => "choose what to do from the evidence; no tools run here",
        State::Act => "make the changes the goal needs",
        State::Validate => "check that the result meets the goal",
        State::Done => "the run is complete",
        State::Failed => "the run has failed",
    }
}

/// An upper-leaning token count: a third of the request's bytes, rounded up (tokenizers
/// average three to four bytes a token). The budget check uses it before a call; the
/// provider's reported usage is what is charged.
#[must_use]
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    let bytes = serde_json::to_vec(request).map_or(0, |b| b.len());
    u64::try_from(bytes.div_ceil(3)).unwrap_or(u64::MAX)
}

/// The name of the built-in tool that loads a skill's body.
pub(crate) const SKILL_LOAD: &str = "skill.load";

/// What a step added to the run's history while it planned, before the engine applies it:
/// the replies the model gave and the corrections handed back to it.
#[derive(Debug, Default)]
pub(crate) struct StepSoFar {
    /// The model's replies in this step, in order.
    pub(crate) turns: Vec<Turn>,
    /// The corrections handed back, as the engine will record them (violation notes).
    pub(crate) evidence: Vec<Evidence>,
}

/// Builds the request for the step in `request` (its first model call).
///
/// The system prompt is [`PromptConfig::system`], followed, when the request offers skills,
/// by a list of their names and descriptions. The messages are the model's dialogue: the
/// goal (with the body of every skill the goal triggers), then each reply the request's
/// [`dialogue`](PlanRequest::dialogue) records as an assistant turn, its calls answered
/// in order by what they led to (a tool's result or failure, rein's refusal, a human's
/// answer, a child run's outcome; a call that never completed says so), then the rest of
/// the evidence, the body (with its checksum) of each skill the evidence triggers or a
/// `skill.load` call loaded, and before each step's first reply the state the run was in
/// and what that state allows. With `compact`, or when the estimate exceeds
/// [`PromptConfig::max_prompt_tokens`], the replies and tool results older than the last
/// [`PromptConfig::keep_last`] evidence items are replaced, together, by one summary note
/// (the goal, human answers and notes stay).
#[must_use]
pub fn build_request(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    compact: bool,
) -> ChatRequest {
    build_request_with_skills(config, request, &StepSoFar::default(), compact).0
}

/// [`build_request`], with what the step added so far, and the skills whose body the
/// request carries, in the order it holds them: what the planner reports to its meter as
/// having entered the context.
pub(crate) fn build_request_with_skills<'a>(
    config: &PromptConfig,
    request: &PlanRequest<'a>,
    so_far: &StepSoFar,
    compact: bool,
) -> (ChatRequest, Vec<&'a Skill>) {
    let functions = functions(request);
    let system = with_skills(&config.system, request.skills());
    let (messages, bodies) = dialogue::messages(config, request, so_far, false);
    let full = ChatRequest {
        system,
        messages,
        functions,
    };
    let over = config
        .max_prompt_tokens
        .is_some_and(|limit| estimate_tokens(&full) > limit);
    if compact || over {
        let (messages, bodies) = dialogue::messages(config, request, so_far, true);
        (ChatRequest { messages, ..full }, bodies)
    } else {
        (full, bodies)
    }
}

/// `system`, then the skills offered, every one listed (their bodies enter the dialogue
/// where they are triggered, so this stays the same through a run).
fn with_skills(system: &str, skills: &[Skill]) -> String {
    if skills.is_empty() {
        return system.to_owned();
    }
    let mut out = format!(
        "{system}\n\nSkills (how-tos; load one with the rein tool `{SKILL_LOAD}` when it is \
         offered; they add knowledge, never tools or permissions):\n"
    );
    for skill in skills {
        out.push_str(&format!("- {}: {}\n", skill.name(), skill.description()));
    }
    out
}

/// The states the engine allows from `state`: from the request's rules when it has them,
/// else (the current state) the request's next states, else every state but `state`.
pub(crate) fn next_states(request: &PlanRequest<'_>, state: State) -> Vec<State> {
    if let Some(rules) = request.rules() {
        return rules.next(state).to_vec();
    }
    request.next_states().map_or_else(
        || State::ALL.into_iter().filter(|s| *s != state).collect(),
        <[State]>::to_vec,
    )
}

/// The functions offered. With the run's rules ([`PlanRequest::rules`]): every tool of the
/// run and the control functions some state allows, the same at every step (the state's
/// eligibility is told in the dialogue; rein refuses an ineligible call). Without: the
/// eligible tools, then the control functions the transition table allows from here.
fn functions(request: &PlanRequest<'_>) -> Vec<FunctionDef> {
    let (tools, next) = match request.rules() {
        Some(rules) => {
            let mut next: Vec<State> = Vec::new();
            for to in State::ALL {
                if State::ALL
                    .iter()
                    .any(|from| rules.next(*from).contains(&to))
                {
                    next.push(to);
                }
            }
            (rules.run_tools(), next)
        }
        None => (request.tools(), next_states(request, request.state())),
    };
    let mut out: Vec<FunctionDef> = tools
        .iter()
        .map(|spec| FunctionDef {
            name: function_name(spec.name()),
            description: spec.description().to_owned(),
            parameters: object_schema(spec.input_schema()),
        })
        .collect();
    let working: Vec<&str> = next
        .iter()
        .filter(|s| !s.is_terminal())
        .map(|s| s.as_str())
        .collect();
    if !working.is_empty() {
        out.push(FunctionDef {
            name: "transition".into(),
            description: "Move the run to another working state.".into(),
            parameters: json!({"type": "object", "properties": {
                "to": {"type": "string", "enum": working},
                "reason": {"type": "string"}}, "required": ["to", "reason"]}),
        });
    }
    if next.contains(&State::Done) {
        out.push(FunctionDef {
            name: "finish".into(),
            description: "End the run successfully with a summary and a result.".into(),
            // The run's result schema, when it has one, is `result`'s: the model sees what
            // rein will check. It comes from the run's policy, so it is the same at every step.
            parameters: match request.result_schema() {
                None => json!({"type": "object", "properties": {
                    "summary": {"type": "string"}, "result": {}}, "required": ["summary"]}),
                Some(schema) => json!({"type": "object", "properties": {
                    "summary": {"type": "string"}, "result": schema},
                    "required": ["summary", "result"]}),
            },
        });
    }
    if next.contains(&State::Failed) {
        out.push(FunctionDef {
            name: "fail".into(),
            description: "End the run as failed, saying why the goal cannot be met.".into(),
            parameters: json!({"type": "object", "properties": {
                "reason": {"type": "string"}}, "required": ["reason"]}),
        });
    }
    out.push(FunctionDef {
        name: "ask_human".into(),
        description: "Pause the run and ask a person; offer options when the answer is a choice."
            .into(),
        parameters: json!({"type": "object", "properties": {
            "question": {"type": "string"},
            "options": {"type": "array", "items": {"type": "string"}}}, "required": ["question"]}),
    });
    if let Some(delegation) = request.delegation() {
        out.push(delegate_function(delegation.planners()));
    }
    out
}

/// `delegate`, offered while the run may delegate: the child's goal, why, what to carve out
/// of each budget, and which of the engine's named planners drives it.
fn delegate_function(planners: &[String]) -> FunctionDef {
    let mut properties = json!({
        "goal": {"type": "string", "description": "The child run's goal."},
        "reason": {"type": "string"},
        "budget": {
            "type": "object",
            "description": "How much of each budget (by name, e.g. tool_calls) to carve out \
                for the child; a budget this run limits and the map leaves out is carved \
                whole (all that is left of it).",
            "additionalProperties": {"type": "integer", "minimum": 0}
        }
    });
    if !planners.is_empty() {
        properties["planner"] = json!({
            "type": "string",
            "enum": planners,
            "description": "The planner that drives the child; leave out for this run's."
        });
    }
    FunctionDef {
        name: "delegate".into(),
        description: "Delegate a sub-task to a child run with its own ledger and a budget \
            carved out of this run's; its summary and result come back as evidence."
            .into(),
        parameters: json!({"type": "object", "properties": properties, "required": ["goal"]}),
    }
}

/// Providers want an object schema for parameters.
fn object_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("object") => {
            schema.clone()
        }
        _ => json!({"type": "object"}),
    }
}

//! The one function that builds what a step sends: a pure function of the run's recorded
//! history (goal, state, evidence, handed-back rejections, human answers), the skills the
//! request offers and the prompt configuration, so replay and inspection rebuild exactly
//! what was sent.

use std::collections::BTreeMap;

use rein_run::{ChildOutcome, EvidenceKind, NoteSource, Payload, PlanRequest, Skill, State};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::chat::{ChatRequest, FunctionDef, Message};
use crate::names::function_name;

/// The default system prompt.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are the planner of an agent run governed by rein. \
Each reply must call exactly one function: a tool to gather evidence or act, `transition` to \
move to another state, `finish` when the goal is met, `fail` when it cannot be met, or \
`ask_human` when only a person can answer. rein checks every call against its policies and \
tells you when it refuses one; then choose differently.";

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
const SKILL_LOAD: &str = "skill.load";

/// Builds the request for the step in `request`.
///
/// The system prompt is [`PromptConfig::system`], followed, when the request offers skills,
/// by a list of their names and descriptions, and the body (with its checksum) of every
/// skill whose triggers occur in the goal or the evidence, or that a `skill.load` call in
/// the evidence loaded. With `compact`, or when the estimate
/// exceeds [`PromptConfig::max_prompt_tokens`], tool results and failures older than the
/// last [`PromptConfig::keep_last`] evidence items are replaced by one summary note (human
/// answers and notes stay).
#[must_use]
pub fn build_request(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    compact: bool,
) -> ChatRequest {
    build_request_with_skills(config, request, compact).0
}

/// [`build_request`], and the skills whose body the request carries, in the order it
/// holds them: what the planner reports to its meter as having entered the context.
pub(crate) fn build_request_with_skills<'a>(
    config: &PromptConfig,
    request: &PlanRequest<'a>,
    compact: bool,
) -> (ChatRequest, Vec<&'a Skill>) {
    let functions = functions(request);
    let bodies = skills_in_context(request, config.max_item_chars);
    let full = assemble(config, request, &functions, &bodies, false);
    let over = config
        .max_prompt_tokens
        .is_some_and(|limit| estimate_tokens(&full) > limit);
    if compact || over {
        let compacted = assemble(config, request, &functions, &bodies, true);
        (compacted, bodies)
    } else {
        (full, bodies)
    }
}

fn assemble(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    functions: &[FunctionDef],
    bodies: &[&Skill],
    compact: bool,
) -> ChatRequest {
    let state = request.state();
    let mut text = format!("Goal: {}\n\n", request.goal());
    text.push_str(&format!(
        "Current state: {} ({}). Step {}.\n",
        state,
        state_guidance(state),
        request.step()
    ));
    let next = next_states(request);
    let names: Vec<&str> = next.iter().map(|s| s.as_str()).collect();
    text.push_str(&format!(
        "From here the run may move to: {}.\n",
        names.join(", ")
    ));
    if request.tools().is_empty() {
        text.push_str("No tools are available in this state.\n");
    } else {
        text.push_str("Tools available in this state:\n");
        for spec in request.tools() {
            text.push_str(&format!(
                "- {} (rein tool `{}`): {}\n",
                function_name(spec.name()),
                spec.name(),
                spec.description()
            ));
        }
    }
    if let Some(delegation) = request.delegation() {
        text.push_str(
            "You may delegate a sub-task with `delegate`: it starts a child run with its own \
             ledger and a budget carved out of this run's; when it ends, its summary and \
             result (or why it failed) come back to you as evidence.",
        );
        if delegation.planners().is_empty() {
            text.push('\n');
        } else {
            text.push_str(&format!(
                " Planners a child may use: {} (none named: this run's planner).\n",
                delegation.planners().join(", ")
            ));
        }
    }
    let evidence = request.evidence();
    if evidence.is_empty() {
        text.push_str("\nNo evidence yet.\n");
    } else {
        text.push_str("\nEvidence so far, oldest first:\n");
        let cut = if compact {
            evidence.len().saturating_sub(config.keep_last)
        } else {
            0
        };
        let mut compacted: BTreeMap<String, u32> = BTreeMap::new();
        for (i, item) in evidence.iter().enumerate() {
            let tool_io = matches!(
                item.kind,
                EvidenceKind::ToolResult { .. } | EvidenceKind::ToolFailure { .. }
            );
            if i < cut && tool_io {
                let name = match &item.kind {
                    EvidenceKind::ToolResult { tool, .. }
                    | EvidenceKind::ToolFailure { tool, .. } => tool.to_string(),
                    _ => String::new(),
                };
                *compacted.entry(name).or_default() += 1;
                continue;
            }
            if !compacted.is_empty() {
                text.push_str(&compaction_note(&compacted));
                compacted.clear();
            }
            let line = render(&item.kind, config.max_item_chars);
            text.push_str(&format!("[{}] (step {}) {}\n", i + 1, item.step, line));
        }
        if !compacted.is_empty() {
            text.push_str(&compaction_note(&compacted));
        }
    }
    text.push_str("\nCall exactly one function now.");
    ChatRequest {
        system: with_skills(&config.system, request.skills(), bodies),
        messages: vec![Message::User { text }],
        functions: functions.to_vec(),
    }
}

/// `system`, then the skills offered: every one listed; then the `bodies` in context.
fn with_skills(system: &str, skills: &[Skill], bodies: &[&Skill]) -> String {
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
    for skill in bodies {
        out.push_str(&format!(
            "\nSkill `{}` (sha256 {}):\n{}\n",
            skill.name(),
            skill.checksum(),
            skill.body().trim_end()
        ));
    }
    out
}

/// The skills `request` offers whose body belongs in its context: those the goal or the
/// evidence triggers, or a `skill.load` call loaded, in the order they are offered.
fn skills_in_context<'a>(request: &PlanRequest<'a>, max: usize) -> Vec<&'a Skill> {
    let skills = request.skills();
    if skills.is_empty() {
        return Vec::new();
    }
    let texts: Vec<String> = request
        .evidence()
        .iter()
        .map(|e| render(&e.kind, max))
        .collect();
    skills
        .iter()
        .filter(|s| in_context(s, request, &texts))
        .collect()
}

/// Whether `skill`'s body belongs in the context: a trigger occurs in the goal or the
/// evidence, or a `skill.load` call loaded it.
fn in_context(skill: &Skill, request: &PlanRequest<'_>, evidence: &[String]) -> bool {
    let loaded = request.evidence().iter().any(|e| {
        matches!(&e.kind, EvidenceKind::ToolResult { tool, input, .. }
            if tool.as_str() == SKILL_LOAD
                && input.get("name").and_then(Value::as_str) == Some(skill.name()))
    });
    loaded
        || skill.is_triggered_by(request.goal())
        || evidence.iter().any(|t| skill.is_triggered_by(t))
}

fn compaction_note(counts: &BTreeMap<String, u32>) -> String {
    let parts: Vec<String> = counts.iter().map(|(t, n)| format!("{t} ×{n}")).collect();
    format!(
        "[compacted] earlier tool results omitted to fit the context: {}\n",
        parts.join(", ")
    )
}

/// The states the engine allows from here, or every state but the current one when it did
/// not say.
fn next_states(request: &PlanRequest<'_>) -> Vec<State> {
    request.next_states().map_or_else(
        || {
            State::ALL
                .into_iter()
                .filter(|s| *s != request.state())
                .collect()
        },
        <[State]>::to_vec,
    )
}

fn render(kind: &EvidenceKind, max: usize) -> String {
    let line = match kind {
        EvidenceKind::ToolResult {
            tool,
            input,
            output,
            ..
        } => match output {
            Payload::Inline(value) => format!("tool {tool}({input}) returned: {value}"),
            Payload::Artifact(link) => format!(
                "tool {tool}({input}) returned {} bytes of {}, stored as artifact {}",
                link.size, link.content_type, link.id
            ),
        },
        EvidenceKind::ToolFailure { tool, input, error } => {
            format!("tool {tool}({input}) failed: {error}")
        }
        EvidenceKind::HumanInput { question, answer } => {
            format!("a human answered {answer:?} to {question:?}")
        }
        EvidenceKind::SystemNote { source, note } => match source {
            NoteSource::Violation => format!("rein refused your last decision: {note}"),
            NoteSource::Steering => format!("a person steering the run says: {note}"),
            _ => format!("rein notes: {note}"),
        },
        EvidenceKind::Child {
            child,
            outcome,
            spent,
        } => {
            let spent: Vec<String> = spent.iter().map(|(n, a)| format!("{n} {a}")).collect();
            let spent = if spent.is_empty() {
                "nothing".to_owned()
            } else {
                spent.join(", ")
            };
            match outcome {
                ChildOutcome::Completed { summary, result } => format!(
                    "child run {child} completed: {summary:?}, result: {result} (spent {spent})"
                ),
                ChildOutcome::Failed { failure } => format!(
                    "child run {child} failed ({:?}): {} (spent {spent})",
                    failure.kind, failure.message
                ),
                other => format!("child run {child} ended: {other:?} (spent {spent})"),
            }
        }
        other => format!("{other:?}"),
    };
    cut(line, max)
}

fn cut(mut s: String, max: usize) -> String {
    if let Some((at, _)) = s.char_indices().nth(max) {
        let total = s.len();
        s.truncate(at);
        s.push_str(&format!("… (cut, {total} bytes in all)"));
    }
    s
}

/// The functions offered: the eligible tools, then the control functions the transition
/// table allows from here.
fn functions(request: &PlanRequest<'_>) -> Vec<FunctionDef> {
    let mut out: Vec<FunctionDef> = request
        .tools()
        .iter()
        .map(|spec| FunctionDef {
            name: function_name(spec.name()),
            description: spec.description().to_owned(),
            parameters: object_schema(spec.input_schema()),
        })
        .collect();
    let next = next_states(request);
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
            parameters: json!({"type": "object", "properties": {
                "summary": {"type": "string"}, "result": {}}, "required": ["summary"]}),
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

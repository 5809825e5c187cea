//! The one function that builds what a step sends: a pure function of the run's recorded
//! history (goal, the model's earlier replies, evidence, handed-back rejections, human
//! answers), the skills the request offers and the prompt configuration, so replay and
//! inspection rebuild exactly what was sent.
//!
//! The request is the model's own dialogue: the goal first, each earlier reply as the
//! assistant turn it was, its calls answered by their results, then what else happened as
//! short user messages appended at the end. The system prompt and the functions offered
//! stay the same from one step to the next, so a provider can reuse its cached prefix.

use rein_run::{CompactionReason, Digest, PlanRequest, PromptCompaction, Skill, State};
use serde_json::{Value, json};

use crate::chat::{ChatRequest, FunctionDef, Message};
use crate::config::PromptConfig;
use crate::dialogue::{self, SKILL_LOAD, StepSoFar, next_states};
use crate::names::{ControlFunction, function_name};

/// An upper-leaning token count: a third of the request's bytes, rounded up (tokenizers
/// average three to four bytes a token). The budget check uses it before a call; the
/// provider's reported usage is what is charged.
#[must_use]
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    let bytes = serde_json::to_vec(request).map_or(0, |b| b.len());
    u64::try_from(bytes.div_ceil(3)).unwrap_or(u64::MAX)
}

/// When [`build_request`] compacts the older part of the dialogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compaction {
    /// Only when the request's estimate exceeds [`PromptConfig::max_prompt_tokens`]: what
    /// a step's first model call sends, and what `inspect` shows.
    #[default]
    WhenOverLimit,
    /// Always: what the planner sends again after the provider said the prompt exceeds
    /// the model's context.
    Always,
}

/// Builds the request for the step in `request` (its first model call).
///
/// The system prompt is [`PromptConfig::system_prompt`] (the team's instructions, then
/// rein's [`PromptConfig::system`]), followed, when the request offers skills,
/// by a list of their names and descriptions. The messages are the model's dialogue: the
/// goal (with the body of every skill the goal triggers), then each reply the request's
/// [`dialogue`](PlanRequest::dialogue) records as an assistant turn, its calls answered
/// in order by what they led to (a tool's result or failure, rein's refusal, a human's
/// answer, a child run's outcome; a call that never completed says so), then the rest of
/// the evidence, the body (with its checksum) of each skill the evidence triggers or a
/// `skill.load` call loaded, and before each step's first reply the state the run was in
/// and what that state allows. With [`Compaction::Always`], or when the estimate exceeds
/// [`PromptConfig::max_prompt_tokens`], the replies and tool results older than the last
/// [`PromptConfig::keep_last`] evidence items are replaced, together, by one summary note
/// (the goal, human answers and notes stay).
#[must_use]
pub fn build_request(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    compaction: Compaction,
) -> ChatRequest {
    build_request_with_skills(config, request, &StepSoFar::default(), compaction).chat
}

/// A request built, with what went into it.
pub(crate) struct Built<'a> {
    /// The request.
    pub(crate) chat: ChatRequest,
    /// The skills whose body the request carries, in the order it holds them: what the
    /// planner reports to its meter as having entered the context.
    pub(crate) skills: Vec<&'a Skill>,
    /// What compacting left out, when the request is compacted: what the planner records
    /// before sending it.
    pub(crate) compaction: Option<PromptCompaction>,
}

/// [`build_request`], with what the step added so far.
pub(crate) fn build_request_with_skills<'a>(
    config: &PromptConfig,
    request: &PlanRequest<'a>,
    so_far: &StepSoFar,
    compaction: Compaction,
) -> Built<'a> {
    let functions = functions(request);
    let system = with_skills(&config.system_prompt(), request.skills());
    let (messages, skills, _) = dialogue::messages(config, request, so_far, false);
    let full = ChatRequest {
        system,
        messages,
        functions,
    };
    let before = estimate_tokens(&full);
    let over = config.max_prompt_tokens.is_some_and(|limit| before > limit);
    if compaction != Compaction::Always && !over {
        return Built {
            chat: full,
            skills,
            compaction: None,
        };
    }
    let (messages, skills, dropped) = dialogue::messages(config, request, so_far, true);
    let hash = |m: &Message| Digest::of_bytes(&serde_json::to_vec(m).unwrap_or_default());
    let kept: std::collections::HashSet<Digest> = messages.iter().map(hash).collect();
    let dropped_messages = full
        .messages
        .iter()
        .map(hash)
        .filter(|h| !kept.contains(h))
        .collect();
    if messages == full.messages {
        // Nothing was left out: there is no compaction to record.
        return Built {
            chat: full,
            skills,
            compaction: None,
        };
    }
    let chat = ChatRequest { messages, ..full };
    let record = PromptCompaction {
        reason: if compaction == Compaction::Always {
            CompactionReason::ContextExceeded
        } else {
            CompactionReason::OverLimit
        },
        keep_last: u64::try_from(config.keep_last).unwrap_or(u64::MAX),
        max_item_chars: u64::try_from(config.max_item_chars).unwrap_or(u64::MAX),
        replies: dropped.replies,
        results: dropped.results,
        dropped: dropped_messages,
        summary: Digest::of_bytes(dropped.notes.join("\n").as_bytes()),
        tokens_before: before,
        tokens_after: estimate_tokens(&chat),
    };
    Built {
        chat,
        skills,
        compaction: Some(record),
    }
}

/// The request a step's model call sent when the ledger recorded `compaction` before it
/// (a `prompt_compacted` entry): built with the settings the compaction recorded, and
/// compacted as it was. With none, the request as [`build_request`] builds it with
/// [`Compaction::WhenOverLimit`] (a ledger written before compactions were recorded).
#[must_use]
pub fn rebuild_request(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    compaction: Option<&PromptCompaction>,
) -> ChatRequest {
    let Some(c) = compaction else {
        return build_request(config, request, Compaction::WhenOverLimit);
    };
    let config = PromptConfig {
        keep_last: usize::try_from(c.keep_last).unwrap_or(usize::MAX),
        max_item_chars: usize::try_from(c.max_item_chars).unwrap_or(usize::MAX),
        ..config.clone()
    };
    build_request(&config, request, Compaction::Always)
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
            name: ControlFunction::Transition.name().into(),
            description: "Move the run to another working state.".into(),
            parameters: json!({"type": "object", "properties": {
                "to": {"type": "string", "enum": working},
                "reason": {"type": "string"}}, "required": ["to", "reason"]}),
        });
    }
    if next.contains(&State::Done) {
        out.push(FunctionDef {
            name: ControlFunction::Finish.name().into(),
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
            name: ControlFunction::Fail.name().into(),
            description: "End the run as failed, saying why the goal cannot be met.".into(),
            parameters: json!({"type": "object", "properties": {
                "reason": {"type": "string"}}, "required": ["reason"]}),
        });
    }
    out.push(FunctionDef {
        name: ControlFunction::AskHuman.name().into(),
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
        name: ControlFunction::Delegate.name().into(),
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

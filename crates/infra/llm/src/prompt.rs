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

use crate::chat::{ChatRequest, FunctionDef};
use crate::config::PromptConfig;
use crate::dialogue::{self, Mode, SKILL_LOAD, StepSoFar};
use crate::names::{ControlFunction, function_name};
use crate::render::next_states;
use crate::size::json_len;

/// An upper-leaning token count: a third of the request's bytes, rounded up (tokenizers
/// average three to four bytes a token). The budget check uses it before a call; the
/// provider's reported usage is what is charged.
#[must_use]
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    tokens(json_len(request))
}

/// [`estimate_tokens`] of a request whose JSON is `bytes` long.
fn tokens(bytes: usize) -> u64 {
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
/// and what that state allows.
///
/// With [`Compaction::Always`], or when the estimate exceeds
/// [`PromptConfig::max_prompt_tokens`], the replies and tool results before a cut are
/// replaced, together, by one summary note (the goal, human answers and notes stay). The
/// cut moves in blocks of [`PromptConfig::keep_last`] evidence items, so that at least
/// `keep_last` and fewer than twice as many stay verbatim: between two moves of the cut the
/// request only grows at its end, and a provider's prefix cache keeps serving it. Whether
/// the request is over its limit is measured as the request is made, stopping once it is
/// past: the cost of deciding is bounded by the limit, not by the length of the run.
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
    let how = match compaction {
        Compaction::WhenOverLimit => How::WhenOverLimit,
        Compaction::Always => How::Always {
            cut: Cut::Blocks,
            measured: true,
        },
    };
    build(config, request, so_far, how)
}

/// Where a compacted request is cut.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// In blocks of `keep_last` ([`block_cut`]): how the planner cuts.
    Blocks,
    /// Before the last `keep_last` evidence items: how a version before blocks cut.
    LastItems,
    /// Before this evidence item, as recorded.
    At(usize),
}

/// When and how [`build`] compacts.
#[derive(Debug, Clone, Copy)]
enum How {
    /// When the request is over [`PromptConfig::max_prompt_tokens`], at [`Cut::Blocks`].
    WhenOverLimit,
    /// Always, at `cut`; `measured`: the full request measured for the record.
    Always { cut: Cut, measured: bool },
}

/// The index of the first evidence item kept verbatim in a dialogue of `len` items: a
/// multiple of `keep_last`, the last that keeps at least `keep_last` items (none kept when
/// `keep_last` is 0). The cut stays where it is until `keep_last` more items have come.
fn block_cut(len: usize, keep_last: usize) -> usize {
    if keep_last == 0 {
        return len;
    }
    len.saturating_sub(keep_last) / keep_last * keep_last
}

/// The request for the step in `request`, compacted as `how` says.
fn build<'a>(
    config: &PromptConfig,
    request: &PlanRequest<'a>,
    so_far: &StepSoFar,
    how: How,
) -> Built<'a> {
    let frame = ChatRequest {
        system: with_skills(&config.system_prompt(), request.skills()),
        messages: Vec::new(),
        functions: functions(request),
    };
    // The request's JSON is the frame's with the messages written into its empty list.
    let frame_bytes = json_len(&frame);
    let full = |stop_past| dialogue::messages(config, request, so_far, Mode::Full { stop_past });
    let uncompacted = |projection: dialogue::Projection<'a>, frame: ChatRequest| Built {
        chat: ChatRequest {
            messages: projection.messages,
            ..frame
        },
        skills: projection.skills,
        compaction: None,
    };
    let (cut, before) = match how {
        How::WhenOverLimit => {
            let Some(limit) = config.max_prompt_tokens else {
                return uncompacted(full(None), frame);
            };
            // Over the limit when its estimate (a third of its bytes, rounded up) is over:
            // when its bytes are over three times the limit.
            let limit_bytes = usize::try_from(limit.saturating_mul(3)).unwrap_or(usize::MAX);
            let measured = match limit_bytes.checked_sub(frame_bytes) {
                Some(room) => {
                    let projection = full(Some(room));
                    if !projection.past {
                        return uncompacted(projection, frame);
                    }
                    projection.bytes
                }
                None => 0,
            };
            (Cut::Blocks, tokens(frame_bytes.saturating_add(measured)))
        }
        How::Always { cut, measured } => {
            let before = if measured {
                tokens(frame_bytes.saturating_add(full(Some(usize::MAX)).bytes))
            } else {
                0
            };
            (cut, before)
        }
    };
    let len = request.evidence().len() + so_far.evidence.len();
    let cut = match cut {
        Cut::Blocks => block_cut(len, config.keep_last),
        Cut::LastItems => len.saturating_sub(config.keep_last),
        Cut::At(at) => at,
    };
    let projection = dialogue::messages(config, request, so_far, Mode::Compacted { cut });
    if !projection.left_out {
        // Nothing was left out: these are the full messages, and there is no compaction to
        // record.
        return uncompacted(projection, frame);
    }
    let dialogue::Projection {
        messages,
        skills,
        dropped,
        ..
    } = projection;
    let chat = ChatRequest { messages, ..frame };
    let record = PromptCompaction {
        reason: if matches!(how, How::Always { .. }) {
            CompactionReason::ContextExceeded
        } else {
            CompactionReason::OverLimit
        },
        keep_last: u64::try_from(config.keep_last).unwrap_or(u64::MAX),
        max_item_chars: u64::try_from(config.max_item_chars).unwrap_or(u64::MAX),
        replies: dropped.replies,
        results: dropped.results,
        dropped: None,
        kept_from: Some(u64::try_from(cut.min(len)).unwrap_or(u64::MAX)),
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
/// (a `prompt_compacted` entry): built with the settings the compaction recorded, and cut
/// where it recorded (an entry written before the cut was recorded: before its last
/// `keep_last` evidence items, as that version cut). With none, the request as
/// [`build_request`] builds it with [`Compaction::WhenOverLimit`]; should that be compacted,
/// the ledger was written before compactions were recorded, and the request is cut as that
/// version cut.
#[must_use]
pub fn rebuild_request(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    compaction: Option<&PromptCompaction>,
) -> ChatRequest {
    let so_far = StepSoFar::default();
    let Some(c) = compaction else {
        let built = build(config, request, &so_far, How::WhenOverLimit);
        if built.compaction.is_none() {
            return built.chat;
        }
        // This version would have recorded the compaction: an earlier one made it.
        let cut = Cut::LastItems;
        return build(
            config,
            request,
            &so_far,
            How::Always {
                cut,
                measured: false,
            },
        )
        .chat;
    };
    let config = PromptConfig {
        keep_last: usize::try_from(c.keep_last).unwrap_or(usize::MAX),
        max_item_chars: usize::try_from(c.max_item_chars).unwrap_or(usize::MAX),
        ..config.clone()
    };
    let cut = c.kept_from.map_or(Cut::LastItems, |at| {
        Cut::At(usize::try_from(at).unwrap_or(usize::MAX))
    });
    build(
        &config,
        request,
        &so_far,
        How::Always {
            cut,
            measured: false,
        },
    )
    .chat
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

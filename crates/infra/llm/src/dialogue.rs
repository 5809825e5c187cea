//! The conversation a step sends, projected from the run's history: the goal, each earlier
//! reply as the assistant turn it was with its calls answered in order, what else happened
//! as user messages appended after it, and the state the run is in. Nothing already sent
//! is ever rewritten (except by compaction), so each request extends the one before.

use std::collections::BTreeMap;
use std::ops::Range;

use rein_run::{
    Evidence, EvidenceKind, ModelCall, ModelReply, NoteSource, PlanRequest, Skill, State, Turn,
};
use serde_json::Value;

use crate::chat::{ChatResponse, FunctionCall, Message};
use crate::config::PromptConfig;
use crate::names::{ControlFunction, function_name};
use crate::render;

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

/// What a call that never got a result (its reply was cut short, rein stopped before it,
/// the process stopped) is answered with, so strict APIs accept the history.
const NOT_COMPLETED: &str = "not completed: rein did not run this call";

/// The reply as the ledger records it and the dialogue shows it again: its text and calls,
/// each argument text over `max_bytes` recorded as `{}` (the correction says why), each
/// function name made one a provider accepts, each id unique within the reply.
pub(crate) fn record(reply: &ChatResponse, max_bytes: usize) -> ModelReply {
    let mut calls: Vec<ModelCall> = Vec::with_capacity(reply.calls.len());
    for (
        i,
        FunctionCall {
            id,
            name,
            arguments,
        },
    ) in reply.calls.iter().enumerate()
    {
        let mut id = safe_name(id, "call");
        if calls.iter().any(|c| c.id == id) {
            id = format!("{id}_{i}");
        }
        calls.push(ModelCall {
            id,
            name: safe_name(name, "unnamed"),
            arguments: if arguments.len() > max_bytes {
                "{}".to_owned()
            } else {
                arguments.clone()
            },
        });
    }
    let mut text = reply.text.clone();
    if text.len() > max_bytes {
        let mut at = max_bytes;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    ModelReply { text, calls }
}

/// `name` within `^[a-zA-Z0-9_-]{1,64}$`: other characters become `_`; empty: `fallback`.
fn safe_name(name: &str, fallback: &str) -> String {
    let safe: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        fallback.to_owned()
    } else {
        safe
    }
}

/// What compacting left out of a request: how many replies and tool results, and the
/// summary notes that stand for them.
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    /// The model's replies left out, each with its results.
    pub(crate) replies: u32,
    /// The tool results left out (those of the replies left out included).
    pub(crate) results: u32,
    /// The summary notes, in order.
    pub(crate) notes: Vec<String>,
}

/// The messages of the request for `request`'s step, with what the step added so far, the
/// skills whose bodies they carry, and what compacting left out.
pub(crate) fn messages<'a>(
    config: &PromptConfig,
    request: &PlanRequest<'a>,
    so_far: &StepSoFar,
    compact: bool,
) -> (Vec<Message>, Vec<&'a Skill>, Dropped) {
    let evidence: Vec<&Evidence> = request.evidence().iter().chain(&so_far.evidence).collect();
    let turns: Vec<&Turn> = request.dialogue().iter().chain(&so_far.turns).collect();
    let skills = skill_entries(request, &evidence, config.max_item_chars);
    let (out, mut pending) = conversation(config, request, compact);
    pending.push(goal(request, &skills));
    let mut b = Builder {
        config,
        evidence: &evidence,
        skills: &skills,
        consumed: vec![false; evidence.len()],
        cut: if compact {
            evidence.len().saturating_sub(config.keep_last)
        } else {
            0
        },
        out,
        pending,
        compacted: BTreeMap::new(),
        replies_compacted: 0,
        dropped: Dropped::default(),
    };
    let (from, last_step) = b.replay(request, &turns, compact);
    b.facts(from..evidence.len());
    if last_step != Some(request.step()) {
        b.say(status(request, request.step(), request.state()));
    }
    b.flush();
    let mut bodies: Vec<(Option<usize>, &'a Skill)> =
        skills.iter().map(|(skill, at)| (*at, *skill)).collect();
    bodies.sort_by_key(|(at, _)| *at);
    (
        b.out,
        bodies.into_iter().map(|(_, s)| s).collect(),
        b.dropped,
    )
}

/// The earlier runs of the conversation the request's run follows up on, oldest first, as
/// the messages they were: each run's goal, its model's turns with every call answered (a
/// call that never got a result answered as not completed, so strict APIs accept the
/// history), what else happened, and how the run ended. Returns the messages and the lines
/// of the user message still open (the last run's outcome), which the goal of the run being
/// planned joins. Compacting, the earlier runs' tool output and replies are summarized.
fn conversation(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    compact: bool,
) -> (Vec<Message>, Vec<String>) {
    let (mut out, mut pending) = (Vec::new(), Vec::new());
    for earlier in request.conversation() {
        let run = &earlier.run;
        let evidence: Vec<&Evidence> = run.evidence().iter().collect();
        let turns: Vec<&Turn> = earlier.dialogue.iter().collect();
        let mut b = Builder {
            config,
            evidence: &evidence,
            skills: &[],
            consumed: vec![false; evidence.len()],
            cut: if compact { evidence.len() } else { 0 },
            out,
            pending,
            compacted: BTreeMap::new(),
            replies_compacted: 0,
            // What an earlier run's compaction leaves out is not this request's to record:
            // a follow-up's prompt is not rebuilt by `rein inspect --prompt` yet.
            dropped: Dropped::default(),
        };
        b.say(format!(
            "Earlier in this conversation (run {}). Goal: {}",
            run.id(),
            run.goal()
        ));
        let (from, _) = b.replay(request, &turns, compact);
        b.facts(from..evidence.len());
        b.say(outcome(run, config.max_item_chars));
        out = b.out;
        pending = b.pending;
    }
    (out, pending)
}

/// How an earlier run of the conversation ended, as the model is told.
fn outcome(run: &rein_run::Run, max: usize) -> String {
    match (run.status(), run.failure()) {
        (rein_run::RunStatus::Completed, _) => {
            let result = run.result().map_or_else(String::new, |r| {
                format!(" Result: {}", render::cut(r.to_string(), max))
            });
            format!(
                "That run completed: {}.{result}",
                run.summary().unwrap_or("no summary")
            )
        }
        (_, Some(failure)) => format!("That run failed: {}", failure.message),
        (status, None) => format!("That run ended {status}."),
    }
}

/// Builds the messages in order.
struct Builder<'r, 'a> {
    config: &'r PromptConfig,
    evidence: &'r [&'r Evidence],
    /// The skills in context, and the evidence after which each entered (`None`: the goal).
    skills: &'r [(&'a Skill, Option<usize>)],
    /// The evidence already shown as the result of a call.
    consumed: Vec<bool>,
    /// Compacting: tool output before this index is summarized.
    cut: usize,
    out: Vec<Message>,
    /// The lines of the next user message.
    pending: Vec<String>,
    /// Tool output compacted since the last line, by tool.
    compacted: BTreeMap<String, u32>,
    replies_compacted: u32,
    /// Everything compacted so far, and the notes said for it.
    dropped: Dropped,
}

impl Builder<'_, '_> {
    /// Each of `turns` as the assistant turn it was, its calls answered in order, after the
    /// facts before it (and the status of each step it opened). Returns the index of the
    /// first evidence item not shown yet and the last step shown.
    fn replay(
        &mut self,
        request: &PlanRequest<'_>,
        turns: &[&Turn],
        compact: bool,
    ) -> (usize, Option<u32>) {
        let len = self.evidence.len();
        let mut from = 0;
        let mut last_step = None;
        for (k, turn) in turns.iter().enumerate() {
            let after = turn.after.clamp(from, len);
            self.facts(from..after);
            from = after;
            let end = turns.get(k + 1).map_or(len, |t| t.after).clamp(after, len);
            if end <= self.cut && compact {
                // The reply and its results go together; what they led to stays a fact
                // (compacted when it is tool output).
                self.replies_compacted += 1;
                self.dropped.replies += 1;
                continue;
            }
            if last_step != Some(turn.step) {
                let status = status(request, turn.step, turn.state);
                self.say(status);
            }
            last_step = Some(turn.step);
            if turn.reply.is_empty() {
                // The API refuses an empty turn; the correction that follows says what
                // happened.
                continue;
            }
            self.flush();
            self.out.push(Message::Assistant {
                text: turn.reply.text.clone(),
                calls: turn
                    .reply
                    .calls
                    .iter()
                    .map(|c| FunctionCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect(),
            });
            self.answer(&turn.reply.calls, after..end);
        }
        (from, last_step)
    }

    /// Adds a line to the next user message, after the note of what was compacted before it.
    fn say(&mut self, line: String) {
        if !self.compacted.is_empty() || self.replies_compacted > 0 {
            let parts: Vec<String> = self
                .compacted
                .iter()
                .map(|(t, n)| format!("{t} ×{n}"))
                .collect();
            let mut note = format!(
                "[compacted] earlier tool results omitted to fit the context: {}",
                if parts.is_empty() {
                    "none".to_owned()
                } else {
                    parts.join(", ")
                }
            );
            if self.replies_compacted > 0 {
                note.push_str(&format!(
                    "; {} of your earlier replies with them",
                    self.replies_compacted
                ));
            }
            self.dropped.notes.push(note.clone());
            self.pending.push(note);
            self.compacted.clear();
            self.replies_compacted = 0;
        }
        self.pending.push(line);
    }

    /// Sends the pending lines as one user message.
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            let text = self.pending.join("\n\n");
            self.pending.clear();
            self.out.push(Message::User { text });
        }
    }

    /// The evidence in `range` not shown as a result, as lines (tool output before the cut
    /// counted instead), each followed by the skill bodies it brought in.
    fn facts(&mut self, range: Range<usize>) {
        for i in range {
            if !self.consumed[i] {
                let kind = &self.evidence[i].kind;
                match kind {
                    EvidenceKind::ToolResult { tool, .. }
                    | EvidenceKind::ToolFailure { tool, .. }
                        if i < self.cut =>
                    {
                        *self.compacted.entry(tool.to_string()).or_default() += 1;
                        self.dropped.results += 1;
                    }
                    _ => {
                        let line = render::fact(kind, self.config.max_item_chars);
                        self.say(line);
                    }
                }
            }
            for (skill, _) in self.skills.iter().filter(|(_, at)| *at == Some(i)) {
                let body = body(skill);
                self.say(body);
            }
        }
    }

    /// Answers each of `calls`, in order, with what it led to among the evidence in
    /// `range`: the next item that is its result (a tool's output or failure, rein's
    /// refusal, a human's answer, a child's outcome); a control function without a refusal
    /// was accepted; anything else never completed.
    fn answer(&mut self, calls: &[ModelCall], range: Range<usize>) {
        let mut at = range.start;
        for call in calls {
            // Notes from outside (steering, the engine) are not results: they stay facts.
            while at < range.end && (self.consumed[at] || aside(&self.evidence[at].kind)) {
                at += 1;
            }
            let item = (at < range.end).then(|| &self.evidence[at].kind);
            let (content, is_error) = match item {
                Some(kind) if answers(&call.name, kind) => {
                    self.consumed[at] = true;
                    at += 1;
                    render::result(kind, self.config.max_item_chars)
                }
                _ if ControlFunction::from_name(&call.name).is_some() => {
                    ("accepted".to_owned(), false)
                }
                _ => (NOT_COMPLETED.to_owned(), true),
            };
            self.out.push(Message::ToolResult {
                call_id: call.id.clone(),
                content,
                is_error,
            });
        }
    }
}

/// Whether `kind` is a note from outside the planner's calls.
fn aside(kind: &EvidenceKind) -> bool {
    matches!(
        kind,
        EvidenceKind::SystemNote {
            source: NoteSource::Steering | NoteSource::Engine,
            ..
        }
    )
}

/// Whether `kind` is what a call of `function` led to.
fn answers(function: &str, kind: &EvidenceKind) -> bool {
    match kind {
        EvidenceKind::SystemNote {
            source: NoteSource::Violation,
            ..
        } => true,
        EvidenceKind::HumanInput { .. } => {
            ControlFunction::from_name(function) == Some(ControlFunction::AskHuman)
        }
        EvidenceKind::Child { .. } => {
            ControlFunction::from_name(function) == Some(ControlFunction::Delegate)
        }
        EvidenceKind::ToolResult { tool, .. } | EvidenceKind::ToolFailure { tool, .. } => {
            function_name(tool) == function
        }
        _ => false,
    }
}

/// The first message: the goal, what delegation allows, the skills the goal triggers.
fn goal(request: &PlanRequest<'_>, skills: &[(&Skill, Option<usize>)]) -> String {
    let mut text = format!("Goal: {}", request.goal());
    if let Some(delegation) = request.delegation() {
        text.push_str(
            "\n\nYou may delegate a sub-task with `delegate`: it starts a child run with its \
             own ledger and a budget carved out of this run's; when it ends, its summary and \
             result (or why it failed) come back to you.",
        );
        if !delegation.planners().is_empty() {
            text.push_str(&format!(
                " Planners a child may use: {} (none named: this run's planner).",
                delegation.planners().join(", ")
            ));
        }
    }
    for (skill, _) in skills.iter().filter(|(_, at)| at.is_none()) {
        text.push_str("\n\n");
        text.push_str(&body(skill));
    }
    text
}

/// Where step `step` stands: the state, what runs there, where it may go.
fn status(request: &PlanRequest<'_>, step: u32, state: State) -> String {
    let tools = request
        .rules()
        .map_or_else(|| request.tools(), |rules| rules.tools(state));
    let tools = if tools.is_empty() {
        "No tools run in this state.".to_owned()
    } else {
        let names: Vec<String> = tools.iter().map(|s| function_name(s.name())).collect();
        format!("Tools that run in this state: {}.", names.join(", "))
    };
    let next: Vec<&str> = next_states(request, state)
        .iter()
        .map(|s| s.as_str())
        .collect();
    format!(
        "Step {step}: the run is in `{state}` ({}). {tools} From here it may move to: {}. \
         Call the functions you need now, several in one reply where you can.",
        state_guidance(state),
        next.join(", ")
    )
}

fn body(skill: &Skill) -> String {
    format!(
        "Skill `{}` (sha256 {}):\n{}",
        skill.name(),
        skill.checksum(),
        skill.body().trim_end()
    )
}

/// The skills whose body is in the context, in the order offered, with where each entered:
/// `None` when the goal triggers it, else the first evidence item that triggers it or a
/// `skill.load` call that loaded it.
fn skill_entries<'a>(
    request: &PlanRequest<'a>,
    evidence: &[&Evidence],
    max: usize,
) -> Vec<(&'a Skill, Option<usize>)> {
    let skills = request.skills();
    if skills.is_empty() {
        return Vec::new();
    }
    let texts: Vec<String> = evidence
        .iter()
        .map(|e| render::fact(&e.kind, max))
        .collect();
    skills
        .iter()
        .filter_map(|skill| {
            if skill.is_triggered_by(request.goal()) {
                return Some((skill, None));
            }
            let loaded = |e: &Evidence| {
                matches!(&e.kind, EvidenceKind::ToolResult { tool, input, .. }
                    if tool.as_str() == SKILL_LOAD
                        && input.get("name").and_then(Value::as_str) == Some(skill.name()))
            };
            (0..evidence.len())
                .find(|i| loaded(evidence[*i]) || skill.is_triggered_by(&texts[*i]))
                .map(|i| (skill, Some(i)))
        })
        .collect()
}

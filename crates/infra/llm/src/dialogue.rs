//! The conversation a step sends, projected from the run's history: the goal, each earlier
//! reply as the assistant turn it was with its calls answered in order, what else happened
//! as user messages appended after it, and the state the run is in. Nothing already sent
//! is ever rewritten (except by compaction), so each request extends the one before.

use std::collections::BTreeMap;
use std::ops::Range;

use rein_run::{Evidence, EvidenceKind, ModelCall, NoteSource, PlanRequest, Skill, Turn};
use serde_json::Value;

use crate::chat::{FunctionCall, Message};
use crate::config::PromptConfig;
use crate::names::{ControlFunction, function_name};
use crate::render::{self, body, goal, status};
use crate::size::json_len;

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

/// What a call that never got a result (its reply was cut short, rein stopped before it,
/// the process stopped) is answered with, so strict APIs accept the history.
const NOT_COMPLETED: &str = "not completed: rein did not run this call";

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

/// How [`messages`] projects the dialogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Everything, verbatim. With `stop_past`, measured as it is made (the bytes each
    /// message adds to the request's JSON) and stopped once past that many bytes: deciding
    /// whether a request is over its limit then costs at most the limit, not the history.
    Full {
        /// The bytes past which measuring stops; `None`: not measured.
        stop_past: Option<usize>,
    },
    /// The model's replies answered wholly before evidence item `cut`, and the tool
    /// results before it, left out for one summary note.
    Compacted {
        /// The index of the first evidence item from which everything stays.
        cut: usize,
    },
}

/// The messages of a step's request, with what went into them.
#[derive(Debug)]
pub(crate) struct Projection<'a> {
    /// The messages; with [`Projection::past`], only those made before measuring stopped.
    pub(crate) messages: Vec<Message>,
    /// The skills whose bodies they carry, in order.
    pub(crate) skills: Vec<&'a Skill>,
    /// What compacting left out of this run's part.
    pub(crate) dropped: Dropped,
    /// Whether compacting left anything out, of this run or of an earlier run of its
    /// conversation: when not, the messages are the full ones.
    pub(crate) left_out: bool,
    /// Measured: the bytes the messages add to the request's JSON (each message's compact
    /// JSON and the commas between them), as far as measured.
    pub(crate) bytes: usize,
    /// Measuring stopped past `stop_past`: the messages are not all there.
    pub(crate) past: bool,
}

/// The messages of the request for `request`'s step, with what the step added so far, the
/// skills whose bodies they carry, and what compacting left out.
pub(crate) fn messages<'a>(
    config: &PromptConfig,
    request: &PlanRequest<'a>,
    so_far: &StepSoFar,
    mode: Mode,
) -> Projection<'a> {
    let evidence: Vec<&Evidence> = request.evidence().iter().chain(&so_far.evidence).collect();
    let turns: Vec<&Turn> = request.dialogue().iter().chain(&so_far.turns).collect();
    let skills = skill_entries(request, &evidence, config.max_item_chars);
    let (cut, stop_past) = match mode {
        Mode::Full { stop_past } => (0, stop_past),
        Mode::Compacted { cut } => (cut.min(evidence.len()), None),
    };
    let compact = matches!(mode, Mode::Compacted { .. });
    let (out, mut pending, earlier_left_out) = conversation(config, request, compact);
    pending.push(goal(request, &skills));
    let mut b = Builder {
        config,
        evidence: &evidence,
        skills: &skills,
        consumed: vec![false; evidence.len()],
        cut,
        out,
        pending,
        compacted: BTreeMap::new(),
        replies_compacted: 0,
        dropped: Dropped::default(),
        measure: Measure {
            stop_past,
            ..Measure::default()
        },
    };
    let (from, last_step) = b.replay(request, &turns, compact);
    if !b.measure.past {
        b.facts(from..evidence.len());
    }
    if !b.measure.past {
        if last_step != Some(request.step()) {
            b.say(status(request, request.step(), request.state()));
        }
        b.flush();
        b.past();
    }
    let mut bodies: Vec<(Option<usize>, &'a Skill)> =
        skills.iter().map(|(skill, at)| (*at, *skill)).collect();
    bodies.sort_by_key(|(at, _)| *at);
    Projection {
        left_out: earlier_left_out || b.dropped.replies > 0 || b.dropped.results > 0,
        messages: b.out,
        skills: bodies.into_iter().map(|(_, s)| s).collect(),
        dropped: b.dropped,
        bytes: b.measure.bytes,
        past: b.measure.past,
    }
}

/// How far the messages made so far were measured.
#[derive(Debug, Default)]
struct Measure {
    /// Stop past this many bytes; `None`: do not measure.
    stop_past: Option<usize>,
    /// The messages measured so far (the first ones).
    counted: usize,
    /// Their bytes in the request's JSON, with the commas between them.
    bytes: usize,
    /// Past `stop_past`.
    past: bool,
}

/// The earlier runs of the conversation the request's run follows up on, oldest first, as
/// the messages they were: each run's goal, its model's turns with every call answered (a
/// call that never got a result answered as not completed, so strict APIs accept the
/// history), what else happened, and how the run ended. Returns the messages and the lines
/// of the user message still open (the last run's outcome), which the goal of the run being
/// planned joins, and whether compacting left anything out. Compacting, the earlier runs'
/// tool output and replies are summarized.
fn conversation(
    config: &PromptConfig,
    request: &PlanRequest<'_>,
    compact: bool,
) -> (Vec<Message>, Vec<String>, bool) {
    let (mut out, mut pending, mut left_out) = (Vec::new(), Vec::new(), false);
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
            measure: Measure::default(),
        };
        b.say(format!(
            "Earlier in this conversation (run {}). Goal: {}",
            run.id(),
            run.goal()
        ));
        let (from, _) = b.replay(request, &turns, compact);
        b.facts(from..evidence.len());
        b.say(outcome(run, config.max_item_chars));
        left_out |= b.dropped.replies > 0 || b.dropped.results > 0;
        out = b.out;
        pending = b.pending;
    }
    (out, pending, left_out)
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
    /// How far the messages were measured.
    measure: Measure,
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
            if self.past() {
                break;
            }
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

    /// Measures the messages made since it last did; whether they are past
    /// [`Measure::stop_past`] (never, unmeasured).
    fn past(&mut self) -> bool {
        let m = &mut self.measure;
        let Some(limit) = m.stop_past else {
            return false;
        };
        for message in &self.out[m.counted..] {
            let comma = usize::from(m.counted > 0);
            m.bytes = m.bytes.saturating_add(json_len(message) + comma);
            m.counted += 1;
        }
        m.past = m.bytes > limit;
        m.past
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
            if self.past() {
                return;
            }
            if !self.consumed[i] {
                let kind = &self.evidence[i].kind;
                match kind {
                    EvidenceKind::ToolResult { tool, .. }
                    | EvidenceKind::ToolFailure { tool, .. }
                        if i < self.cut =>
                    {
                        // Counted without an allocation for each item left out: a long
                        // run leaves out many.
                        match self.compacted.get_mut(tool.as_str()) {
                            Some(n) => *n += 1,
                            None => {
                                self.compacted.insert(tool.to_string(), 1);
                            }
                        }
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

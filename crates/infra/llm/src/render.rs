//! How the dialogue reads: evidence as a fact (a line of a user message) or as the result
//! of the model's call it answers; the goal, where a step stands, a skill's body.

use rein_run::{ChildOutcome, EvidenceKind, NoteSource, Payload, PlanRequest, Skill, Spend, State};

use crate::names::function_name;

/// `kind` as a line of a user message, at most `max` characters.
pub(crate) fn fact(kind: &EvidenceKind, max: usize) -> String {
    let line = match kind {
        EvidenceKind::ToolResult {
            tool,
            input,
            output,
            ..
        } => format!("tool {tool}({input}) returned: {}", output_text(output)),
        EvidenceKind::ToolFailure { tool, input, error } => {
            format!("tool {tool}({input}) failed: {error}")
        }
        EvidenceKind::HumanInput { question, answer } => {
            format!("a human answered {answer:?} to {question:?}")
        }
        EvidenceKind::SystemNote { source, note } => match source {
            NoteSource::Violation => format!("rein refused your last decision: {note}"),
            NoteSource::Steering => format!("a person steering the run says: {note}"),
            NoteSource::Engine => format!("rein notes: {note}"),
        },
        EvidenceKind::Child {
            child,
            outcome,
            spent,
        } => child_line(child, outcome, spent),
        other => format!("{other:?}"),
    };
    cut(line, max)
}

/// `kind` as the result of the call it answers (at most `max` characters), and whether it
/// is an error.
pub(crate) fn result(kind: &EvidenceKind, max: usize) -> (String, bool) {
    let (text, error) = match kind {
        EvidenceKind::ToolResult { output, .. } => (output_text(output), false),
        EvidenceKind::ToolFailure { error, .. } => (format!("failed: {error}"), true),
        EvidenceKind::HumanInput { answer, .. } => (format!("a human answered {answer:?}"), false),
        EvidenceKind::SystemNote {
            source: NoteSource::Violation,
            note,
        } => (format!("rein refused this call: {note}"), true),
        EvidenceKind::Child {
            child,
            outcome,
            spent,
        } => (
            child_line(child, outcome, spent),
            !matches!(outcome, ChildOutcome::Completed { .. }),
        ),
        other => (fact(other, max), false),
    };
    (cut(text, max), error)
}

fn output_text(output: &Payload) -> String {
    match output {
        Payload::Inline(value) => value.to_string(),
        Payload::Artifact(link) => format!(
            "{} bytes of {}, stored as artifact {}",
            link.size, link.content_type, link.id
        ),
    }
}

fn child_line(child: &rein_run::RunId, outcome: &ChildOutcome, spent: &Spend) -> String {
    let spent: Vec<String> = spent.iter().map(|(n, a)| format!("{n} {a}")).collect();
    let spent = if spent.is_empty() {
        "nothing".to_owned()
    } else {
        spent.join(", ")
    };
    match outcome {
        ChildOutcome::Completed { summary, result } => {
            format!("child run {child} completed: {summary:?}, result: {result} (spent {spent})")
        }
        ChildOutcome::Failed { failure } => format!(
            "child run {child} failed ({:?}): {} (spent {spent})",
            failure.kind, failure.message
        ),
        other => format!("child run {child} ended: {other:?} (spent {spent})"),
    }
}

/// `s`, cut after `max` characters with a note of its full size.
pub(crate) fn cut(mut s: String, max: usize) -> String {
    if let Some((at, _)) = s.char_indices().nth(max) {
        let total = s.len();
        s.truncate(at);
        s.push_str(&format!("… (cut, {total} bytes in all)"));
    }
    s
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

/// The first message: the goal, what delegation allows, the skills the goal triggers.
pub(crate) fn goal(request: &PlanRequest<'_>, skills: &[(&Skill, Option<usize>)]) -> String {
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
pub(crate) fn status(request: &PlanRequest<'_>, step: u32, state: State) -> String {
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

/// A skill's body as the dialogue carries it, with its checksum.
pub(crate) fn body(skill: &Skill) -> String {
    format!(
        "Skill `{}` (sha256 {}):\n{}",
        skill.name(),
        skill.checksum(),
        skill.body().trim_end()
    )
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

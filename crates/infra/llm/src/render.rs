//! How evidence reads in the dialogue: as a fact (a line of a user message) or as the
//! result of the model's call it answers.

use rein_run::{ChildOutcome, EvidenceKind, NoteSource, Payload, Spend};

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

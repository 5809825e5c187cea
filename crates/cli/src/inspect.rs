//! Diagrams: the path a run took through the state machine (from its ledger), and a
//! scenario's policy (transition table and eligibility matrix), as Mermaid, DOT or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rein::ledger::{CallOutcome, Entry, EntryKind, RunOutline, RunPath, Stay, ToolUse, Via};
use rein::policy::{Eligibility, Transitions};
use rein::{ApprovalPolicy, State, ToolSpec, Value, json};

use crate::cli::Format;
use crate::render::serde_name;
use crate::text::truncate;

/// A note worth showing beside a stay: a violation, a question, an answer, an attachment,
/// a child's end (the kinds [`RunPath`] keeps as notes).
fn note(kind: &EntryKind) -> Option<String> {
    Some(match kind {
        EntryKind::PolicyViolation {
            violation,
            handed_back,
            ..
        } => format!(
            "⚠ {violation}{}",
            if *handed_back { " (handed back)" } else { "" }
        ),
        EntryKind::HumanInputRequested { question, .. } => {
            format!("asked {}", truncate(question, 40))
        }
        EntryKind::HumanInputReceived { answer, .. } => format!("answer {}", truncate(answer, 40)),
        EntryKind::ToolAttachment { name, link, .. } => format!(
            "attached {} ({} bytes) as artifact {}",
            truncate(name, 40),
            link.size,
            link.id.get(..12).unwrap_or(&link.id)
        ),
        EntryKind::ChildEnded {
            child,
            outcome,
            spent,
            ..
        } => format!(
            // The id's first characters: notes are cut at a few dozen.
            "child {} {} {}",
            child.as_str().chars().take(8).collect::<String>(),
            if outcome.is_completed() { "✓" } else { "✗" },
            crate::tree::spend(spent)
        ),
        _ => return None,
    })
}

/// A tool call as a note line: `name ✓`, `name ✗ timeout ×3`.
fn tool_line(tool: &ToolUse) -> String {
    let mark = if tool.ok() { "✓" } else { "✗" };
    let attempts = if tool.attempts > 1 {
        format!(" ×{}", tool.attempts)
    } else {
        String::new()
    };
    if tool.outcome == CallOutcome::Ok {
        format!("{} {mark}{attempts}", tool.tool)
    } else {
        format!("{} {mark} {}{attempts}", tool.tool, tool.outcome.as_str())
    }
}

/// Why the run came into a stay, as `inspect` says it: the transition's reason, or the
/// failure's kind.
fn via(stay: &Stay<'_>) -> String {
    match stay.via {
        Via::Failure(failure) => serde_name(&failure.kind),
        other => other.text().to_owned(),
    }
}

/// The path of a run in `format`.
pub(crate) fn run_path(entries: &[Entry], format: Format) -> String {
    let visits = RunPath::of(entries).stays;
    let info = RunOutline::of(entries);
    match format {
        Format::Json => {
            let path: Vec<Value> = visits
                .iter()
                .map(|v| {
                    json!({
                        "state": v.state,
                        "via": via(v),
                        "tools": v.tools.iter().map(|t| json!({"tool": t.tool, "attempts": t.attempts, "outcome": t.outcome.as_str()})).collect::<Vec<_>>(),
                        "notes": v.notes.iter().filter_map(|k| note(k)).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let out = json!({
                "run_id": entries.first().map(|e| e.run_id().to_string()),
                "status": info.status,
                "steps": info.decisions,
                "path": path,
            });
            format!(
                "{}\n",
                serde_json::to_string_pretty(&out).unwrap_or_default()
            )
        }
        Format::Mermaid => {
            let mut out = String::from("stateDiagram-v2\n    direction LR\n    [*] --> intake\n");
            for (i, pair) in visits.windows(2).enumerate() {
                let _ = writeln!(
                    out,
                    "    {} --> {}: {}. {}",
                    pair[0].state,
                    pair[1].state,
                    i + 1,
                    mermaid_text(&via(&pair[1]))
                );
            }
            if let Some(last) = visits.last().filter(|v| v.state.is_terminal()) {
                let _ = writeln!(out, "    {} --> [*]", last.state);
            }
            for (state, lines) in per_state(&visits) {
                let _ = writeln!(out, "    note right of {state}");
                for line in lines {
                    let _ = writeln!(out, "        {}", mermaid_text(&line));
                }
                let _ = writeln!(out, "    end note");
            }
            out
        }
        Format::Dot => {
            let mut out = String::from(
                "digraph run {\n    rankdir=LR;\n    node [shape=box, style=rounded, fontname=\"Helvetica\"];\n    edge [fontname=\"Helvetica\", fontsize=10];\n",
            );
            let notes = per_state(&visits);
            let mut seen = Vec::new();
            for visit in &visits {
                if seen.contains(&visit.state) {
                    continue;
                }
                seen.push(visit.state);
                let mut label = visit.state.to_string();
                for line in notes.get(&visit.state).into_iter().flatten() {
                    label.push('\n');
                    label.push_str(line);
                }
                let _ = writeln!(
                    out,
                    "    {} [label=\"{}\"{}];",
                    visit.state,
                    dot_text(&label),
                    terminal_style(visit.state)
                );
            }
            for (i, pair) in visits.windows(2).enumerate() {
                let _ = writeln!(
                    out,
                    "    {} -> {} [label=\"{}. {}\"];",
                    pair[0].state,
                    pair[1].state,
                    i + 1,
                    dot_text(&truncate(&via(&pair[1]), 40))
                );
            }
            out.push_str("}\n");
            out
        }
    }
}

/// Per state, in first-visit order, the lines worth showing: tools and notes of every visit.
fn per_state(visits: &[Stay<'_>]) -> BTreeMap<State, Vec<String>> {
    let mut lines: BTreeMap<State, Vec<String>> = BTreeMap::new();
    for visit in visits {
        let entry = lines.entry(visit.state).or_default();
        entry.extend(visit.tools.iter().map(tool_line));
        entry.extend(visit.notes.iter().filter_map(|k| note(k)));
    }
    lines.retain(|_, l| !l.is_empty());
    lines
}

fn terminal_style(state: State) -> &'static str {
    match state {
        State::Done => ", peripheries=2, color=\"darkgreen\"",
        State::Failed => ", peripheries=2, color=\"firebrick\"",
        _ => "",
    }
}

/// Text safe inside a Mermaid label or note line.
fn mermaid_text(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| match c {
            '\n' | '\r' | '#' | '"' | '{' | '}' | '<' | '>' => ' ',
            ':' | ';' => ',',
            c => c,
        })
        .collect();
    truncate(clean.trim(), 48)
}

/// Text safe inside a DOT double-quoted string.
fn dot_text(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A scenario's policy in `format`: the transition table, and per state the tools allowed
/// (`*` marks tools that need approval).
pub(crate) fn policy(
    transitions: Transitions,
    eligibility: &Eligibility,
    approvals: &ApprovalPolicy,
    tools: &[ToolSpec],
    format: Format,
) -> String {
    let allowed =
        |state: State| -> Vec<&ToolSpec> { eligibility.allowed_in(state, tools).collect() };
    let marked = |spec: &ToolSpec| {
        if approvals.requires(spec).is_some() {
            format!("{} *", spec.name())
        } else {
            spec.name().to_string()
        }
    };
    match format {
        Format::Json => {
            let table: BTreeMap<&str, Vec<&str>> = State::ALL
                .into_iter()
                .map(|s| {
                    (
                        s.as_str(),
                        transitions.targets(s).map(State::as_str).collect(),
                    )
                })
                .collect();
            let matrix: BTreeMap<&str, Vec<String>> = State::ALL
                .into_iter()
                .filter(|s| !s.is_terminal())
                .map(|s| {
                    (
                        s.as_str(),
                        allowed(s).iter().map(|t| t.name().to_string()).collect(),
                    )
                })
                .collect();
            let tools: BTreeMap<String, Value> = tools
                .iter()
                .map(|spec| {
                    let a = spec.annotations();
                    (
                        spec.name().to_string(),
                        json!({
                            "eligible_in": State::ALL.into_iter().filter(|&s| eligibility.allows(s, spec)).collect::<Vec<_>>(),
                            "read_only": a.is_read_only(),
                            "destructive": a.is_destructive(),
                            "idempotent": a.is_idempotent(),
                            "risk_level": a.risk_level(),
                            "approval": approvals.requires(spec).map(|r| r.to_string()),
                        }),
                    )
                })
                .collect();
            let out = json!({"transitions": table, "eligibility": matrix, "tools": tools});
            format!(
                "{}\n",
                serde_json::to_string_pretty(&out).unwrap_or_default()
            )
        }
        Format::Mermaid => {
            let mut out = String::from("stateDiagram-v2\n    direction LR\n    [*] --> intake\n");
            for (from, to) in transitions.edges() {
                let _ = writeln!(out, "    {from} --> {to}");
            }
            out.push_str("    done --> [*]\n    failed --> [*]\n");
            for state in State::ALL.into_iter().filter(|s| !s.is_terminal()) {
                let tools = allowed(state);
                if tools.is_empty() {
                    continue;
                }
                let _ = writeln!(out, "    note right of {state}");
                for spec in tools {
                    let _ = writeln!(out, "        {}", marked(spec));
                }
                let _ = writeln!(out, "    end note");
            }
            if tools.iter().any(|t| approvals.requires(t).is_some()) {
                out.push_str("    %% * the tool needs approval\n");
            }
            out
        }
        Format::Dot => {
            let mut out = String::from(
                "digraph policy {\n    rankdir=LR;\n    node [shape=box, style=rounded, fontname=\"Helvetica\"];\n",
            );
            for state in State::ALL {
                let mut label = state.to_string();
                for spec in allowed(state) {
                    label.push('\n');
                    label.push_str(&marked(spec));
                }
                let _ = writeln!(
                    out,
                    "    {state} [label=\"{}\"{}];",
                    dot_text(&label),
                    terminal_style(state)
                );
            }
            for (from, to) in transitions.edges() {
                let _ = writeln!(out, "    {from} -> {to};");
            }
            // The eligibility matrix: tools × states.
            let states: Vec<State> = State::ALL
                .into_iter()
                .filter(|s| !s.is_terminal())
                .collect();
            let mut table = String::from(
                "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\"><tr><td><b>tool</b></td>",
            );
            for s in &states {
                let _ = write!(table, "<td><b>{s}</b></td>");
            }
            table.push_str("</tr>");
            for spec in tools {
                let _ = write!(table, "<tr><td>{}</td>", html(&marked(spec)));
                for &s in &states {
                    let cell = if eligibility.allows(s, spec) {
                        "✓"
                    } else {
                        ""
                    };
                    let _ = write!(table, "<td>{cell}</td>");
                }
                table.push_str("</tr>");
            }
            table.push_str("</table>");
            let _ = writeln!(out, "    eligibility [shape=plaintext, label=<{table}>];");
            out.push_str("}\n");
            out
        }
    }
}

fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

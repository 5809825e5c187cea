//! The tree of runs a ledger heads: each child's ledger read from the data directory,
//! verified, and checked against its parent — its `child_of` names the parent's
//! `child_started` entry, and a settled child's ledger ends exactly at the head the parent
//! recorded (`rein ledger verify --tree`, the run tree of `rein inspect`).

use std::fmt::Write as _;

use rein::{Entry, EntryKind, LedgerHead, RunId, RunStatus, Spend};

use crate::cli::Format;
use crate::datadir::DataDir;
use crate::exit::{CliError, Exit};
use crate::ledger_file::LedgerFile;

/// One run of a tree, as its verified ledger tells it.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) id: RunId,
    pub(crate) goal: String,
    pub(crate) status: RunStatus,
    pub(crate) entries: usize,
    /// What the parent charged for it when it ended (none for the root, or a child open).
    pub(crate) spent: Option<Spend>,
    pub(crate) children: Vec<Node>,
}

impl Node {
    /// How many runs the tree holds.
    pub(crate) fn size(&self) -> usize {
        1 + self.children.iter().map(Self::size).sum::<usize>()
    }
}

/// Reads the tree below the run whose verified ledger is `entries`.
///
/// # Errors
/// Exit 4 naming the parent, the child and the broken link, or a child ledger that fails
/// verification; exit 2 when a child's ledger cannot be read at all.
pub(crate) fn read(id: &RunId, entries: &[Entry], data: &DataDir) -> Result<Node, CliError> {
    node(id, entries, None, data)
}

fn node(
    id: &RunId,
    entries: &[Entry],
    spent: Option<Spend>,
    data: &DataDir,
) -> Result<Node, CliError> {
    let info = rein::RunOutline::of(entries);
    let mut children = Vec::new();
    for entry in entries {
        let EntryKind::ChildStarted { child, .. } = entry.event() else {
            continue;
        };
        let started = entry.head();
        let ended = entries.iter().find_map(|e| match e.event() {
            EntryKind::ChildEnded {
                child: c,
                head,
                spent,
                ..
            } if c == child => Some((*head, spent.clone())),
            _ => None,
        });
        let broken = |why: String| {
            CliError::new(
                Exit::LedgerBroken,
                format!(
                    "the tree of runs is broken between parent {id} and child {child}: {why} ✗"
                ),
            )
        };
        let path = data.ledger(child);
        if !path.is_file() {
            if ended.is_none() {
                // Started on record, never created: resuming the parent starts it.
                continue;
            }
            return Err(broken(format!(
                "the parent recorded the child's end, but {} does not exist",
                path.display()
            )));
        }
        let file = LedgerFile::read_verified(&path, Some(child), data)?;
        let linked = file.entries.iter().any(|e| {
            matches!(e.event(), EntryKind::ChildOf { parent, parent_head, .. }
                if parent == id && *parent_head == started)
        });
        if !linked {
            return Err(broken(format!(
                "the child's ledger does not name the parent's child_started entry {started}"
            )));
        }
        let last = file.entries.last().map(Entry::head);
        let spent = match ended {
            Some((head, spent)) if last == Some(head) => Some(spent),
            Some((head, _)) => {
                return Err(broken(format!(
                    "the parent recorded the child's ledger ending at {head}, but it ends at {}",
                    last.map_or_else(|| "no entry".to_owned(), |h: LedgerHead| h.to_string())
                )));
            }
            None => None,
        };
        children.push(node(child, &file.entries, spent, data)?);
    }
    Ok(Node {
        id: id.clone(),
        goal: info.goal,
        status: info.status,
        entries: entries.len(),
        spent,
        children,
    })
}

/// What a child spent, as `tool_calls 2, steps 5`.
pub(crate) fn spend(spent: &Spend) -> String {
    if spent.is_empty() {
        return "nothing".to_owned();
    }
    spent
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per child the run delegated to: its id, how it ended (or that it is open) and
/// what it spent, for the run summary.
pub(crate) fn child_lines(entries: &[Entry]) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in entries {
        let EntryKind::ChildStarted { child, goal, .. } = entry.event() else {
            continue;
        };
        let ended = entries.iter().find_map(|e| match e.event() {
            EntryKind::ChildEnded {
                child: c,
                outcome,
                spent,
                ..
            } if c == child => Some((outcome, spent)),
            _ => None,
        });
        let goal = crate::render::truncate(goal, 40);
        lines.push(match ended {
            Some((outcome, spent)) => {
                let status = if outcome.is_completed() {
                    "completed"
                } else {
                    "failed"
                };
                format!("{child} {status} — {goal} — spent {}", spend(spent))
            }
            None => format!("{child} open — {goal}"),
        });
    }
    lines
}

/// The tree as indented lines, for `rein ledger verify --tree`.
pub(crate) fn lines(root: &Node) -> String {
    let mut out = String::new();
    fn walk(node: &Node, depth: usize, out: &mut String) {
        let spent = node
            .spent
            .as_ref()
            .map_or_else(String::new, |s| format!(", spent {}", spend(s)));
        let _ = writeln!(
            out,
            "{}{} {} ({} entries{spent}) ✓",
            "  ".repeat(depth + 1),
            node.id,
            node.status,
            node.entries
        );
        for child in &node.children {
            walk(child, depth + 1, out);
        }
    }
    walk(root, 0, &mut out);
    out
}

/// The tree as a diagram: Mermaid, DOT or JSON.
pub(crate) fn diagram(root: &Node, format: Format) -> String {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    fn walk<'a>(
        node: &'a Node,
        nodes: &mut Vec<&'a Node>,
        edges: &mut Vec<(usize, usize, &'a Node)>,
    ) {
        let me = nodes.len();
        nodes.push(node);
        for child in &node.children {
            edges.push((me, nodes.len(), child));
            walk(child, nodes, edges);
        }
    }
    walk(root, &mut nodes, &mut edges);
    let label = |n: &Node| {
        format!(
            "{}\n{} · {}",
            n.id,
            n.status,
            crate::render::truncate(&n.goal, 40)
        )
    };
    match format {
        Format::Mermaid => {
            let mut out = String::from("flowchart TD\n");
            for (i, n) in nodes.iter().enumerate() {
                let text = label(n).replace('"', "'").replace('\n', "<br/>");
                let _ = writeln!(out, "    run{i}[\"{text}\"]");
            }
            for (from, to, child) in &edges {
                let spent = child
                    .spent
                    .as_ref()
                    .map_or_else(|| "open".to_owned(), spend);
                let _ = writeln!(
                    out,
                    "    run{from} -->|{}| run{to}",
                    spent.replace('|', "/")
                );
            }
            out
        }
        Format::Dot => {
            let mut out = String::from(
                "digraph runs {\n    node [shape=box, style=rounded, fontname=\"Helvetica\"];\n",
            );
            for (i, n) in nodes.iter().enumerate() {
                let text = label(n)
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = writeln!(out, "    run{i} [label=\"{text}\"];");
            }
            for (from, to, child) in &edges {
                let spent = child
                    .spent
                    .as_ref()
                    .map_or_else(|| "open".to_owned(), spend);
                let _ = writeln!(
                    out,
                    "    run{from} -> run{to} [label=\"{}\"];",
                    spent.replace('"', "'")
                );
            }
            out.push_str("}\n");
            out
        }
        Format::Json => {
            fn json(node: &Node) -> serde_json::Value {
                serde_json::json!({
                    "run_id": node.id.to_string(),
                    "goal": node.goal,
                    "status": node.status,
                    "entries": node.entries,
                    "spent": node.spent,
                    "children": node.children.iter().map(json).collect::<Vec<_>>(),
                })
            }
            format!(
                "{}\n",
                serde_json::to_string_pretty(&json(root)).unwrap_or_default()
            )
        }
    }
}

//! The tree of runs a ledger heads: each parent's entries about its children kept to the
//! rules of a tree (`ChildLink::of`: started once, ended once after starting, nothing after
//! the parent ended), each child's ledger read from the data directory, verified, and
//! checked against its parent — its `child_of` names the parent's `child_started` entry,
//! and a settled child's ledger ends exactly at the head the parent recorded (`rein ledger
//! verify --tree`, the run tree of `rein inspect`); and the runs below a run that wait for
//! an approval.

use std::fmt::Write as _;

use rein::ledger::{ChildLink, Entry, EntryKind};
use rein::run::{LedgerHead, PendingApproval};
use rein::subrun::Spend;
use rein::{RunId, RunStatus};

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
    node(id, entries, None, data, 0)
}

/// The run `id` at `depth` below the run read, and its children. No tree rein grows is
/// deeper than [`rein::subrun::MAX_DEPTH_CEILING`]: ledgers that would be (a loop of runs naming
/// each other as children) are refused there, before the recursion could exhaust the stack.
fn node(
    id: &RunId,
    entries: &[Entry],
    spent: Option<Spend>,
    data: &DataDir,
    depth: u32,
) -> Result<Node, CliError> {
    let info = rein::ledger::RunOutline::of(entries);
    let broken = |child: &RunId, why: String| {
        CliError::new(
            Exit::LedgerBroken,
            format!("the tree of runs is broken between parent {id} and child {child}: {why} ✗"),
        )
    };
    let links = ChildLink::of(entries).map_err(|e| broken(e.child(), e.to_string()))?;
    let mut children = Vec::new();
    for link in links {
        let child = &link.child;
        let path = data.ledger(child);
        if !path.is_file() {
            if link.ended.is_none() {
                // Started on record, never created: resuming the parent starts it.
                continue;
            }
            return Err(broken(
                child,
                format!(
                    "the parent recorded the child's end, but {} does not exist",
                    path.display()
                ),
            ));
        }
        if depth >= rein::subrun::MAX_DEPTH_CEILING {
            return Err(broken(
                child,
                format!(
                    "the child would be more than {} levels below the run verified, deeper \
                     than any tree rein grows; its ledgers were assembled or edited by hand (a \
                     loop of runs naming each other as children included)",
                    rein::subrun::MAX_DEPTH_CEILING
                ),
            ));
        }
        let file = LedgerFile::read_verified(&path, Some(child), data)?;
        let linked = file.entries.iter().any(|e| {
            matches!(e.event(), EntryKind::ChildOf { parent, parent_head, .. }
                if parent == id && *parent_head == link.started)
        });
        if !linked {
            return Err(broken(
                child,
                format!(
                    "the child's ledger does not name the parent's child_started entry {}",
                    link.started
                ),
            ));
        }
        let last = file.entries.last().map(Entry::head);
        let spent = match link.ended {
            Some(end) if last == Some(end.head) => Some(end.spent),
            Some(end) => {
                return Err(broken(
                    child,
                    format!(
                        "the parent recorded the child's ledger ending at {}, but it ends at {}",
                        end.head,
                        last.map_or_else(|| "no entry".to_owned(), |h: LedgerHead| h.to_string())
                    ),
                ));
            }
            None => None,
        };
        children.push(node(child, &file.entries, spent, data, depth + 1)?);
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

/// A run below another that waits for a verdict on one of its calls.
#[derive(Debug, Clone)]
pub(crate) struct Waiting {
    pub(crate) run: RunId,
    pub(crate) pending: PendingApproval,
}

/// The call a run waits for under a durable approval, as its ledger ends: its last entry
/// is an `approval_pending` (a verdict, a failure or a resume would follow it).
pub(crate) fn pending_approval(entries: &[Entry]) -> Option<&PendingApproval> {
    match entries.last()?.event() {
        EntryKind::ApprovalPending { pending } => Some(pending),
        _ => None,
    }
}

/// The children a run started and has not seen end, in the order they started.
fn open_children(entries: &[Entry]) -> Vec<&RunId> {
    let mut open = Vec::new();
    for entry in entries {
        match entry.event() {
            EntryKind::ChildStarted { child, .. } => open.push(child),
            EntryKind::ChildEnded { child, .. } => open.retain(|c| *c != child),
            _ => {}
        }
    }
    open
}

/// The runs below the run whose ledger is `entries` that wait for an approval: its open
/// children, read from the data directory, and theirs, depth first. A child whose ledger
/// cannot be read is passed over (`rein ledger verify --tree` says why).
pub(crate) fn waiting_below(entries: &[Entry], data: &DataDir) -> Vec<Waiting> {
    let mut waiting = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<RunId> = open_children(entries).into_iter().rev().cloned().collect();
    // A forged tree may name its runs in a circle: each run is read once.
    while let Some(id) = stack.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Ok(file) = LedgerFile::read(&data.ledger(&id), Some(&id), data) else {
            continue;
        };
        if let Some(pending) = pending_approval(&file.entries) {
            waiting.push(Waiting {
                run: id.clone(),
                pending: pending.clone(),
            });
        }
        stack.extend(open_children(&file.entries).into_iter().rev().cloned());
    }
    waiting
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
        let goal = crate::text::truncate(goal, 40);
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
            crate::text::truncate(&n.goal, 40)
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

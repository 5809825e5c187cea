//! `rein runs list`: the runs in a data directory, from their ledgers through the run
//! index; a child run is listed under the run that delegated to it, indented, and a
//! conversation as one thread: its follow-ups under the run that started it, in order.

use std::collections::{HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use rein::RunId;

use crate::cli::{ListedStatus, RunsListArgs};
use crate::datadir::DataDir;
use crate::exit::{CliResult, Exit};
use crate::render::age;
use crate::run_index::{BROKEN, RunSummary, UNREADABLE, WAITING_APPROVAL};

/// The width of the run id column: a UUID's.
const ID_WIDTH: usize = 36;

/// The width of the status column: its longest value's, `WAITING-APPROVAL`.
const STATUS_WIDTH: usize = WAITING_APPROVAL.len();

/// One run's row: its parent (from its `child_of` entry), the children it started (from
/// its `child_started` entries), the run it follows up on (its `follow_up_of` entry) and
/// the columns after its id.
struct Row {
    id: RunId,
    parent: Option<RunId>,
    children: Vec<RunId>,
    follows: Option<RunId>,
    columns: String,
}

/// `rein runs list`.
pub(crate) fn list(args: &RunsListArgs) -> CliResult {
    let data = DataDir::new(&args.data.data_dir)?;
    data.require()?;
    let runs = crate::run_index::runs(&data)?;
    if runs.is_empty() {
        outln!("no runs in {}", data.shown());
        return Ok(Exit::Ok);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let total = runs.len();
    let mut notes = Vec::new();
    let rows: Vec<Row> = runs
        .into_iter()
        .filter(|run| args.status.is_none_or(|s| selects(s, &run.summary)))
        .map(|run| {
            if let Some(why) = &run.summary.snapshot {
                notes.push(format!(
                    "note: run {}: {why}; it is listed from its ledger, the source of truth (resuming it rebuilds the snapshot)",
                    run.id
                ));
            }
            row(run.id, &run.summary, now)
        })
        .collect();
    if rows.is_empty() {
        outln!(
            "no {} runs in {} ({total} runs in all)",
            args.status.map_or("", status_name),
            data.shown()
        );
        return Ok(Exit::Ok);
    }
    let ordered = tree_order(&rows);
    let shown: Vec<(usize, usize)> = ordered
        .iter()
        .copied()
        .skip(args.offset)
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
    let labels: Vec<String> = shown
        .iter()
        .map(|&(i, depth)| id_label(&rows[i], depth))
        .collect();
    let width = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(ID_WIDTH);
    outln!(
        "{:<width$}  {:<STATUS_WIDTH$}  {:<8}  {:>5}  {:>5}  GOAL",
        "RUN ID",
        "STATUS",
        "STATE",
        "STEPS",
        "AGE"
    );
    for (&(i, _), label) in shown.iter().zip(&labels) {
        outln!("{label:<width$}  {}", rows[i].columns);
    }
    if shown.len() < ordered.len() {
        let next = args.offset + shown.len();
        outln!(
            "rows {}–{} of {}{}",
            (args.offset + 1).min(ordered.len()),
            next,
            ordered.len(),
            if next < ordered.len() {
                format!("; the next page: --offset {next}")
            } else {
                String::new()
            }
        );
    }
    for note in notes {
        outln!("{note}");
    }
    Ok(Exit::Ok)
}

/// Whether `status` selects the run summarized as `summary`.
fn selects(status: ListedStatus, summary: &RunSummary) -> bool {
    summary.shown.eq_ignore_ascii_case(status_name(status))
}

/// How `status` is shown in the listing.
const fn status_name(status: ListedStatus) -> &'static str {
    match status {
        ListedStatus::Running => "running",
        ListedStatus::Paused => "paused",
        ListedStatus::WaitingApproval => WAITING_APPROVAL,
        ListedStatus::Interrupted => "interrupted",
        ListedStatus::Completed => "completed",
        ListedStatus::Failed => "failed",
        ListedStatus::Broken => BROKEN,
        ListedStatus::Unreadable => UNREADABLE,
    }
}

/// Run `id`'s row.
fn row(id: RunId, summary: &RunSummary, now: u64) -> Row {
    let columns = if summary.shown == UNREADABLE {
        format!("{:<STATUS_WIDTH$}  {}", summary.shown, summary.detail)
    } else {
        let age = summary
            .started
            .map_or_else(|| "?".to_owned(), |t| age(now.saturating_sub(t)));
        format!(
            "{:<STATUS_WIDTH$}  {:<8}  {:>5}  {:>5}  {}",
            summary.shown, summary.state, summary.decisions, age, summary.detail
        )
    };
    Row {
        id,
        parent: summary.parent.clone(),
        children: summary.children.clone(),
        follows: summary.follows.clone(),
        columns,
    }
}

/// The rows in the order to list them, each with its depth: every run whose parent is not
/// listed (a root) in the listing's order, each followed by its children, depth first, in
/// the order they started. A run's parent is the one its `child_of` entry names, or else
/// the run whose `child_started` entry names it (a child whose own ledger is missing or
/// unreadable still belongs under its parent); a follow-up's is the first listed run of
/// its conversation, so a conversation is one thread, one level deep, in the listing's
/// order.
fn tree_order(rows: &[Row]) -> Vec<(usize, usize)> {
    let index: HashMap<&RunId, usize> = rows.iter().enumerate().map(|(i, r)| (&r.id, i)).collect();
    let mut started_by: HashMap<&RunId, &RunId> = HashMap::new();
    for row in rows {
        for child in &row.children {
            started_by.entry(child).or_insert(&row.id);
        }
    }
    // The first listed run of a follow-up's conversation: its `follows` links walked back
    // while they name listed runs (each once: forged links may name each other in a circle).
    let thread_of = |row: &Row| -> Option<&RunId> {
        let mut at = index.get(row.follows.as_ref()?).copied()?;
        let mut seen = HashSet::from([at]);
        while let Some(&before) = rows[at].follows.as_ref().and_then(|f| index.get(f)) {
            if !seen.insert(before) {
                break;
            }
            at = before;
        }
        Some(&rows[at].id)
    };
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let parent = row
            .parent
            .as_ref()
            .or_else(|| started_by.get(&row.id).copied())
            .or_else(|| thread_of(row));
        match parent.and_then(|p| index.get(p)) {
            Some(&parent) if parent != i => children.entry(parent).or_default().push(i),
            _ => roots.push(i),
        }
    }
    let mut ordered = Vec::with_capacity(rows.len());
    let mut seen = HashSet::new();
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&i| (i, 0)).collect();
    loop {
        while let Some((i, depth)) = stack.pop() {
            if !seen.insert(i) {
                continue;
            }
            ordered.push((i, depth));
            if let Some(kids) = children.get(&i) {
                stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
            }
        }
        // Runs whose parents name each other in a circle (a forged ledger) reach no root:
        // listed all the same, at the top.
        match (0..rows.len()).find(|i| !seen.contains(i)) {
            Some(i) => stack.push((i, 0)),
            None => break,
        }
    }
    ordered
}

/// The run id column of a run at `depth` in its tree: a child is indented under its
/// parent, with a corner; a follow-up under the run that started its conversation, with an
/// arrow.
fn id_label(row: &Row, depth: usize) -> String {
    let mark = if row.follows.is_some() && row.parent.is_none() {
        "↪"
    } else {
        "└"
    };
    match depth {
        0 => row.id.as_str().to_owned(),
        _ => format!("{}{mark} {}", "  ".repeat(depth - 1), row.id.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, parent: Option<&str>) -> Row {
        Row {
            id: RunId::new(id).unwrap(),
            parent: parent.map(|p| RunId::new(p).unwrap()),
            children: Vec::new(),
            follows: None,
            columns: String::new(),
        }
    }

    fn follow_up(id: &str, follows: &str) -> Row {
        Row {
            follows: Some(RunId::new(follows).unwrap()),
            ..row(id, None)
        }
    }

    #[test]
    fn a_conversation_is_one_thread_under_its_first_run_in_order() {
        let rows = [
            row("a", None),
            row("x", None),
            follow_up("b", "a"),
            row("child", Some("b")),
            follow_up("c", "b"),
            follow_up("d", "gone"),
        ];
        let order: Vec<(&str, usize)> = tree_order(&rows)
            .into_iter()
            .map(|(i, d)| (rows[i].id.as_str(), d))
            .collect();
        assert_eq!(
            order,
            [
                ("a", 0),
                ("b", 1),
                ("child", 2),
                ("c", 1),
                ("x", 0),
                ("d", 0)
            ]
        );
        assert_eq!(id_label(&rows[2], 1), "↪ b");
        assert_eq!(id_label(&rows[3], 2), "  └ child");
    }

    #[test]
    fn children_come_under_their_parents_depth_first() {
        let rows = [
            row("a", None),
            row("b", Some("a")),
            row("c", None),
            row("d", Some("b")),
            row("e", Some("a")),
            row("f", Some("gone")),
        ];
        let order: Vec<(&str, usize)> = tree_order(&rows)
            .into_iter()
            .map(|(i, d)| (rows[i].id.as_str(), d))
            .collect();
        assert_eq!(
            order,
            [("a", 0), ("b", 1), ("d", 2), ("e", 1), ("c", 0), ("f", 0)]
        );
    }

    #[test]
    fn a_child_without_its_own_ledger_comes_under_the_run_that_started_it() {
        let mut parent = row("a", None);
        parent.children = vec![RunId::new("c").unwrap()];
        let rows = [parent, row("b", None), row("c", None)];
        let order: Vec<(&str, usize)> = tree_order(&rows)
            .into_iter()
            .map(|(i, d)| (rows[i].id.as_str(), d))
            .collect();
        assert_eq!(order, [("a", 0), ("c", 1), ("b", 0)]);
    }

    #[test]
    fn runs_naming_each_other_as_parents_are_listed_once() {
        let rows = [row("a", Some("b")), row("b", Some("a")), row("c", None)];
        let mut order: Vec<usize> = tree_order(&rows).into_iter().map(|(i, _)| i).collect();
        order.sort_unstable();
        assert_eq!(order, [0, 1, 2]);
    }

    #[test]
    fn a_child_is_indented_with_a_corner() {
        let child = row("run-2", Some("run-1"));
        assert_eq!(id_label(&child, 0), "run-2");
        assert_eq!(id_label(&child, 1), "└ run-2");
        assert_eq!(id_label(&child, 2), "  └ run-2");
    }
}

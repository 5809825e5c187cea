//! `GET /`: the runs, paged on the server, those waiting for a person first, filtered by
//! status and text. The list reads run snapshots (the store's cheap cache); only the runs on
//! the page shown have their ledgers read, to mark a damaged one and to put children under
//! their parent.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::Html;
use rein::ledger::EntryKind;
use rein::policy::PolicySnapshot;
use rein::{Run, RunId, RunStatus};
use serde::Deserialize;

use crate::error::HttpError;
use crate::html::{esc, one_line, page};

/// Runs on one page.
pub(crate) const PAGE_SIZE: usize = 50;

/// The longest text filter accepted.
const MAX_QUERY: usize = 200;

/// The list's query: `?status=paused&q=deploy&page=2`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    page: Option<usize>,
}

/// A status filter: a run status, or `waiting` (for a person).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StatusFilter {
    Waiting,
    Status(RunStatus),
}

const STATUSES: [&str; 6] = [
    "waiting",
    "running",
    "paused",
    "interrupted",
    "completed",
    "failed",
];

fn status_filter(text: &str) -> Result<StatusFilter, HttpError> {
    let status = match text {
        "waiting" => return Ok(StatusFilter::Waiting),
        "running" => RunStatus::Running,
        "paused" => RunStatus::Paused,
        "interrupted" => RunStatus::Interrupted,
        "completed" => RunStatus::Completed,
        "failed" => RunStatus::Failed,
        other => {
            return Err(HttpError::bad_request(format!(
                "status `{}` is not one of {}",
                one_line(other, 40),
                STATUSES.join(", ")
            )));
        }
    };
    Ok(StatusFilter::Status(status))
}

/// What a run waits for from a person, if anything: for the list's first rows and labels.
pub(crate) fn waiting(run: &Run) -> Option<&'static str> {
    if run.status() != RunStatus::Paused {
        return None;
    }
    if run.pending_approval().is_some() {
        Some("waiting for approval")
    } else if run.pending_question().is_some() {
        Some("waiting for an answer")
    } else {
        None
    }
}

/// `used/limit` of every limited budget of `run` (and `used` of the others it spent).
pub(crate) fn budgets(run: &Run) -> Vec<(String, u64, Option<u64>)> {
    let policy = serde_json::from_value::<PolicySnapshot>(run.policy().clone()).ok();
    let mut out: Vec<(String, u64, Option<u64>)> = Vec::new();
    if let Some(policy) = &policy {
        for (name, limit, counter) in policy.budget.snapshot(run.usage()).iter() {
            out.push((name.as_str().to_owned(), counter.used, Some(limit)));
        }
    }
    for (name, counter) in run.usage().iter() {
        if !out.iter().any(|(n, _, _)| n == name.as_str()) {
            out.push((name.as_str().to_owned(), counter.used, None));
        }
    }
    out
}

/// The budgets as one cell: `tool_calls 2/5, steps 7`.
pub(crate) fn budget_cell(run: &Run) -> String {
    budgets(run)
        .iter()
        .map(|(name, used, limit)| match limit {
            Some(limit) => format!("{name} {used}/{limit}"),
            None => format!("{name} {used}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A snapshot, or why there is none to show.
type Loaded = (RunId, Result<Run, String>);

/// `GET /`.
pub(crate) async fn runs(
    State(state): State<Arc<crate::State>>,
    Query(query): Query<ListQuery>,
) -> Result<Html<String>, HttpError> {
    let filter = match query.status.as_deref().filter(|s| !s.is_empty()) {
        Some(text) => Some(status_filter(text)?),
        None => None,
    };
    let text = query.q.unwrap_or_default();
    if text.chars().count() > MAX_QUERY {
        return Err(HttpError::bad_request(format!(
            "the text filter is longer than {MAX_QUERY} characters"
        )));
    }
    let needle = text.to_lowercase();
    let page_no = query.page.unwrap_or(1).max(1);
    let ids = state.stores.ids().await.map_err(HttpError::store)?;
    let mut loaded: Vec<Loaded> = Vec::with_capacity(ids.len());
    for id in ids {
        let run = state.stores.snapshot(&id).await.map_err(|e| e.to_string());
        loaded.push((id, run));
    }
    let mut rows: Vec<Loaded> = loaded
        .into_iter()
        .filter(|(id, run)| {
            let status_ok = match (filter, run) {
                (None, _) => true,
                (Some(StatusFilter::Waiting), Ok(run)) => waiting(run).is_some(),
                (Some(StatusFilter::Status(s)), Ok(run)) => run.status() == s,
                (Some(_), Err(_)) => false,
            };
            let text_ok = needle.is_empty()
                || id.as_str().contains(&needle)
                || run
                    .as_ref()
                    .is_ok_and(|r| r.goal().to_lowercase().contains(&needle));
            status_ok && text_ok
        })
        .collect();
    // Waiting for a person first, then the newest.
    rows.sort_by(|(a_id, a), (b_id, b)| {
        let a_waits = a.as_ref().is_ok_and(|r| waiting(r).is_some());
        let b_waits = b.as_ref().is_ok_and(|r| waiting(r).is_some());
        b_waits.cmp(&a_waits).then_with(|| b_id.cmp(a_id))
    });
    let total = rows.len();
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let shown: Vec<Loaded> = rows
        .into_iter()
        .skip((page_no - 1).saturating_mul(PAGE_SIZE))
        .take(PAGE_SIZE)
        .collect();
    let on_page: Vec<RunId> = shown.iter().map(|(id, _)| id.clone()).collect();

    let mut body = String::from("<h1>Runs</h1>");
    let _ = write!(
        body,
        "<form method=\"get\" action=\"/\"><label>status <select name=\"status\"><option value=\"\">any</option>{}</select></label> \
<label>text <input type=\"text\" name=\"q\" value=\"{}\"></label> <button>filter</button></form>",
        STATUSES
            .iter()
            .map(|s| {
                let chosen = query.status.as_deref() == Some(*s);
                format!(
                    "<option{}>{s}</option>",
                    if chosen { " selected" } else { "" }
                )
            })
            .collect::<String>(),
        esc(&text)
    );
    let _ = write!(
        body,
        "<p>{total} run{} · page {page_no} of {pages}</p>",
        if total == 1 { "" } else { "s" }
    );
    body.push_str("<table><thead><tr><th>run</th><th>status</th><th>goal</th><th>state</th><th>steps</th><th class=\"wide\">budgets</th><th class=\"wide\">started</th><th class=\"wide\">ended</th></tr></thead><tbody>");
    for (id, run) in &shown {
        let ledger = ledger_facts(&state, id).await;
        if let Some(parent) = &ledger.parent
            && on_page.contains(parent)
        {
            // Listed under its parent instead.
            continue;
        }
        row(&mut body, id, run, &ledger, false);
        for child in &ledger.children {
            let child_run = state
                .stores
                .snapshot(child)
                .await
                .map_err(|e| e.to_string());
            let facts = ledger_facts(&state, child).await;
            row(&mut body, child, &child_run, &facts, true);
        }
    }
    body.push_str("</tbody></table>");
    let link = |p: usize| {
        format!(
            "/?status={}&q={}&page={p}",
            esc(&query_word(query.status.as_deref().unwrap_or(""))),
            esc(&query_word(&text))
        )
    };
    if page_no > 1 {
        let _ = write!(body, "<a href=\"{}\">← newer</a> ", link(page_no - 1));
    }
    if page_no < pages {
        let _ = write!(body, "<a href=\"{}\">older →</a>", link(page_no + 1));
    }
    Ok(page("runs", &body))
}

/// What the ledger of a listed run adds: whether it verifies, its parent and children.
struct LedgerFacts {
    damaged: Option<String>,
    parent: Option<RunId>,
    children: Vec<RunId>,
}

async fn ledger_facts(state: &crate::State, id: &RunId) -> LedgerFacts {
    match state.stores.ledger(id).await {
        Err(e) => LedgerFacts {
            damaged: Some(e.to_string()),
            parent: None,
            children: Vec::new(),
        },
        Ok(loaded) => {
            let entries = loaded.ledger.entries();
            LedgerFacts {
                damaged: None,
                parent: entries.iter().find_map(|e| match e.event() {
                    EntryKind::ChildOf { parent, .. } => Some(parent.clone()),
                    _ => None,
                }),
                children: entries
                    .iter()
                    .filter_map(|e| match e.event() {
                        EntryKind::ChildStarted { child, .. } => Some(child.clone()),
                        _ => None,
                    })
                    .collect(),
            }
        }
    }
}

fn row(body: &mut String, id: &RunId, run: &Result<Run, String>, facts: &LedgerFacts, child: bool) {
    let class = if child { " class=\"child\"" } else { "" };
    let link = format!(
        "<a href=\"/runs/{}\">{}{}</a>",
        esc(id.as_str()),
        if child { "↳ " } else { "" },
        esc(&crate::short_id(id))
    );
    let run = match run {
        Ok(run) => run,
        Err(why) => {
            let _ = write!(
                body,
                "<tr{class}><td>{link}</td><td class=\"broken\">damaged</td><td colspan=\"6\">{}</td></tr>",
                esc(&one_line(facts.damaged.as_deref().unwrap_or(why), 200))
            );
            return;
        }
    };
    let status = match (&facts.damaged, waiting(run)) {
        (Some(_), _) => "<span class=\"broken\">damaged</span>".to_owned(),
        (None, Some(what)) => format!("<span class=\"waiting\">{what}</span>"),
        (None, None) => esc(run.status().as_str()),
    };
    let goal = match &facts.damaged {
        Some(why) => format!(
            "{} <span class=\"broken\">({})</span>",
            esc(&one_line(run.goal(), 80)),
            esc(&one_line(why, 160))
        ),
        None => esc(&one_line(run.goal(), 80)),
    };
    let ended = if run.is_finished() {
        run.updated_at().to_string()
    } else {
        String::new()
    };
    let _ = write!(
        body,
        "<tr{class}><td>{link}</td><td>{status}</td><td>{goal}</td><td>{}</td><td>{}</td><td class=\"wide\">{}</td><td class=\"wide\">{}</td><td class=\"wide\">{}</td></tr>",
        run.state(),
        run.steps(),
        esc(&budget_cell(run)),
        run.created_at(),
        ended
    );
}

/// `text` percent-encoded for a query string.
pub(crate) fn query_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

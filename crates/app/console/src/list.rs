//! `GET /`: the runs, paged on the server, those waiting for a person first, filtered by
//! status and text. On a filesystem store the list reads the console's run index (see
//! `summary`): only runs whose files changed since are read again. On a `PostgreSQL` store
//! the database pages the runs. Other stores are read snapshot by snapshot, and only the
//! runs on the page shown have their ledgers read, to mark a damaged one and to put
//! children under their parent.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::Html;
use rein::{RunId, RunStatus};
use serde::Deserialize;

use crate::error::HttpError;
use crate::html::{esc, one_line, page};
use crate::summary::{
    Columns, LedgerFacts, StatusFilter, Wanted, ledger_facts, ledger_facts_of, summarize,
};

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
    let wanted = Wanted {
        status: filter,
        text: text.to_lowercase(),
    };
    let page_no = query.page.unwrap_or(1).max(1);
    let (total, shown) = crate::summary::page(&state, &wanted, page_no, PAGE_SIZE)
        .await
        .map_err(HttpError::store)?;
    let pages = total.div_ceil(PAGE_SIZE).max(1);
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
    // The ledgers of the page's runs the stores keep no facts of (a database's), together.
    let unknown: Vec<RunId> = shown
        .iter()
        .filter(|(_, summary)| summary.facts.is_none())
        .map(|(id, _)| id.clone())
        .collect();
    let mut read = ledger_facts_of(&state, unknown).await.into_iter();
    let facts: Vec<LedgerFacts> = shown
        .iter()
        .map(|(_, summary)| match &summary.facts {
            Some(facts) => facts.clone(),
            None => read.next().unwrap_or_default(),
        })
        .collect();
    for ((id, summary), facts) in shown.iter().zip(facts) {
        if let Some(parent) = &facts.parent
            && on_page.contains(parent)
        {
            // Listed under its parent instead.
            continue;
        }
        row(&mut body, id, &summary.run, &facts, false);
        for child in facts.children.iter().take(PAGE_SIZE) {
            let child_run = summarize(&state, child, false).await.run;
            let child_facts = ledger_facts(&state, child).await;
            row(&mut body, child, &child_run, &child_facts, true);
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

fn row(
    body: &mut String,
    id: &RunId,
    run: &Result<Columns, String>,
    facts: &LedgerFacts,
    child: bool,
) {
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
    let status = match (&facts.damaged, &run.waiting) {
        (Some(_), _) => "<span class=\"broken\">damaged</span>".to_owned(),
        (None, Some(what)) => format!("<span class=\"waiting\">{}</span>", esc(what)),
        (None, None) => esc(run.status.as_str()),
    };
    let goal = match &facts.damaged {
        Some(why) => format!(
            "{} <span class=\"broken\">({})</span>",
            esc(&one_line(&run.goal, 80)),
            esc(&one_line(why, 160))
        ),
        None => esc(&one_line(&run.goal, 80)),
    };
    let ended = run.ended.map(|t| t.to_string()).unwrap_or_default();
    let _ = write!(
        body,
        "<tr{class}><td>{link}</td><td>{status}</td><td>{goal}</td><td>{}</td><td>{}</td><td class=\"wide\">{}</td><td class=\"wide\">{}</td><td class=\"wide\">{}</td></tr>",
        esc(&run.state),
        run.steps,
        esc(&run.budgets),
        run.started,
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

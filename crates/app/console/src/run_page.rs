//! `GET /runs/{id}`: one run — its verification status computed here, what it waits for
//! (with the forms that answer it), its path, budgets, model calls, artifacts, child runs
//! and its ledger timeline, paged; and `GET /runs/{id}/artifacts/{artifact}` to download
//! an artifact the run's ledger links.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{Html, IntoResponse, Response};
use rein::ledger::{Entry, EntryKind};
use rein::store::ArtifactId;
use rein::{Run, RunId, RunStatus};
use serde::Deserialize;

use crate::error::HttpError;
use crate::found::{Stored, parse_id, stored};
use crate::html::{esc, json_text, one_line, page};
use crate::summary::{budgets, waiting};

/// Ledger entries on one page of the timeline.
pub(crate) const ENTRIES_PER_PAGE: usize = 100;

/// The largest detail shown for one entry (bytes of JSON).
const MAX_DETAIL: usize = 16 * 1024;

/// `?page=N` of the timeline.
#[derive(Debug, Deserialize)]
pub(crate) struct RunQuery {
    #[serde(default)]
    page: Option<usize>,
}

/// The verification status, computed here from the ledger the store returned.
fn verification(stored: &Stored) -> String {
    match &stored.ledger {
        Ok(entries) => {
            let Some(last) = entries.last() else {
                return "<p class=\"broken\">the ledger is empty</p>".to_owned();
            };
            let behind = stored
                .snapshot
                .as_ref()
                .ok()
                .and_then(Run::ledger_head)
                .filter(|head| !rein::Ledger::entries_reach(entries, head));
            match behind {
                Some(head) => format!(
                    "<p class=\"broken\" id=\"verification\">ledger broken: it ends at entry {} but the run's snapshot was saved after entry {} (hash {}): entries are missing</p>",
                    last.seq(),
                    head.seq,
                    esc(&head.hash.to_string())
                ),
                None => format!(
                    "<p class=\"ok\" id=\"verification\">chain verified, {} entries, head {} (entry {})</p>",
                    entries.len(),
                    esc(&last.hash().to_string()),
                    last.seq()
                ),
            }
        }
        Err(e) => format!(
            "<p class=\"broken\" id=\"verification\">ledger broken: {}</p>",
            esc(&e.to_string())
        ),
    }
}

/// `GET /runs/{id}`.
pub(crate) async fn run(
    State(state): State<Arc<crate::State>>,
    Path(id): Path<String>,
    Query(query): Query<RunQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, HttpError> {
    let id = parse_id(&id)?;
    let stored = stored(&state, &id).await?;
    let operator = crate::auth::operator_of(&state, &headers);
    let shown = stored.ledger.as_ref().map_or(0, Vec::len);
    let mut body = format!(
        "<h1>Run <code>{}</code></h1><div data-events=\"/runs/{}/events\" data-entries=\"{shown}\"></div>",
        esc(id.as_str()),
        esc(id.as_str())
    );
    body.push_str(&verification(&stored));
    if let Some(note) = state.notes.lock().ok().and_then(|n| n.get(&id).cloned()) {
        let _ = write!(body, "<p class=\"note\">{}</p>", esc(&note));
    }
    let entries: &[Entry] = stored.ledger.as_deref().unwrap_or(&[]);
    // The ledger is the truth and the snapshot a cache saved after it: what the run is
    // doing now comes from the ledger when it verifies.
    let now = Now::of(stored.snapshot.as_ref().ok(), entries);
    match &stored.snapshot {
        Ok(run) => summary(&mut body, run, &now),
        Err(e) => {
            let _ = write!(
                body,
                "<p class=\"broken\">the run's snapshot cannot be read: {}</p>",
                esc(&e.to_string())
            );
        }
    }
    if let Ok(run) = &stored.snapshot
        && now.waiting.is_some()
    {
        body.push_str("<h2>Waiting for a person</h2>");
        crate::inbox::item(&mut body, &state, run, entries, operator.as_ref());
    }
    crate::stop::section(&mut body, &state, &id, &stored, operator.as_ref()).await;
    if !entries.is_empty() {
        body.push_str("<h2>Path</h2>");
        body.push_str(&crate::path::svg(entries));
        model_calls(&mut body, entries);
        artifacts(&mut body, &id, entries);
        children(&mut body, entries);
        timeline(&mut body, &id, entries, query.page.unwrap_or(1));
    }
    Ok(page(&format!("run {id}"), &body))
}

/// Where a run is now: from its ledger when it verifies, else from its snapshot.
struct Now {
    status: RunStatus,
    state: rein::State,
    steps: u32,
    ended: Option<rein::run::Timestamp>,
    waiting: Option<&'static str>,
}

impl Now {
    fn of(run: Option<&Run>, entries: &[Entry]) -> Self {
        let last = entries.last();
        let (status, state, steps) = match (last, run) {
            (Some(_), _) => {
                let outline = rein::ledger::RunOutline::of(entries);
                (outline.status, outline.state(), outline.decisions)
            }
            (None, Some(run)) => (run.status(), run.state(), run.steps()),
            (None, None) => (RunStatus::Running, rein::State::Intake, 0),
        };
        let finished = matches!(status, RunStatus::Completed | RunStatus::Failed);
        Self {
            status,
            state,
            steps,
            ended: finished
                .then(|| last.map(Entry::at).or_else(|| run.map(Run::updated_at)))
                .flatten(),
            // A snapshot saved before the ledger moved on may still hold a pending question.
            waiting: run
                .and_then(waiting)
                .filter(|_| status == RunStatus::Paused),
        }
    }
}

fn summary(body: &mut String, run: &Run, now: &Now) {
    let status = match now.waiting {
        Some(what) => format!("<span class=\"waiting\">{what}</span>"),
        None => esc(now.status.as_str()),
    };
    let _ = write!(
        body,
        "<table><tr><th>goal</th><td>{}</td></tr><tr><th>status</th><td id=\"status\">{status}</td></tr>\
<tr><th>state</th><td>{}</td></tr><tr><th>steps</th><td>{}</td></tr><tr><th>started</th><td>{}</td></tr>",
        esc(run.goal()),
        now.state,
        now.steps,
        run.created_at()
    );
    if let Some(ended) = now.ended {
        let _ = write!(body, "<tr><th>ended</th><td>{ended}</td></tr>");
    }
    if let Some(summary) = run.summary() {
        let _ = write!(body, "<tr><th>summary</th><td>{}</td></tr>", esc(summary));
    }
    if let Some(result) = run.result() {
        let _ = write!(
            body,
            "<tr><th>result</th><td><pre>{}</pre></td></tr>",
            esc(&json_text(result, MAX_DETAIL))
        );
    }
    if let Some(failure) = run.failure() {
        let _ = write!(
            body,
            "<tr><th>failure</th><td class=\"broken\">{}</td></tr>",
            esc(&failure.message)
        );
    }
    body.push_str(
        "</table><h2>Budgets</h2><table><tr><th>budget</th><th>used</th><th>limit</th></tr>",
    );
    for (name, used, limit) in budgets(run) {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{used}</td><td>{}</td></tr>",
            esc(&name),
            limit.map_or_else(|| "none".to_owned(), |l| l.to_string())
        );
    }
    body.push_str("</table>");
}

fn model_calls(body: &mut String, entries: &[Entry]) {
    let calls: Vec<(u32, &rein::planner::PlannerCall)> = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerCall { step, call } => Some((*step, call)),
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        return;
    }
    // Money, summed exactly; unknown when any call's is (a model without a price).
    let (input, output, cost) = calls.iter().fold((0u64, 0u64, None), |acc, (_, c)| {
        (
            acc.0.saturating_add(c.input_tokens),
            acc.1.saturating_add(c.output_tokens),
            Some(
                acc.2
                    .map_or(c.cost, |sum: rein::run::Cost| sum.plus(c.cost)),
            ),
        )
    });
    let cost = cost.unwrap_or_default();
    let _ = write!(
        body,
        "<h2>Model calls</h2><p>{} calls, {input} input and {output} output tokens, cost {cost}</p>\
<table><tr><th>step</th><th>provider</th><th>model</th><th>input</th><th>output</th><th>cost</th><th class=\"wide\">latency ms</th></tr>",
        calls.len()
    );
    for (step, c) in calls {
        let _ = write!(
            body,
            "<tr><td>{step}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"wide\">{}</td></tr>",
            esc(&c.provider),
            esc(&c.model),
            c.input_tokens,
            c.output_tokens,
            c.cost,
            c.latency_ms
        );
    }
    body.push_str("</table>");
}

fn artifacts(body: &mut String, id: &RunId, entries: &[Entry]) {
    let links: Vec<(&str, &rein::ToolName, &_)> = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolAttachment {
                tool, name, link, ..
            } => Some((name.as_str(), tool, link)),
            _ => None,
        })
        .collect();
    if links.is_empty() {
        return;
    }
    body.push_str("<h2>Artifacts</h2><table><tr><th>name</th><th>tool</th><th>size</th><th>type</th><th>checksum</th></tr>");
    for (name, tool, link) in links {
        let _ = write!(
            body,
            "<tr><td><a href=\"/runs/{}/artifacts/{}\" download>{}</a></td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(id.as_str()),
            esc(&crate::list::query_word(&link.id)),
            esc(name),
            esc(tool.as_str()),
            link.size,
            esc(&link.content_type),
            esc(&link.checksum)
        );
    }
    body.push_str("</table>");
}

fn children(body: &mut String, entries: &[Entry]) {
    let started: Vec<(&RunId, &str)> = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ChildStarted { child, goal, .. } => Some((child, goal.as_str())),
            _ => None,
        })
        .collect();
    let parent = entries.iter().find_map(|e| match e.event() {
        EntryKind::ChildOf { parent, .. } => Some(parent),
        _ => None,
    });
    if let Some(parent) = parent {
        let _ = write!(
            body,
            "<p>child of <a href=\"/runs/{0}\">{0}</a></p>",
            esc(parent.as_str())
        );
    }
    if started.is_empty() {
        return;
    }
    body.push_str("<h2>Child runs</h2><ul>");
    for (child, goal) in started {
        let ended = entries.iter().find_map(|e| match e.event() {
            EntryKind::ChildEnded {
                child: c, outcome, ..
            } if c == child => Some(if outcome.is_completed() {
                "completed"
            } else {
                "did not complete"
            }),
            _ => None,
        });
        let _ = write!(
            body,
            "<li><a href=\"/runs/{0}\">{0}</a> — {1} <em>{2}</em></li>",
            esc(child.as_str()),
            esc(&one_line(goal, 80)),
            ended.unwrap_or("running")
        );
    }
    body.push_str("</ul>");
}

fn timeline(body: &mut String, id: &RunId, entries: &[Entry], page_no: usize) {
    let pages = entries.len().div_ceil(ENTRIES_PER_PAGE).max(1);
    let page_no = page_no.clamp(1, pages);
    let _ = write!(
        body,
        "<h2>Ledger</h2><p>entries {}–{} of {} · page {page_no} of {pages}",
        (page_no - 1) * ENTRIES_PER_PAGE + 1,
        (page_no * ENTRIES_PER_PAGE).min(entries.len()),
        entries.len()
    );
    for (label, to) in [
        ("first", 1),
        ("← earlier", page_no.saturating_sub(1)),
        ("later →", page_no + 1),
        ("last", pages),
    ] {
        if to >= 1 && to <= pages && to != page_no {
            let _ = write!(
                body,
                " · <a href=\"/runs/{}?page={to}\">{label}</a>",
                esc(id.as_str())
            );
        }
    }
    body.push_str("</p><table><tr><th>seq</th><th class=\"wide\">time</th><th>state</th><th>event</th><th>details</th></tr>");
    for entry in entries
        .iter()
        .skip((page_no - 1) * ENTRIES_PER_PAGE)
        .take(ENTRIES_PER_PAGE)
    {
        let _ = write!(
            body,
            "<tr id=\"e{0}\"><td>{0}</td><td class=\"wide\">{1}</td><td>{2}</td><td>{3}</td><td><details><summary>show</summary><pre>{4}</pre></details></td></tr>",
            entry.seq(),
            entry.at(),
            entry.state(),
            entry.event().name(),
            esc(&json_text(entry.event(), MAX_DETAIL))
        );
    }
    body.push_str("</table>");
}

/// `GET /runs/{id}/artifacts/{artifact}`: the bytes of an artifact this run's ledger links
/// (the store checks its checksum), always as a download, never rendered by the browser.
pub(crate) async fn artifact(
    State(state): State<Arc<crate::State>>,
    Path((id, artifact)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let id = parse_id(&id)?;
    let artifact_id = artifact.parse::<ArtifactId>().map_err(|e| {
        HttpError::bad_request(format!(
            "`{}` is not an artifact id: {e}",
            one_line(&artifact, 80)
        ))
    })?;
    let stored = stored(&state, &id).await?;
    let entries = stored.ledger.map_err(|e| {
        HttpError::conflict(format!(
            "the run's ledger does not verify, so its artifacts are not served: {e}"
        ))
    })?;
    let name = entries.iter().find_map(|e| match e.event() {
        EntryKind::ToolAttachment { name, link, .. } if link.id == artifact_id.as_str() => {
            Some(name.clone())
        }
        _ => None,
    });
    let Some(name) = name else {
        return Err(HttpError::not_found(format!(
            "run {id} links no artifact {artifact_id}"
        )));
    };
    let (_, bytes) = state
        .stores
        .artifacts
        .get_boxed(&artifact_id)
        .await
        .map_err(|e| HttpError::conflict(format!("artifact {artifact_id}: {e}")))?;
    let file_name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file_name}\""),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
        ],
        bytes,
    )
        .into_response())
}

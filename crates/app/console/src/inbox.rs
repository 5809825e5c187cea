//! `GET /inbox`: every run waiting for a person — a call waiting for its verdict (tool,
//! input, risk, reason, run and step, how long it has waited, when its timeout denies it)
//! and a question with its options — each with the form that answers it. Items are
//! focusable; `j` / `k` move between them. `?q=TEXT` keeps the runs whose id or goal holds
//! the text; "deny all" denies every call the filter shows, after a confirmation that says
//! how many (`deny_all`).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Html;
use rein::ledger::{Entry, EntryKind};
use rein::policy::PolicySnapshot;
use rein::run::Timestamp;
use rein::{Run, Value};
use serde::Deserialize;

use crate::auth::Operator;
use crate::error::HttpError;
use crate::html::{esc, json_text, page};

/// At most this many waiting runs are shown at once (the oldest wait first).
const MAX_ITEMS: usize = 200;

/// The largest tool input shown (bytes of JSON).
const MAX_INPUT: usize = 8 * 1024;

/// The inbox's query: `?q=deploy` keeps the runs whose id or goal holds the text.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct InboxQuery {
    #[serde(default)]
    q: Option<String>,
}

impl InboxQuery {
    /// The text filter, checked: at most [`MAX_QUERY`] characters.
    pub(crate) fn text(&self) -> Result<&str, HttpError> {
        let text = self.q.as_deref().unwrap_or("");
        if text.chars().count() > MAX_QUERY {
            return Err(HttpError::bad_request(format!(
                "the text filter is longer than {MAX_QUERY} characters"
            )));
        }
        Ok(text)
    }
}

/// The longest text filter accepted.
const MAX_QUERY: usize = 200;

/// `GET /inbox`.
pub(crate) async fn inbox(
    State(state): State<Arc<crate::State>>,
    Query(query): Query<InboxQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, HttpError> {
    let operator = crate::auth::operator_of(&state, &headers);
    let text = query.text()?;
    let (total, runs) = crate::summary::waiting_runs(&state, &text.to_lowercase(), MAX_ITEMS)
        .await
        .map_err(HttpError::store)?;
    let mut body = format!(
        "<h1>Inbox</h1><form method=\"get\" action=\"/inbox\"><label>text <input type=\"text\" name=\"q\" value=\"{}\"></label> <button>filter</button></form>\
<p>{total} run{} waiting for a person{}</p>",
        esc(text),
        if total == 1 { "" } else { "s" },
        if total > MAX_ITEMS {
            format!(" (the {MAX_ITEMS} that waited longest are shown)")
        } else {
            String::new()
        }
    );
    let approvals = runs
        .iter()
        .filter(|r| r.pending_approval().is_some())
        .count();
    if approvals > 0
        && !state.read_only
        && state.driver.is_some()
        && let Some(op) = &operator
    {
        // The checkboxes of the items below belong to this form (their `form` attribute).
        let _ = write!(
            body,
            "<form id=\"bulk\" method=\"post\" action=\"/inbox/bulk\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<label>reason <input type=\"text\" name=\"reason\" required></label> \
<button name=\"verdict\" value=\"approve\">approve selected</button> <button name=\"verdict\" value=\"deny\">deny selected</button> \
<small>each selected call is decided and ledgered on its own</small></form>",
            esc(&crate::auth::csrf_for(&state, op))
        );
        // Asks first: the confirmation says how many calls it will deny.
        let _ = write!(
            body,
            "<form method=\"get\" action=\"/inbox/deny-all\" id=\"deny-all\"><input type=\"hidden\" name=\"q\" value=\"{}\">\
<button>deny all {approvals} shown by this filter…</button></form>",
            esc(text)
        );
    }
    for run in runs.iter().take(MAX_ITEMS) {
        let entries = state
            .stores
            .ledger(run.id())
            .await
            .map(|l| l.ledger.entries().to_vec())
            .unwrap_or_default();
        item(&mut body, &state, run, &entries, operator.as_ref());
    }
    Ok(page("inbox", &body))
}

/// What run `run` waits for, and the form that answers it (for an operator who may act).
pub(crate) fn item(
    body: &mut String,
    state: &crate::State,
    run: &Run,
    entries: &[Entry],
    operator: Option<&Operator>,
) {
    let id = esc(run.id().as_str());
    let _ = write!(
        body,
        "<section class=\"item\" tabindex=\"0\"><p><a href=\"/runs/{id}\">run {}</a> — {}</p>",
        esc(&crate::short_id(run.id())),
        esc(&crate::html::one_line(run.goal(), 120))
    );
    let can_act = match (operator, state.read_only, state.driver.is_some()) {
        (_, true, _) => Err("this console is read-only"),
        (_, _, false) => Err("this console cannot drive runs"),
        (None, _, _) => Err("sign in at /login to act"),
        (Some(op), false, true) => Ok(crate::auth::csrf_for(state, op)),
    };
    let now = now();
    if let Some(pending) = run.pending_approval() {
        let timeout = serde_json::from_value::<PolicySnapshot>(run.policy().clone())
            .ok()
            .map(|p| p.approvals.timeout());
        let waited = now.millis_since(pending.requested_at);
        let denies_at = timeout.map_or_else(
            || "unknown".to_owned(),
            |t| {
                let millis = u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
                Timestamp::from_unix_millis(
                    pending.requested_at.as_unix_millis().saturating_add(millis),
                )
                .to_string()
            },
        );
        let input = input_of(
            entries,
            pending.tool.as_str(),
            &pending.input_hash.to_string(),
        );
        let _ = write!(
            body,
            "<p class=\"waiting\">waits for a verdict on <code>{}</code></p><table>\
<tr><th>risk</th><td>{}</td></tr><tr><th>reason</th><td>{}</td></tr><tr><th>step</th><td>{}</td></tr>\
<tr><th>waited</th><td>{}</td></tr><tr><th>timeout denies it at</th><td>{}</td></tr>\
<tr><th>input</th><td><pre>{}</pre><small>hash <code>{}</code></small></td></tr></table>",
            esc(pending.tool.as_str()),
            pending.risk,
            esc(&pending.reason),
            pending.step,
            age(waited),
            esc(&denies_at),
            esc(&input.map_or_else(
                || "(not found in the ledger)".to_owned(),
                |v| json_text(&v, MAX_INPUT)
            )),
            esc(&pending.input_hash.to_string())
        );
        match &can_act {
            Ok(csrf) => {
                // Ticked, it joins the inbox's bulk form (elsewhere on a run's page: none).
                let _ = write!(
                    body,
                    "<label class=\"select\"><input type=\"checkbox\" name=\"item\" form=\"bulk\" value=\"{id}:{}\"> select</label>",
                    esc(&pending.input_hash.to_string())
                );
                let _ = write!(
                    body,
                    "<form method=\"post\" action=\"/runs/{id}/approval\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<input type=\"hidden\" name=\"input_hash\" value=\"{}\"><label>reason <input type=\"text\" name=\"reason\" required></label> \
<button name=\"verdict\" value=\"approve\">approve</button> <button name=\"verdict\" value=\"deny\">deny</button></form>",
                    esc(csrf),
                    esc(&pending.input_hash.to_string())
                );
            }
            Err(why) => {
                let _ = write!(body, "<p><em>{}</em></p>", esc(why));
            }
        }
    } else if let Some(question) = run.pending_question() {
        let _ = write!(
            body,
            "<p class=\"waiting\">asks: {}</p>",
            esc(&question.question)
        );
        if !question.options.is_empty() {
            body.push_str("<p>options: ");
            body.push_str(
                &question
                    .options
                    .iter()
                    .map(|o| format!("<code>{}</code>", esc(o)))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            body.push_str("</p>");
        }
        match &can_act {
            Ok(csrf) => {
                let _ = write!(
                    body,
                    "<form method=\"post\" action=\"/runs/{id}/answer\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">",
                    esc(csrf)
                );
                if question.options.is_empty() {
                    body.push_str("<label>answer <input type=\"text\" name=\"answer\" required></label> <button>answer</button>");
                } else {
                    for option in &question.options {
                        let _ = write!(
                            body,
                            "<button name=\"answer\" value=\"{0}\">{0}</button> ",
                            esc(option)
                        );
                    }
                }
                body.push_str("</form>");
            }
            Err(why) => {
                let _ = write!(body, "<p><em>{}</em></p>", esc(why));
            }
        }
    }
    body.push_str("</section>");
}

/// The input of the call of `tool` whose hash is `hash`, from the decisions in the ledger
/// (a batch or a sequence holds it among others).
fn input_of(entries: &[Entry], tool: &str, hash: &str) -> Option<Value> {
    entries.iter().rev().find_map(|e| match e.event() {
        EntryKind::Decision { decision, .. } => {
            let value = serde_json::to_value(decision).ok()?;
            find_call(&value, tool, hash, 0)
        }
        _ => None,
    })
}

fn find_call(value: &Value, tool: &str, hash: &str, depth: usize) -> Option<Value> {
    if depth > 16 {
        return None;
    }
    match value {
        Value::Object(map) => {
            if map.get("tool").and_then(Value::as_str) == Some(tool)
                && let Some(input) = map.get("input")
                && rein::tool::Digest::of_json(input).to_string() == hash
            {
                return Some(input.clone());
            }
            map.values()
                .find_map(|v| find_call(v, tool, hash, depth + 1))
        }
        Value::Array(items) => items
            .iter()
            .find_map(|v| find_call(v, tool, hash, depth + 1)),
        _ => None,
    }
}

/// The wall clock, for how long a call has waited (display only: the engine's clock
/// decides timeouts).
pub(crate) fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Timestamp::from_unix_millis(millis)
}

fn age(millis: u64) -> String {
    let secs = millis / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

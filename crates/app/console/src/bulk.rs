//! `POST /inbox/bulk`: one verdict on several pending approvals in one form post. Each item
//! goes through the same path as a single verdict (`actions::decide`), is ledgered on its
//! own, and is reported on its own: one that is stale (decided already, past its timeout,
//! another call now) is a 409 on the page and changes nothing, and the others still go on.
//!
//! `GET /inbox/deny-all?q=TEXT`: "deny all by the current filter" asks first. It changes
//! nothing: it says how many calls the inbox's filter shows waiting for a verdict, names
//! them, and holds the form that denies exactly those (a bulk post of their items), so a
//! call that came or went since is not touched unseen, and one decided meanwhile is a 409.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Html;

use crate::actions::{decide, parse_verdict};
use crate::error::HttpError;
use crate::form::{guard, may_change, text_field};
use crate::found::parse_id;
use crate::html::{esc, one_line, page};
use crate::inbox::InboxQuery;

/// The most items one bulk post may carry (the inbox shows at most as many).
pub(crate) const MAX_ITEMS: usize = 200;

/// `POST /inbox/bulk`: fields `csrf`, `verdict` (`approve` or `deny`), `reason`, and one
/// `item` per approval, `RUN_ID:INPUT_HASH` (the call the operator looked at).
pub(crate) async fn bulk(
    State(state): State<Arc<crate::State>>,
    headers: HeaderMap,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Html<String>, HttpError> {
    let one = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    let operator = guard(&state, &headers, one("csrf"))?;
    let verdict = parse_verdict(one("verdict"))?;
    let reason = text_field(
        "reason",
        one("reason"),
        "why (it is recorded in the ledger)",
    )?;
    let items: Vec<&str> = fields
        .iter()
        .filter(|(k, _)| k == "item")
        .map(|(_, v)| v.as_str())
        .collect();
    if items.is_empty() {
        return Err(HttpError::bad_request(
            "no approval was selected: tick the calls the verdict is for",
        ));
    }
    if items.len() > MAX_ITEMS {
        return Err(HttpError::bad_request(format!(
            "{} approvals were selected; at most {MAX_ITEMS} are decided in one post",
            items.len()
        )));
    }
    // Every item is checked before any is decided: a malformed one refuses the whole post.
    let mut parsed = Vec::with_capacity(items.len());
    for item in items {
        let (id, hash) = item.split_once(':').ok_or_else(|| {
            HttpError::bad_request(format!(
                "item `{}` is not RUN_ID:INPUT_HASH",
                one_line(item, 80)
            ))
        })?;
        parsed.push((parse_id(id)?, hash.to_owned()));
    }
    let said = match verdict {
        rein::Verdict::Granted => "approve",
        rein::Verdict::Denied => "deny",
    };
    let mut body = format!(
        "<h1>Bulk {said}</h1><p>{} approval{} asked for by {}</p><ul id=\"bulk-results\">",
        parsed.len(),
        if parsed.len() == 1 { "" } else { "s" },
        esc(operator.name())
    );
    let mut decided = 0;
    for (id, hash) in &parsed {
        let outcome = decide(&state, &operator, id, verdict, &reason, hash).await;
        let (class, status, text) = match outcome {
            Ok(done) => {
                decided += 1;
                ("ok", 200, done)
            }
            Err(e) => ("broken", e.status.as_u16(), e.message),
        };
        let _ = write!(
            body,
            "<li class=\"{class}\" data-status=\"{status}\"><a href=\"/runs/{0}\">run {1}</a>: {status} — {2}</li>",
            esc(id.as_str()),
            esc(&crate::short_id(id)),
            esc(&text)
        );
    }
    let _ = write!(
        body,
        "</ul><p>{decided} of {} decided; <a href=\"/inbox\">back to the inbox</a></p>",
        parsed.len()
    );
    Ok(page("bulk verdict", &body))
}

/// `GET /inbox/deny-all?q=TEXT`: the confirmation of "deny all" by the inbox's filter.
pub(crate) async fn deny_all(
    State(state): State<Arc<crate::State>>,
    Query(query): Query<InboxQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, HttpError> {
    let operator = may_change(&state, &headers)?;
    if state.driver.is_none() {
        return Err(HttpError::conflict(
            "this console cannot drive runs, so it cannot deny calls",
        ));
    }
    let text = query.text()?;
    let (waiting, runs) = crate::summary::waiting_runs(&state, &text.to_lowercase(), MAX_ITEMS)
        .await
        .map_err(HttpError::store)?;
    let calls: Vec<_> = runs
        .iter()
        .filter_map(|run| run.pending_approval().map(|p| (run, p)))
        .collect();
    let back = format!("/inbox?q={}", crate::list::query_word(text));
    let filter = if text.is_empty() {
        "no filter: every run".to_owned()
    } else {
        format!("runs whose id or goal holds “{}”", esc(text))
    };
    if calls.is_empty() {
        let body = format!(
            "<h1>Deny all</h1><p id=\"deny-count\" data-count=\"0\">no call waits for a verdict under this filter ({filter}): nothing to deny</p><p><a href=\"{}\">back to the inbox</a></p>",
            esc(&back)
        );
        return Ok(page("deny all", &body));
    }
    let n = calls.len();
    let plural = if n == 1 { "" } else { "s" };
    let mut body = format!(
        "<h1>Deny all</h1><p id=\"deny-count\" data-count=\"{n}\">this denies the {n} call{plural} waiting for a verdict under this filter ({filter}){}; each is decided and ledgered on its own, in the name of {}</p><ul>",
        if waiting > runs.len() {
            format!(
                " among the {} runs that waited longest ({waiting} wait; deny again for the rest)",
                runs.len()
            )
        } else {
            String::new()
        },
        esc(operator.name())
    );
    let mut items = String::new();
    for (run, pending) in &calls {
        let _ = write!(
            body,
            "<li><a href=\"/runs/{0}\">run {1}</a>: <code>{2}</code> — {3}</li>",
            esc(run.id().as_str()),
            esc(&crate::short_id(run.id())),
            esc(pending.tool.as_str()),
            esc(&one_line(run.goal(), 80))
        );
        let _ = write!(
            items,
            "<input type=\"hidden\" name=\"item\" value=\"{}:{}\">",
            esc(run.id().as_str()),
            esc(&pending.input_hash.to_string())
        );
    }
    let _ = write!(
        body,
        "</ul><form method=\"post\" action=\"/inbox/bulk\" id=\"deny-all-confirm\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<input type=\"hidden\" name=\"verdict\" value=\"deny\">{items}<label>reason <input type=\"text\" name=\"reason\" required></label> \
<button>deny these {n} call{plural}</button> <a href=\"{}\">cancel</a></form>",
        esc(&crate::auth::csrf_for(&state, &operator)),
        esc(&back)
    );
    Ok(page("deny all", &body))
}

//! `POST /inbox/bulk`: one verdict on several pending approvals in one form post. Each item
//! goes through the same path as a single verdict (`actions::decide`), is ledgered on its
//! own, and is reported on its own: one that is stale (decided already, past its timeout,
//! another call now) is a 409 on the page and changes nothing, and the others still go on.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Html;

use crate::actions::{decide, parse_verdict};
use crate::error::HttpError;
use crate::form::{guard, text_field};
use crate::found::parse_id;
use crate::html::{esc, one_line, page};

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

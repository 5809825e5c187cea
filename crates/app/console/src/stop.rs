//! `POST /runs/{id}/stop`: an operator's abort or interrupt of a run, persisted as a stop
//! request (DESIGN.md §7) that the process driving the run honours at its next step, or
//! the run's next resume does; and the section of a run's page that shows and asks for one.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use rein::ledger::RunOutline;
use rein::run::{StopKind, StopRequest};
use rein::{EngineError, RunId, RunStatus};
use serde::Deserialize;

use crate::auth::Operator;
use crate::error::HttpError;
use crate::form::{guard, text_field};
use crate::found::{Stored, parse_id, stored};
use crate::html::{esc, one_line};

/// The stop form's fields.
#[derive(Debug, Deserialize)]
pub(crate) struct StopForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    reason: String,
}

/// `POST /runs/{id}/stop`: ask run `id` to stop (`kind` is `abort` or `interrupt`).
pub(crate) async fn stop(
    State(state): State<Arc<crate::State>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<StopForm>,
) -> Result<Response, HttpError> {
    let operator = guard(&state, &headers, &form.csrf)?;
    let id = parse_id(&id)?;
    let kind = parse_kind(&form.kind)?;
    let reason = text_field("reason", &form.reason, "why (it is recorded in the ledger)")?;
    let stored = stored(&state, &id).await?;
    let request = StopRequest::new(kind, operator.name(), reason, crate::inbox::now());
    ask(&state, &id, &stored, &request).await?;
    Ok(Redirect::to(&format!("/runs/{id}")).into_response())
}

/// Persists `request` for run `id` unless the run has ended, and notes it for its page:
/// through the console's stop engine when it has one, else into the stores' stop request
/// store.
pub(crate) async fn ask(
    state: &crate::State,
    id: &RunId,
    stored: &Stored,
    request: &StopRequest,
) -> Result<(), HttpError> {
    let status = status(stored);
    if matches!(status, Some(RunStatus::Completed | RunStatus::Failed)) {
        return Err(finished(id, status));
    }
    let unstored = |e: &dyn std::fmt::Display| {
        HttpError::store(format!(
            "the stop request could not be stored: {e}; nothing was recorded"
        ))
    };
    match (&state.stopper, &state.stores.stops) {
        (Some(engine), _) => engine
            .request_stop(id, request)
            .await
            .map_err(|e| match e {
                EngineError::RunFinished { status, .. } => finished(id, Some(status)),
                EngineError::RunNotFound { .. } => {
                    HttpError::not_found(format!("no run {id} in this store"))
                }
                e => unstored(&e),
            })?,
        (None, Some(stops)) => stops
            .request_boxed(id, request)
            .await
            .map_err(|e| unstored(&e))?,
        (None, None) => {
            return Err(HttpError::conflict(
                "this console keeps no stop requests (no stop engine, and stores built with Stores::new without with_stop_requests): it cannot stop runs",
            ));
        }
    }
    let note = format!(
        "{} requested by {}: the process driving the run stops it at its next step; a run nobody drives stops when it is next resumed",
        request.kind, request.by
    );
    tracing::info!(run_id = %id, "{note}");
    if let Ok(mut notes) = state.notes.lock() {
        notes.insert(id.clone(), note);
    }
    Ok(())
}

/// The 409 for a stop request on a run that has ended.
fn finished(id: &RunId, status: Option<RunStatus>) -> HttpError {
    HttpError::conflict(format!(
        "run {id} is {} already: a finished run cannot be stopped; nothing was recorded",
        status.map_or("finished", RunStatus::as_str)
    ))
}

/// The stop request waiting for run `id`, from where the console asks for them.
async fn pending(state: &crate::State, id: &RunId) -> Option<Result<Option<StopRequest>, String>> {
    match (&state.stopper, &state.stores.stops) {
        (Some(engine), _) => Some(engine.pending_stop(id).await.map_err(|e| e.to_string())),
        (None, Some(stops)) => Some(stops.pending_boxed(id).await.map_err(|e| e.to_string())),
        (None, None) => None,
    }
}

/// `abort` or `interrupt`, or a 400 that says so.
pub(crate) fn parse_kind(text: &str) -> Result<StopKind, HttpError> {
    match text {
        "abort" => Ok(StopKind::Abort),
        "interrupt" => Ok(StopKind::Interrupt),
        other => Err(HttpError::bad_request(format!(
            "stop kind `{}` is neither `abort` nor `interrupt`",
            one_line(other, 40)
        ))),
    }
}

/// The run's status: from its ledger when it verifies, else from its snapshot.
fn status(stored: &Stored) -> Option<RunStatus> {
    match (&stored.ledger, &stored.snapshot) {
        (Ok(entries), _) if !entries.is_empty() => Some(RunOutline::of(entries).status),
        (_, Ok(run)) => Some(run.status()),
        _ => None,
    }
}

/// The run page's stop section: a request waiting to be honoured, and the form that asks
/// for one (for an operator who may act, on a run that has not ended).
pub(crate) async fn section(
    body: &mut String,
    state: &crate::State,
    id: &RunId,
    stored: &Stored,
    operator: Option<&Operator>,
) {
    if matches!(
        status(stored),
        Some(RunStatus::Completed | RunStatus::Failed) | None
    ) {
        return;
    }
    let Some(waiting) = pending(state, id).await else {
        return;
    };
    body.push_str("<h2>Stop</h2>");
    match waiting {
        Ok(Some(waiting)) => {
            let _ = write!(
                body,
                "<p class=\"waiting\" id=\"stop-request\">{} requested by {} at {}: {} — waiting for the process driving the run (or its next resume)</p>",
                waiting.kind,
                esc(&waiting.by),
                waiting.requested_at,
                esc(&waiting.reason)
            );
        }
        Ok(None) => {}
        Err(e) => {
            let _ = write!(
                body,
                "<p class=\"broken\">the run's stop request cannot be read: {}</p>",
                esc(&e)
            );
        }
    }
    let csrf = match (operator, state.read_only) {
        (_, true) => {
            body.push_str("<p><em>this console is read-only</em></p>");
            return;
        }
        (None, false) => {
            body.push_str("<p><em>sign in at /login to stop the run</em></p>");
            return;
        }
        (Some(op), false) => crate::auth::csrf_for(state, op),
    };
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/runs/{}/stop\" id=\"stop\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<label>reason <input type=\"text\" name=\"reason\" required></label> \
<button name=\"kind\" value=\"interrupt\" title=\"nothing new starts; the run is left interrupted and can be resumed\">interrupt</button> \
<button name=\"kind\" value=\"abort\" title=\"calls in flight are dropped; the run fails as aborted\">abort</button></form>",
        esc(id.as_str()),
        esc(&csrf)
    );
}

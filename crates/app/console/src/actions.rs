//! The changes: signing in with a token, and the verdicts and answers runs wait for. Every
//! change passes [`guard`] — refused on a read-only console, without a valid token, or
//! without the form's CSRF value — and then goes through the engine's own API on an engine
//! the [`RunDriver`](crate::RunDriver) opens, exactly as `rein approve` and `rein resume` do.

use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use rein::{ApprovalResponse, EngineError, RunId, RunStatus, Verdict};
use serde::Deserialize;

use crate::auth::Operator;
use crate::error::HttpError;
use crate::form::{guard, text_field};
use crate::found::{parse_id, stored};
use crate::html::{esc, one_line, page};

/// The cookie a signed-in browser sends its session in (`HttpOnly`, SameSite=Strict).
use crate::auth::{COOKIE, operator_of};

/// A run this console is deciding on or driving: one decision at a time per run. Dropping
/// it frees the run.
struct Claim {
    state: Arc<crate::State>,
    id: RunId,
}

impl Claim {
    fn take(state: &Arc<crate::State>, id: &RunId) -> Result<Self, HttpError> {
        let mut busy = state.busy.lock().map_err(|_| {
            HttpError::store(
                "the console's state is unusable after a crash in a handler; restart it",
            )
        })?;
        if !busy.insert(id.clone()) {
            return Err(HttpError::conflict(format!(
                "run {id} is being decided on or driven by this console right now (another decision came first); nothing was recorded — reload its page to see the outcome"
            )));
        }
        state.in_flight.send_modify(|n| *n += 1);
        Ok(Self {
            state: Arc::clone(state),
            id: id.clone(),
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Ok(mut busy) = self.state.busy.lock() {
            busy.remove(&self.id);
        }
        self.state
            .in_flight
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// An engine error as the operator sees it.
fn engine_error(e: EngineError) -> HttpError {
    match e {
        EngineError::RunNotFound { .. } => HttpError::not_found(e.to_string()),
        EngineError::InvalidAnswer { .. } => HttpError::bad_request(e.to_string()),
        other => HttpError::conflict(other.to_string()),
    }
}

/// The sign-in form's fields.
#[derive(Debug, Deserialize)]
pub(crate) struct LoginForm {
    #[serde(default)]
    token: String,
}

/// `GET /login`.
pub(crate) async fn login_form(
    State(state): State<Arc<crate::State>>,
    headers: HeaderMap,
) -> Html<String> {
    let who = operator_of(&state, &headers).map_or_else(
        || "<p>not signed in: pages can be read, changes need a token</p>".to_owned(),
        |o| format!("<p>signed in as <strong>{}</strong></p><form method=\"post\" action=\"/logout\"><button>sign out</button></form>", esc(o.name())),
    );
    let read_only = if state.read_only {
        "<p class=\"note\">this console is read-only: it refuses every change</p>"
    } else {
        ""
    };
    page(
        "operator",
        &format!(
            "<h1>Operator</h1>{read_only}{who}<form method=\"post\" action=\"/login\"><label>token <input type=\"password\" name=\"token\" autocomplete=\"off\"></label> <button>sign in</button></form>"
        ),
    )
}

/// `POST /login`: a valid token signs the browser in with an `HttpOnly`, SameSite=Strict
/// cookie holding a session value derived from it (not the token).
pub(crate) async fn login(
    State(state): State<Arc<crate::State>>,
    Form(form): Form<LoginForm>,
) -> Result<Response, HttpError> {
    let Some(operator) = state.tokens.operator(form.token.trim()) else {
        return Err(HttpError::new(
            StatusCode::UNAUTHORIZED,
            "that token belongs to no operator of this console",
        ));
    };
    // The cookie holds a session value derived from the token, never the token itself.
    let session = crate::auth::session_value(&state.secret, operator);
    let cookie = HeaderValue::from_str(&format!(
        "{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/"
    ))
    .map_err(|_| HttpError::store("the session value is not a valid cookie value"))?;
    let mut response = Redirect::to("/inbox").into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(response)
}

/// `POST /logout`.
pub(crate) async fn logout() -> Response {
    let mut response = Redirect::to("/login").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "rein_console_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        ),
    );
    response
}

/// The verdict form's fields.
#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    verdict: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    input_hash: String,
}

/// `POST /runs/{id}/approval`: approve or deny the call run `id` waits for.
pub(crate) async fn approval(
    State(state): State<Arc<crate::State>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<ApprovalForm>,
) -> Result<Response, HttpError> {
    let operator = guard(&state, &headers, &form.csrf)?;
    let id = parse_id(&id)?;
    let verdict = parse_verdict(&form.verdict)?;
    let reason = text_field("reason", &form.reason, "why (it is recorded in the ledger)")?;
    let input_hash = text_field(
        "input_hash",
        &form.input_hash,
        "the hash of the call's input you looked at",
    )?;
    decide(&state, &operator, &id, verdict, &reason, &input_hash).await?;
    Ok(Redirect::to(&format!("/runs/{id}")).into_response())
}

/// The answer form's fields.
#[derive(Debug, Deserialize)]
pub(crate) struct AnswerForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    answer: String,
}

/// `POST /runs/{id}/answer`: answer the question run `id` waits for, and drive it on.
pub(crate) async fn answer(
    State(state): State<Arc<crate::State>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<AnswerForm>,
) -> Result<Response, HttpError> {
    let operator = guard(&state, &headers, &form.csrf)?;
    let id = parse_id(&id)?;
    let answer = text_field("answer", &form.answer, "the answer")?;
    let driver = driver(&state)?;
    let claim = Claim::take(&state, &id)?;
    stored(&state, &id).await?;
    let opened = driver.open(&id).await.map_err(HttpError::conflict)?;
    let engine = opened.engine;
    let run = engine.load_run(&id).await.map_err(engine_error)?;
    if run.status() != RunStatus::Paused || run.pending_question().is_none() {
        opened.release.await;
        return Err(HttpError::conflict(format!(
            "run {id} waits for no answer now (it is {}); nothing was recorded",
            run.status()
        )));
    }
    let handle = match engine.start_answer(&id, &answer, operator.name()).await {
        Ok(handle) => handle,
        Err(e) => {
            opened.release.await;
            return Err(engine_error(e));
        }
    };
    let who = format!(
        "answered by {} ({}); {}",
        operator.name(),
        one_line(&answer, 60),
        driver.describe(&id)
    );
    let release = opened.release;
    let task_state = Arc::clone(&state);
    let task_id = id.clone();
    tokio::spawn(async move {
        let _claim = claim;
        let result = handle.wait().await;
        release.await;
        note(&task_state, &task_id, &who, result.map(|run| run.status()));
    });
    Ok(Redirect::to(&format!("/runs/{id}")).into_response())
}

fn driver(state: &crate::State) -> Result<Arc<dyn crate::RunDriver>, HttpError> {
    state.driver.clone().ok_or_else(|| {
        HttpError::conflict(
            "this console cannot drive runs (it was built without a RunDriver): it shows runs only; use `rein approve` / `rein resume`",
        )
    })
}

/// Records what became of a run this console drove on, for its page.
fn note(state: &crate::State, id: &RunId, who: &str, outcome: Result<RunStatus, EngineError>) {
    let text = match outcome {
        Ok(status) => format!("{who}; the run is now {status}"),
        Err(e) => format!("{who}; then: {e}"),
    };
    tracing::info!(run_id = %id, "{text}");
    if let Ok(mut notes) = state.notes.lock() {
        notes.insert(id.clone(), text);
    }
}

/// Gives `operator`'s verdict on the call run `id` waits for, if it is the call whose input
/// hash is `input_hash`, and drives the run on in the background (as `rein approve` does).
/// Returns what was done, in a sentence.
pub(crate) async fn decide(
    state: &Arc<crate::State>,
    operator: &Operator,
    id: &RunId,
    verdict: Verdict,
    reason: &str,
    input_hash: &str,
) -> Result<String, HttpError> {
    let driver = driver(state)?;
    let claim = Claim::take(state, id)?;
    stored(state, id).await?;
    let opened = driver.open(id).await.map_err(HttpError::conflict)?;
    let engine = opened.engine;
    let before = engine.load_run(id).await.map_err(engine_error)?;
    // Looking is touching: an approval past its timeout is denied here (recorded).
    let pending = engine.pending_approval(id).await.map_err(engine_error)?;
    let Some(pending) = pending else {
        opened.release.await;
        return Err(
            match before
                .pending_approval()
                .filter(|_| before.status() == RunStatus::Paused)
            {
                Some(waited) => HttpError::conflict(format!(
                    "the approval came too late: run {id} waited for a verdict on `{}` (input {}, requested at {}) past its approval timeout, so the call was denied as timed out when the console looked (recorded); nothing was approved",
                    waited.tool, waited.input_hash, waited.requested_at
                )),
                None => HttpError::conflict(format!(
                    "run {id} waits for no approval now (it is {}); nothing was recorded — its page shows what happened",
                    before.status()
                )),
            },
        );
    };
    if !pending
        .input_hash
        .to_string()
        .eq_ignore_ascii_case(input_hash)
    {
        opened.release.await;
        return Err(HttpError::conflict(format!(
            "run {id} waits for a call of `{}` with input {}, not {}: the pending call is not the one you looked at; nothing was recorded",
            pending.tool,
            pending.input_hash,
            one_line(input_hash, 80)
        )));
    }
    let response = ApprovalResponse::answer(&pending, verdict, operator.name(), reason);
    let said = match verdict {
        Verdict::Granted => "approved",
        Verdict::Denied => "denied",
    };
    let who = format!(
        "`{}` {said} by {}; {}",
        pending.tool,
        operator.name(),
        driver.describe(id)
    );
    let release = opened.release;
    let task_state = Arc::clone(state);
    let task_id = id.clone();
    let done = who.clone();
    tokio::spawn(async move {
        let _claim = claim;
        let result = engine.approve(&task_id, &response).await;
        release.await;
        note(&task_state, &task_id, &who, result.map(|run| run.status()));
    });
    Ok(done)
}

/// `approve` or `deny`, or a 400 that says so.
pub(crate) fn parse_verdict(text: &str) -> Result<Verdict, HttpError> {
    match text {
        "approve" => Ok(Verdict::Granted),
        "deny" => Ok(Verdict::Denied),
        other => Err(HttpError::bad_request(format!(
            "verdict `{}` is neither `approve` nor `deny`",
            one_line(other, 40)
        ))),
    }
}

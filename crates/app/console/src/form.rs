//! What every change's form goes through: [`guard`] (who may make it) and [`text_field`]
//! (a required, bounded text).

use axum::http::{HeaderMap, StatusCode};

use crate::auth::{Operator, csrf_ok, operator_of};
use crate::error::HttpError;

/// The longest reason or answer accepted.
const MAX_TEXT: usize = 2000;

/// Who may make a change: refused on a read-only console (403), without a valid token
/// (401), or without this operator's CSRF value in the form (403).
pub(crate) fn guard(
    state: &crate::State,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<Operator, HttpError> {
    let operator = may_change(state, headers)?;
    if !csrf_ok(&state.secret, &operator, csrf) {
        return Err(HttpError::forbidden(
            "the form's CSRF value is missing or is not yours: reload the page and send the form again",
        ));
    }
    Ok(operator)
}

/// Who may ask for a change (a page that confirms one before it is posted): refused on a
/// read-only console (403), and without a valid token (401).
pub(crate) fn may_change(state: &crate::State, headers: &HeaderMap) -> Result<Operator, HttpError> {
    if state.read_only {
        return Err(HttpError::forbidden(
            "this console is read-only: it refuses every change (started with --read-only)",
        ));
    }
    operator_of(state, headers).ok_or_else(|| {
        HttpError::new(
            StatusCode::UNAUTHORIZED,
            "a change needs an operator token: sign in at /login (or send Authorization: Bearer TOKEN)",
        )
    })
}

/// A required text field, trimmed and bounded.
pub(crate) fn text_field(name: &str, value: &str, what: &str) -> Result<String, HttpError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(HttpError::bad_request(format!(
            "`{name}` is empty: give {what}"
        )));
    }
    if value.chars().count() > MAX_TEXT {
        return Err(HttpError::bad_request(format!(
            "`{name}` is longer than {MAX_TEXT} characters"
        )));
    }
    Ok(value.to_owned())
}

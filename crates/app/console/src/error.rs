//! Errors: [`ConsoleError`] for setting a console up, and the HTTP error every handler
//! answers bad input with (a 4xx page saying what was wrong; never a panic).

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::html;

/// Why a console cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsoleError {
    /// The data directory cannot be read.
    #[error("cannot use data directory {path}: {reason}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An address that is not loopback, and no tokens file to say who may act.
    #[error(
        "refusing to serve on {addr}: it is not a loopback address, and without --tokens FILE anyone who can reach it could act on runs; give --tokens FILE (a file is created with a new token when there is none), or bind 127.0.0.1"
    )]
    NotLoopbackWithoutTokens {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The tokens file.
    #[error(transparent)]
    Tokens(#[from] crate::TokensError),
    /// The address cannot be bound or served.
    #[error("cannot serve on {addr}: {reason}")]
    Serve {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        reason: String,
    },
}

/// An HTTP error: the status and a message for the operator (shown escaped).
#[derive(Debug)]
pub(crate) struct HttpError {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
}

impl HttpError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// A store that failed: the server's fault, said plainly.
    pub(crate) fn store(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let title = self
            .status
            .canonical_reason()
            .unwrap_or("error")
            .to_lowercase();
        let body = format!(
            "<h1>{}</h1><p class=\"error\">{}</p><p><a href=\"/\">runs</a> · <a href=\"/inbox\">inbox</a></p>",
            html::esc(&title),
            html::esc(&self.message)
        );
        (self.status, html::page(&title, &body)).into_response()
    }
}

/// Any path no route knows.
pub(crate) async fn not_found() -> HttpError {
    HttpError::not_found("no such page")
}

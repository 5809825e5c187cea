//! The operators' web console of rein: the runs in a store, each run's path and its ledger
//! verified by the server, and an inbox of the approvals and questions runs wait for, with
//! the actions that answer them — as an axum [`Router`] to mount in your own server, or
//! served by `rein serve`.
//!
//! Reading goes through the store ports ([`Stores`]), so any store the engine runs on can be
//! shown. Acting goes through the engine's own API (`Engine::pending_approval`,
//! `Engine::approve`, `Engine::start_resume`), on an engine a [`RunDriver`] opens for the
//! run: the console adds no second way to approve or answer, and every verdict is ledgered
//! with the name of the operator whose token sent it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use rein_console::{Console, Stores, Tokens};
//!
//! let stores = Stores::filesystem(std::path::Path::new(".rein"))?;
//! let (tokens, new) = Tokens::generate("operator")?;
//! eprintln!("operator token: {}", new.token);
//! let app = Console::new(stores, tokens)?.read_only(true).router();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```

mod actions;
mod auth;
mod bulk;
mod driver;
mod error;
mod events;
mod form;
mod found;
mod html;
mod inbox;
mod kept;
mod list;
mod path;
mod run_page;
mod serve;
mod stop;
mod stores;
mod summary;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::{get, post};
use rein::RunId;

pub use crate::auth::{NewToken, Operator, Tokens, TokensError};
pub use crate::driver::{BoxFuture, OpenedRun, RunDriver};
pub use crate::error::ConsoleError;
pub use crate::serve::{ServeConfig, bind_check, serve};
pub use crate::stores::Stores;

/// A run id as the console shows it in lists: its first and last eight characters (two runs
/// started in the same millisecond share the first ones). Links carry the whole id.
#[must_use]
pub fn short_id(id: &RunId) -> String {
    let text = id.as_str();
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 20 {
        return text.to_owned();
    }
    let head: String = chars[..8].iter().collect();
    let tail: String = chars[chars.len() - 8..].iter().collect();
    format!("{head}…{tail}")
}

/// A console: where it reads runs, who may change anything, and how it drives a run on
/// after a decision. Build it, then take its [`Router`].
#[must_use]
#[derive(Clone)]
pub struct Console {
    state: Arc<State>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("tokens", &self.state.tokens)
            .field("read_only", &self.state.read_only)
            .field("drives", &self.state.driver.is_some())
            .finish_non_exhaustive()
    }
}

/// What every handler shares.
pub(crate) struct State {
    pub(crate) stores: Stores,
    pub(crate) tokens: Tokens,
    pub(crate) read_only: bool,
    pub(crate) driver: Option<Arc<dyn RunDriver>>,
    /// The engine operators' stop requests go through (`Engine::request_stop`), if given.
    pub(crate) stopper: Option<rein::Engine>,
    /// The per-server secret CSRF values are derived from.
    pub(crate) secret: [u8; 32],
    /// Runs this console is deciding on or driving now: a second decision on one of them
    /// is refused at once instead of waiting behind the first.
    pub(crate) busy: Mutex<HashSet<RunId>>,
    /// How many decisions or drives are in flight (see [`Console::settled`]).
    pub(crate) in_flight: tokio::sync::watch::Sender<usize>,
    /// What happened to each run this console drove last (shown on its page).
    pub(crate) notes: Mutex<std::collections::HashMap<RunId, String>>,
}

impl Console {
    /// A console on `stores` that accepts changes from the operators in `tokens`. Without a
    /// [`RunDriver`] it shows everything and refuses every change.
    ///
    /// # Errors
    /// [`TokensError::Random`] when the system's random source fails (the CSRF secret).
    pub fn new(stores: Stores, tokens: Tokens) -> Result<Self, TokensError> {
        Ok(Self {
            state: Arc::new(State {
                stores,
                tokens,
                read_only: false,
                driver: None,
                stopper: None,
                secret: auth::secret()?,
                busy: Mutex::new(HashSet::new()),
                in_flight: tokio::sync::watch::Sender::new(0),
                notes: Mutex::new(std::collections::HashMap::new()),
            }),
        })
    }

    /// Refuses every change on the server (not only by hiding the buttons).
    pub fn read_only(self, read_only: bool) -> Self {
        self.map(|s| s.read_only = read_only)
    }

    /// How decisions are carried out: the driver opens an engine for a run, the console
    /// gives the verdict or answer through it and drives the run on.
    pub fn driver(self, driver: impl RunDriver) -> Self {
        let driver: Arc<dyn RunDriver> = Arc::new(driver);
        self.map(|s| s.driver = Some(driver))
    }

    /// Operators' stop requests go through `engine` ([`Engine::request_stop`](rein::Engine::request_stop)):
    /// an engine on the same stores and stop request store as the engines that drive the
    /// runs, so that a run it drives is signalled at once and any other finds the request
    /// at its next step or resume. Without one, requests go to the stores' stop request
    /// store ([`Stores::with_stop_requests`]).
    pub fn stop_engine(self, engine: rein::Engine) -> Self {
        self.map(|s| s.stopper = Some(engine))
    }

    /// The routes, to serve or to nest in your own axum app.
    ///
    /// `GET /` runs, `GET /inbox`, `GET /runs/{id}`, `GET /runs/{id}/events` (server-sent
    /// events), `GET /runs/{id}/artifacts/{artifact}`, `GET|POST /login`,
    /// `POST /runs/{id}/approval`, `POST /inbox/bulk` (one verdict on several approvals),
    /// `GET /inbox/deny-all` (what "deny all" by the inbox's filter would deny, to confirm),
    /// `POST /runs/{id}/answer`, `POST /runs/{id}/stop`,
    /// `GET /static/console.js`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(list::runs))
            .route("/inbox", get(inbox::inbox))
            .route("/inbox/bulk", post(bulk::bulk))
            .route("/inbox/deny-all", get(bulk::deny_all))
            .route("/login", get(actions::login_form).post(actions::login))
            .route("/logout", post(actions::logout))
            .route("/runs/{id}", get(run_page::run))
            .route("/runs/{id}/events", get(events::events))
            .route("/runs/{id}/artifacts/{artifact}", get(run_page::artifact))
            .route("/runs/{id}/approval", post(actions::approval))
            .route("/runs/{id}/answer", post(actions::answer))
            .route("/runs/{id}/stop", post(stop::stop))
            .route("/static/console.js", get(html::script))
            .fallback(error::not_found)
            .layer(axum::middleware::map_response(html::protect))
            .with_state(Arc::clone(&self.state))
    }

    /// Waits until no decision or drive this console started is in flight: for a graceful
    /// shutdown, and for tests that look at a run after acting on it.
    pub async fn settled(&self) {
        let mut rx = self.state.in_flight.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    fn map(self, f: impl FnOnce(&mut State)) -> Self {
        let mut state = match Arc::try_unwrap(self.state) {
            Ok(state) => state,
            // Shared already (a router was taken): rebuild from the parts.
            Err(shared) => State {
                stores: shared.stores.clone(),
                tokens: shared.tokens.clone(),
                read_only: shared.read_only,
                driver: shared.driver.clone(),
                stopper: shared.stopper.clone(),
                secret: shared.secret,
                busy: Mutex::new(HashSet::new()),
                in_flight: tokio::sync::watch::Sender::new(0),
                notes: Mutex::new(std::collections::HashMap::new()),
            },
        };
        f(&mut state);
        Self {
            state: Arc::new(state),
        }
    }
}

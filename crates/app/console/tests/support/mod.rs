//! What the console's HTTP tests share: stores with runs in them (one waiting for a
//! verdict, one for an answer), a driver that hands out an engine on the same directory,
//! and requests through the router without a socket.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use rein::clock::ManualClock;
use rein::ledger::{Entry, EntryKind};
use rein::policy::ApprovalMode;
use rein::{
    Annotations, ApprovalPolicy, Decision, Engine, FnTool, Run, RunId, RunStatus, ScriptStep,
    ScriptedPlanner, State, Value, json,
};
use rein_console::{BoxFuture, Console, OpenedRun, RunDriver, Stores, Tokens};
use tower::ServiceExt as _;

/// The clock every first engine starts at (milliseconds since the epoch).
pub const T0: u64 = 1_700_000_000_000;
/// The approval timeout of the test policy: one hour.
pub const TIMEOUT_MS: u64 = 3_600_000;
/// Alice's and Bob's tokens.
pub const ALICE: &str = "alice-token";
pub const BOB: &str = "bob-token";

/// A destructive tool that echoes its input.
fn deploy() -> FnTool {
    FnTool::builder("deploy")
        .description("deploys")
        .annotations(Annotations::destructive())
        .handler(|input: Value| async move { Ok(json!({ "deployed": input })) })
        .build()
        .expect("a valid tool")
}

fn walk(to: State) -> Vec<ScriptStep> {
    let path = [
        State::Intake,
        State::Explore,
        State::Decide,
        State::Act,
        State::Validate,
    ];
    let end = path.iter().position(|&s| s == to).expect("a working state");
    path.windows(2)
        .take(end)
        .map(|w| ScriptStep::expect(w[0], Decision::transition(w[1], "walk")))
        .collect()
}

/// A script that calls `deploy` with `input` in act, then validates and finishes; and one
/// that asks a question (yes / no) and finishes.
pub fn planner(input: &Value) -> ScriptedPlanner {
    let mut steps = walk(State::Act);
    steps.extend([
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("deploy", input.clone(), "ship <it>"),
        ),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("shipped", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

pub fn asking() -> ScriptedPlanner {
    let mut steps = walk(State::Decide);
    steps.extend([
        ScriptStep::expect(
            State::Decide,
            Decision::ask_human("go <b>on</b>?", ["yes", "no"]),
        ),
        ScriptStep::expect(State::Decide, Decision::finish("answered", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

/// An engine on `dir` whose clock reads `now`, under a durable approval policy.
pub fn engine(dir: &Path, now: u64, planner: ScriptedPlanner) -> Engine {
    builder(now, planner)
        .filesystem(dir)
        .build()
        .expect("engine builds")
}

/// The test engine's builder, without its stores: the `deploy` tool, `planner`, a durable
/// approval policy, at most 5 tool calls, a clock that reads `now`.
pub fn builder(now: u64, planner: ScriptedPlanner) -> rein::EngineBuilder {
    Engine::builder()
        .tool(deploy())
        .planner(planner)
        .approvals(
            ApprovalPolicy::default()
                .with_mode(ApprovalMode::Durable)
                .with_timeout(Duration::from_millis(TIMEOUT_MS)),
        )
        .budget("tool_calls", 5)
        .clock(ManualClock::starting_at(now))
}

/// Starts a run that pauses for a verdict on `deploy` with `input`.
pub async fn waiting_for_verdict(dir: &Path, goal: &str, input: &Value) -> RunId {
    let run = engine(dir, T0, planner(input))
        .run(goal)
        .await
        .expect("run");
    assert_eq!(run.status(), RunStatus::Paused, "{:?}", run.failure());
    run.id().clone()
}

/// Starts a run that pauses for an answer.
pub async fn waiting_for_answer(dir: &Path, goal: &str) -> RunId {
    let run = engine(dir, T0, asking()).run(goal).await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused, "{:?}", run.failure());
    run.id().clone()
}

/// Hands out an engine on the test directory whose clock reads `now` ("another process").
#[derive(Debug)]
pub struct TestDriver {
    pub dir: std::path::PathBuf,
    pub now: u64,
    pub input: Value,
    pub asks: bool,
}

impl RunDriver for TestDriver {
    fn open<'a>(&'a self, _id: &'a RunId) -> BoxFuture<'a, Result<OpenedRun, String>> {
        let planner = if self.asks {
            asking()
        } else {
            planner(&self.input)
        };
        let engine = engine(&self.dir, self.now, planner);
        Box::pin(async move {
            Ok(OpenedRun {
                engine,
                release: Box::pin(async {}),
            })
        })
    }

    fn describe(&self, _id: &RunId) -> String {
        "the test drives it".to_owned()
    }
}

/// A console on `dir` with operators alice and bob, driving with `driver`.
pub fn console(dir: &Path, driver: Option<TestDriver>, read_only: bool) -> Console {
    let tokens = Tokens::none()
        .with("alice", ALICE)
        .and_then(|t| t.with("bob", BOB))
        .expect("valid operators");
    let console = Console::new(Stores::filesystem(dir).expect("stores"), tokens)
        .expect("console")
        .read_only(read_only);
    match driver {
        Some(driver) => console.driver(driver),
        None => console,
    }
}

/// A response's status and body text.
pub struct Reply {
    pub status: StatusCode,
    pub body: String,
    pub location: Option<String>,
    /// The value of the cookie the response sets, if it sets one.
    pub cookie: Option<String>,
}

/// `GET uri` with the sign-in cookie `session` (as `/login` set it).
pub async fn get_signed_in(app: &Router, uri: &str, session: &str) -> Reply {
    let request =
        Request::get(uri).header(header::COOKIE, format!("rein_console_session={session}"));
    send(app, request.body(Body::empty()).expect("a request")).await
}

/// `GET uri`, as operator `token` if given.
pub async fn get(app: &Router, uri: &str, token: Option<&str>) -> Reply {
    let mut request = Request::get(uri);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    send(app, request.body(Body::empty()).expect("a request")).await
}

/// `POST uri` with the form `fields`, as operator `token` if given.
pub async fn post(app: &Router, uri: &str, fields: &[(&str, &str)], token: Option<&str>) -> Reply {
    let body = fields
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let mut request =
        Request::post(uri).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    send(app, request.body(Body::from(body)).expect("a request")).await
}

async fn send(app: &Router, request: Request<Body>) -> Reply {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let cookie = response
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
        .await
        .expect("a body");
    Reply {
        status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        location,
        cookie,
    }
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The value of the first hidden field `name` in `html`.
pub fn field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no field {name} in {html}"))
        + marker.len();
    let end = html[start..].find('"').expect("a closing quote") + start;
    html[start..end].to_owned()
}

/// The entries of run `id`'s ledger on `dir`.
pub async fn entries(dir: &Path, id: &RunId) -> Vec<Entry> {
    engine(dir, T0, asking())
        .ledger(id)
        .await
        .expect("a verified ledger")
        .entries()
        .to_vec()
}

/// Run `id` on `dir`, as its ledger has it.
pub async fn load(dir: &Path, id: &RunId) -> Run {
    engine(dir, T0, asking()).load_run(id).await.expect("a run")
}

/// How many verdicts (granted or denied) the ledger holds, with who gave each.
pub fn verdicts(entries: &[Entry]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ApprovalGranted { approver, .. } => {
                Some(("granted".to_owned(), approver.clone()))
            }
            EntryKind::ApprovalDenied { approver, .. } => {
                Some(("denied".to_owned(), approver.clone()))
            }
            _ => None,
        })
        .collect()
}

//! `rein mcp serve SCENARIO`: the scenario's tools offered over MCP on stdio, each client
//! session one governed run.
//!
//! # How a client's calls become a run's decisions
//! The engine's planner is a bridge fed by the session: a `tools/call` is queued for the
//! session's run, and the planner turns it into decisions. If the tool is eligible in the
//! run's state, the decision is `CallTool`; otherwise the planner first proposes the
//! transitions (shortest path in the scenario's transition table) to the nearest state where
//! it is eligible, each checked by the engine like any transition (the budget guard into
//! `act` included). The call's outcome is read from the evidence the engine recorded: a
//! result is returned to the client; a tool failure or a rejection handed back (not
//! eligible, approval denied, budget exhausted) is returned as an MCP error result saying
//! why. Rejections and tool errors are handed back (not fatal) so one refused call does not
//! end the session; running out of steps does. When the client goes away, the planner
//! walks to `done` and finishes the run. Every decision, approval and call is in the run's
//! ledger (`rein ledger verify RUN_ID --data-dir DIR`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, PoisonError};

use rein::clock::{IdGenerator, UuidV7Ids};
use rein::mcp::{BoxFuture, Governor, Progress, Refusal, ServedPrompt, ServedResource, Session};
use rein::policy::{Eligibility, OnToolError, OnViolation, Transitions};
use rein::run::{EvidenceKind, NoteSource, Payload};
use rein::{
    Decision, Engine, PlanRequest, Planner, PlannerError, RunEvent, RunEvents, RunId, RunSpec,
    State, ToolSpec, Value, json,
};
use tokio::sync::{Mutex, mpsc, oneshot};

/// How many rejections a served run hands back before it fails (when the scenario sets no
/// hand-back limit of its own).
pub(crate) const SERVE_VIOLATIONS: u64 = 1000;

/// The engine's planner while serving: one queue of client calls per run.
#[derive(Debug, Default)]
pub(crate) struct Bridge {
    sessions: StdMutex<BTreeMap<RunId, Arc<Mutex<Slot>>>>,
    route: OnceLock<Route>,
}

/// What the bridge needs to walk a run to where a tool may run.
#[derive(Debug)]
struct Route {
    transitions: Transitions,
    eligibility: Eligibility,
    specs: Vec<ToolSpec>,
}

#[derive(Debug)]
struct Slot {
    calls: mpsc::Receiver<Call>,
    pending: Option<Pending>,
    /// The run's events: what an imported server told of a call while it ran (progress,
    /// log lines) is in them by the time the call's result is, and goes to its client.
    /// Set once the run has started, beside the lock the planner holds while it waits.
    events: Arc<StdMutex<Option<RunEvents>>>,
}

#[derive(Debug)]
struct Call {
    tool: String,
    input: Value,
    reply: oneshot::Sender<Result<Value, Refusal>>,
    /// Where the decisions taken for the call are reported to the client.
    progress: Progress,
}

#[derive(Debug)]
struct Pending {
    call: Call,
    /// The evidence count when the last decision for this call was proposed.
    seen: usize,
    /// Whether that decision was the `CallTool` itself.
    called: bool,
}

/// The planner the engine holds: a handle on the shared bridge.
#[derive(Debug, Clone)]
pub(crate) struct BridgePlanner(pub(crate) Arc<Bridge>);

impl Bridge {
    /// Sets the routing tables from the built engine (once).
    pub(crate) fn route(&self, engine: &Engine) -> Result<(), String> {
        let policy = engine.policy();
        let eligibility = Eligibility::new(policy.eligibility.clone(), engine.tools())
            .map_err(|e| e.to_string())?;
        let _ = self.route.set(Route {
            transitions: policy.transitions,
            eligibility,
            specs: engine.tools().to_vec(),
        });
        Ok(())
    }

    fn slot(&self, id: &RunId) -> Option<Arc<Mutex<Slot>>> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    fn forget(&self, id: &RunId) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

impl Route {
    /// The first state on a shortest path from `from` to a state where `done` holds.
    fn next_hop(&self, from: State, done: impl Fn(State) -> bool) -> Option<State> {
        let mut first: BTreeMap<State, State> = BTreeMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(state) = queue.pop_front() {
            for next in self.transitions.targets(state) {
                if next == from || first.contains_key(&next) || next.is_terminal() {
                    continue;
                }
                let hop = if state == from { next } else { first[&state] };
                if done(next) {
                    return Some(hop);
                }
                first.insert(next, hop);
                queue.push_back(next);
            }
        }
        None
    }
}

impl Planner for BridgePlanner {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let bridge = &self.0;
        let (Some(route), Some(slot)) = (bridge.route.get(), bridge.slot(request.run().id()))
        else {
            return Ok(Decision::fail("no MCP session drives this run"));
        };
        let mut slot = slot.lock().await;
        let state = request.state();
        let evidence = request.evidence();
        loop {
            if let Some(pending) = slot.pending.take() {
                let new = evidence.get(pending.seen..).unwrap_or_default();
                if pending.called {
                    if let Some(events) = slot
                        .events
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .as_mut()
                    {
                        pass_on_notices(events, &pending.call.progress);
                    }
                    let _ = pending.call.reply.send(outcome(new, &pending.call.tool));
                } else if let Some(note) = violation(new) {
                    let _ = pending.call.reply.send(Err(Refusal::new(format!(
                        "rein refused the way to `{}`: {note}",
                        pending.call.tool
                    ))));
                } else {
                    match next(route, state, &pending.call) {
                        Ok(decision) => {
                            let called = matches!(decision, Decision::CallTool { .. });
                            pending.call.progress.report(match &decision {
                                Decision::Transition { to, .. } => format!(
                                    "`{}` is not eligible in {state}: walking the run to {to}",
                                    pending.call.tool
                                ),
                                _ => format!("calling `{}` in {state}", pending.call.tool),
                            });
                            slot.pending = Some(Pending {
                                seen: evidence.len(),
                                called,
                                ..pending
                            });
                            return Ok(decision);
                        }
                        Err(refusal) => {
                            let _ = pending.call.reply.send(Err(refusal));
                        }
                    }
                }
                continue;
            }
            let Some(call) = slot.calls.recv().await else {
                // The client went away: finish the run (walking to a state that may).
                if route.transitions.allows(state, State::Done) {
                    return Ok(Decision::finish(
                        "the MCP client ended the session",
                        json!({"ended_by": "client"}),
                    ));
                }
                return Ok(
                    match route.next_hop(state, |s| route.transitions.allows(s, State::Done)) {
                        Some(hop) => Decision::transition(hop, "the MCP client ended the session"),
                        None => Decision::fail("the MCP client ended the session"),
                    },
                );
            };
            slot.pending = Some(Pending {
                call,
                seen: evidence.len(),
                called: false,
            });
        }
    }
}

/// Reports to `progress` each tool notice among the events `events` holds now (a notice is
/// published before its call's result is recorded, so a call's are all there when its
/// result is); other events are passed over. Never waits.
fn pass_on_notices(events: &mut RunEvents, progress: &Progress) {
    loop {
        let next = std::pin::pin!(events.next())
            .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
        match next {
            std::task::Poll::Ready(Some(event)) => {
                if let RunEvent::ToolNotice(_) = &event {
                    progress.report(event.to_string());
                }
            }
            std::task::Poll::Ready(None) | std::task::Poll::Pending => return,
        }
    }
}

/// The next decision for `call` in `state`: the call itself, or a step toward a state
/// where it is eligible.
fn next(route: &Route, state: State, call: &Call) -> Result<Decision, Refusal> {
    let Some(spec) = route.specs.iter().find(|s| s.name().as_str() == call.tool) else {
        return Err(Refusal::new(format!(
            "no tool `{}` in this scenario",
            call.tool
        )));
    };
    if route.eligibility.allows(state, spec) {
        return Ok(Decision::call_tool(
            call.tool.as_str(),
            call.input.clone(),
            "called by the MCP client",
        ));
    }
    match route.next_hop(state, |s| route.eligibility.allows(s, spec)) {
        Some(hop) => Ok(Decision::transition(
            hop,
            format!(
                "the MCP client called `{}`, which is not eligible in {state}",
                call.tool
            ),
        )),
        None => Err(Refusal::new(format!(
            "`{}` is not eligible in {state} nor in any state this run can reach from it",
            call.tool
        ))),
    }
}

/// The first violation handed back among `new` evidence.
fn violation(new: &[rein::run::Evidence]) -> Option<&str> {
    new.iter().find_map(|e| match &e.kind {
        EvidenceKind::SystemNote {
            source: NoteSource::Violation,
            note,
        } => Some(note.as_str()),
        _ => None,
    })
}

/// What the engine recorded for the call of `tool` among `new` evidence.
fn outcome(new: &[rein::run::Evidence], tool: &str) -> Result<Value, Refusal> {
    for e in new {
        match &e.kind {
            EvidenceKind::ToolResult { output, .. } => {
                return Ok(match output {
                    Payload::Inline(value) => value.clone(),
                    Payload::Artifact(link) => json!({ "artifact": link }),
                });
            }
            EvidenceKind::ToolFailure {
                tool: called,
                error,
                ..
            } => {
                return Err(Refusal::new(error.about(called)));
            }
            EvidenceKind::SystemNote {
                source: NoteSource::Violation,
                note,
            } => {
                return Err(Refusal::new(format!(
                    "rein refused the call to `{tool}`: {note}"
                )));
            }
            _ => {}
        }
    }
    Err(Refusal::new(format!(
        "rein recorded no outcome for the call to `{tool}`"
    )))
}

/// The governor `rein mcp serve` puts behind MCP: an engine run per client session.
#[derive(Debug)]
pub(crate) struct EngineGovernor {
    pub(crate) engine: Engine,
    pub(crate) bridge: Arc<Bridge>,
    pub(crate) goal: String,
    /// The scenario's skills, offered as prompts.
    pub(crate) skills: Vec<rein::run::Skill>,
}

/// The resource holding a session's ledger.
const LEDGER_URI: &str = "rein://run/ledger";

/// One client's run.
#[derive(Debug)]
struct RunSession {
    id: RunId,
    engine: Engine,
    calls: StdMutex<Option<mpsc::Sender<Call>>>,
    ended: Arc<OnceLock<String>>,
    done: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Governor for EngineGovernor {
    fn tools(&self) -> Vec<ToolSpec> {
        self.engine.tools().to_vec()
    }

    /// The scenario's skills, each a prompt holding its body.
    fn prompts(&self) -> Vec<ServedPrompt> {
        self.skills
            .iter()
            .map(|skill| ServedPrompt {
                name: skill.name().to_owned(),
                description: skill.description().to_owned(),
                text: skill.body().to_owned(),
            })
            .collect()
    }

    /// The ledger of the session's run, as recorded so far.
    fn resources(&self) -> Vec<ServedResource> {
        vec![ServedResource {
            uri: LEDGER_URI.to_owned(),
            name: "ledger".to_owned(),
            description: "this session's run: its ledger so far (every decision, approval and call, hash-chained), as JSON".to_owned(),
            mime_type: "application/json".to_owned(),
        }]
    }

    fn open(&self) -> BoxFuture<'_, Result<Box<dyn Session>, Refusal>> {
        Box::pin(async move {
            let id = UuidV7Ids.run_id();
            let (tx, rx) = mpsc::channel(1);
            let events: Arc<StdMutex<Option<RunEvents>>> = Arc::default();
            self.bridge
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(
                    id.clone(),
                    Arc::new(Mutex::new(Slot {
                        calls: rx,
                        pending: None,
                        events: Arc::clone(&events),
                    })),
                );
            let spec = RunSpec::new(self.goal.clone()).with_id(id.clone());
            let handle = match self.engine.start(spec).await {
                Ok(handle) => handle,
                Err(e) => {
                    self.bridge.forget(&id);
                    return Err(Refusal::new(format!("rein could not start a run: {e}")));
                }
            };
            eprintln!("rein mcp serve: session started run {id}");
            *events.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle.subscribe());
            let ended = Arc::new(OnceLock::new());
            let (bridge, ended_by, run_id) = (self.bridge.clone(), ended.clone(), id.clone());
            let done = tokio::spawn(async move {
                let message = match handle.wait().await {
                    Ok(run) => match run.failure() {
                        Some(f) => format!("run {run_id} ended {:?}: {}", run.status(), f.message),
                        None => format!("run {run_id} ended {:?}", run.status()),
                    },
                    Err(e) => format!("run {run_id} stopped: {e}"),
                };
                eprintln!("rein mcp serve: {message}");
                let _ = ended_by.set(message);
                // Dropping the slot drops any call still waiting: its caller reads `ended`.
                bridge.forget(&run_id);
            });
            let session: Box<dyn Session> = Box::new(RunSession {
                id,
                engine: self.engine.clone(),
                calls: StdMutex::new(Some(tx)),
                ended,
                done: Mutex::new(Some(done)),
            });
            Ok(session)
        })
    }
}

impl RunSession {
    fn ended(&self) -> Refusal {
        let why = self
            .ended
            .get()
            .cloned()
            .unwrap_or_else(|| format!("run {} ended", self.id));
        Refusal::new(format!(
            "this session's run is over ({why}); start a new MCP session for a new run"
        ))
    }
}

impl Session for RunSession {
    fn call(
        &self,
        tool: String,
        input: Value,
        progress: Progress,
    ) -> BoxFuture<'_, Result<Value, Refusal>> {
        Box::pin(async move {
            let sender = self
                .calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let Some(sender) = sender else {
                return Err(self.ended());
            };
            let (reply, answer) = oneshot::channel();
            let call = Call {
                tool,
                input,
                reply,
                progress,
            };
            if sender.send(call).await.is_err() {
                return Err(self.ended());
            }
            match answer.await {
                Ok(result) => result,
                Err(_) => {
                    // The run ended with the call queued: wait for its end to say why.
                    if let Some(done) = self.done.lock().await.take() {
                        let _ = done.await;
                    }
                    Err(self.ended())
                }
            }
        })
    }

    fn read(&self, uri: String) -> BoxFuture<'_, Result<String, Refusal>> {
        Box::pin(async move {
            if uri != LEDGER_URI {
                return Err(Refusal::new(format!("no resource {uri:?}")));
            }
            let ledger = self.engine.ledger(&self.id).await.map_err(|e| {
                Refusal::new(format!("the ledger of run {} cannot be read: {e}", self.id))
            })?;
            serde_json::to_string(&ledger)
                .map_err(|e| Refusal::new(format!("the ledger cannot be written as JSON: {e}")))
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(done) = self.done.lock().await.take() {
                let _ = done.await;
            }
        })
    }
}

/// The hand-back settings of a served engine: the scenario's own limit if it hands back,
/// else [`SERVE_VIOLATIONS`].
pub(crate) fn serve_violations(scenario_limit: Option<u64>) -> (OnViolation, OnToolError) {
    (
        OnViolation::HandBack {
            limit: scenario_limit.unwrap_or(SERVE_VIOLATIONS),
        },
        OnToolError::HandBack,
    )
}

//! `RunPath`: a run's path through the state machine as its ledger tells it — each stay in
//! a state, how the run got there, the tools it called there and what else happened there.
//! The one walk both `rein inspect` (Mermaid, DOT, JSON) and the console (SVG) draw from.

use rein_run::{Failure, State};

use crate::{Entry, EntryKind};

/// The stays of a run, oldest first; the first is always `intake`.
///
/// ```
/// use rein_ledger::{EntryKind, Ledger, RunPath, Via};
/// use rein_run::{State, Timestamp};
/// use serde_json::json;
///
/// let t = Timestamp::from_unix_millis(0);
/// let mut ledger = Ledger::new("run-1".parse()?);
/// ledger.append(t, State::Intake, EntryKind::RunStarted { goal: "Say hi".into(), vars: Default::default(), policy: json!({}).into() });
/// ledger.append(t, State::Intake, EntryKind::Transition { from: State::Intake, to: State::Done, reason: "said".into() });
///
/// let path = RunPath::of(ledger.entries());
/// let states: Vec<State> = path.stays.iter().map(|s| s.state).collect();
/// assert_eq!(states, [State::Intake, State::Done]);
/// assert_eq!(path.stays[1].via, Via::Transition("said"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunPath<'a> {
    /// Every stay, in the order the run made them.
    pub stays: Vec<Stay<'a>>,
}

/// One stay in a state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Stay<'a> {
    /// The state.
    pub state: State,
    /// How the run came here.
    pub via: Via<'a>,
    /// The tool calls made here, each however many attempts it took.
    pub tools: Vec<ToolUse>,
    /// The other events worth showing that happened here: policy violations, questions
    /// asked and answered, attachments, children ended.
    pub notes: Vec<&'a EntryKind>,
}

/// How a run came into a state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Via<'a> {
    /// It started there.
    Start,
    /// A transition, with its reason.
    Transition(&'a str),
    /// It failed (a failure ends a run in `failed` with or without a transition).
    Failure(&'a Failure),
}

impl Via<'_> {
    /// The words for it: the transition's reason, the failure's message, or nothing.
    #[must_use]
    pub fn text(&self) -> &str {
        match self {
            Self::Start => "",
            Self::Transition(reason) => reason,
            Self::Failure(failure) => &failure.message,
        }
    }
}

/// One tool call, however many attempts it took.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolUse {
    /// The tool's name.
    pub tool: String,
    /// The attempts made (0 for a call denied, or one whose start is not in the ledger).
    pub attempts: u32,
    /// How it ended.
    pub outcome: CallOutcome,
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// No result yet (running, or the process died meanwhile).
    Running,
    /// It returned a result.
    Ok,
    /// Its result came from the cache.
    Cached,
    /// It failed for good; the error's kind (`timeout`, `execution`, …).
    Failed(&'static str),
    /// Its approval was denied.
    Denied,
}

impl ToolUse {
    /// Whether it gave a result.
    #[must_use]
    pub const fn ok(&self) -> bool {
        matches!(self.outcome, CallOutcome::Ok | CallOutcome::Cached)
    }
}

impl CallOutcome {
    /// The outcome in one word.
    #[must_use]
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ok => "ok",
            Self::Cached => "cached",
            Self::Failed(kind) => kind,
            Self::Denied => "denied",
        }
    }
}

impl<'a> RunPath<'a> {
    /// Reads `entries`, oldest first.
    #[must_use]
    pub fn of(entries: &'a [Entry]) -> Self {
        let mut stays = vec![Stay::new(State::Intake, Via::Start)];
        for entry in entries {
            let Some(stay) = stays.last_mut() else {
                break;
            };
            let kind = entry.event();
            match kind {
                EntryKind::Transition { to, reason, .. } => {
                    stays.push(Stay::new(*to, Via::Transition(reason)));
                }
                EntryKind::RunFailed { failure } if stay.state != State::Failed => {
                    stays.push(Stay::new(State::Failed, Via::Failure(failure)));
                }
                EntryKind::ToolCall { tool, attempt, .. } => match stay.tools.last_mut() {
                    Some(last) if *attempt > 1 && last.tool == tool.as_str() => last.attempts += 1,
                    _ => stay.tools.push(ToolUse {
                        tool: tool.to_string(),
                        attempts: 1,
                        outcome: CallOutcome::Running,
                    }),
                },
                EntryKind::ToolResult { tool, cached, .. } => {
                    let outcome = if *cached {
                        CallOutcome::Cached
                    } else {
                        CallOutcome::Ok
                    };
                    match stay.tools.last_mut() {
                        Some(last)
                            if last.tool == tool.as_str()
                                && last.outcome == CallOutcome::Running =>
                        {
                            last.outcome = outcome;
                        }
                        _ => stay.tools.push(ToolUse {
                            tool: tool.to_string(),
                            attempts: 0,
                            outcome,
                        }),
                    }
                }
                EntryKind::ToolError {
                    tool,
                    error,
                    will_retry: false,
                    ..
                } => {
                    if let Some(last) = stay.tools.last_mut().filter(|l| l.tool == tool.as_str()) {
                        last.outcome = CallOutcome::Failed(error.kind());
                    }
                }
                EntryKind::ApprovalDenied { tool, .. } => stay.tools.push(ToolUse {
                    tool: tool.to_string(),
                    attempts: 0,
                    outcome: CallOutcome::Denied,
                }),
                EntryKind::PolicyViolation { .. }
                | EntryKind::HumanInputRequested { .. }
                | EntryKind::HumanInputReceived { .. }
                | EntryKind::ToolAttachment { .. }
                | EntryKind::ChildEnded { .. } => stay.notes.push(kind),
                _ => {}
            }
        }
        Self { stays }
    }
}

impl<'a> Stay<'a> {
    const fn new(state: State, via: Via<'a>) -> Self {
        Self {
            state,
            via,
            tools: Vec::new(),
            notes: Vec::new(),
        }
    }
}

//! Fakes shared by every area: a scriptable tool with probes, and a recording observer.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_resilience::{
    Admission, AttemptObserver, AttemptReport, BreakerConfig, Bulkhead, ExecutionStack, Jitter,
    ResilienceConfig, RetryConfig, ToolCall, ToolStack,
};
use rein_tool::{Annotations, SharedTool, Tool, ToolError, ToolName, ToolOutput, ToolSpec};
use serde_json::{Value, json};
use tokio::time::Instant;

/// What a fake tool does on each call.
#[derive(Debug, Clone)]
pub(crate) enum Script {
    /// Returns its input.
    Succeed,
    /// Fails the first `times` calls with `error`, then returns its input.
    FailTimes { times: u32, error: ToolError },
    /// Hangs forever on the first `times` calls, then returns its input.
    HangTimes { times: u32 },
    /// Takes `for_` (on tokio's clock), then returns its input.
    Sleep(Duration),
    /// Panics with this message.
    Panic(&'static str),
}

/// What the stack did to a fake tool.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    calls: AtomicU32,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    dropped_unfinished: AtomicU32,
    started_at: Mutex<Vec<Instant>>,
}

/// A tool following a [`Script`], watched by a [`Probe`].
pub(crate) struct FakeTool {
    spec: ToolSpec,
    script: Script,
    probe: Arc<Probe>,
}

/// One observer event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    Started(u32),
    Finished {
        attempt: u32,
        outcome: Result<Value, ToolError>,
        elapsed: Duration,
    },
}

/// Records every attempt; vetoes attempts from `veto_from` on.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    veto_from: Option<u32>,
    events: Mutex<Vec<Event>>,
    vetoed: Mutex<Vec<u32>>,
}

/// The veto error `Recorder` returns: transient on purpose, since a veto must end the call
/// whatever its error says.
pub(crate) fn budget_exhausted() -> ToolError {
    ToolError::transient("tool_calls budget exhausted")
}

pub(crate) fn name(name: &str) -> ToolName {
    ToolName::new(name).unwrap()
}

pub(crate) fn transient() -> ToolError {
    ToolError::transient("connection reset")
}

/// A fake tool named `tool_name` with `annotations`, following `script`, and its probe.
pub(crate) fn fake(
    tool_name: &str,
    annotations: Annotations,
    script: Script,
) -> (SharedTool, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let spec = ToolSpec::new(name(tool_name), "a fake").with_annotations(annotations);
    (
        Arc::new(FakeTool {
            spec,
            script,
            probe: Arc::clone(&probe),
        }),
        probe,
    )
}

/// The tool `flaky` with `annotations`: every attempt fails with a [`transient`] error.
pub(crate) fn always_failing(annotations: Annotations) -> (SharedTool, Arc<Probe>) {
    fake(
        "flaky",
        annotations,
        Script::FailTimes {
            times: u32::MAX,
            error: transient(),
        },
    )
}

impl Tool for FakeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let n = self.probe.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.probe.started_at.lock().unwrap().push(Instant::now());
        let mut running = Running::start(&self.probe);
        let outcome = match &self.script {
            Script::Succeed => Ok(input.into()),
            Script::FailTimes { times, error } if n <= *times => Err(error.clone()),
            Script::FailTimes { .. } => Ok(input.into()),
            Script::HangTimes { times } if n <= *times => std::future::pending().await,
            Script::HangTimes { .. } => Ok(input.into()),
            Script::Sleep(duration) => {
                tokio::time::sleep(*duration).await;
                Ok(input.into())
            }
            Script::Panic(message) => panic!("{message}"),
        };
        running.finished = true;
        outcome
    }
}

/// Counts a call as in flight until dropped; a drop before `finished` is a cancellation.
struct Running<'a> {
    probe: &'a Probe,
    finished: bool,
}

impl<'a> Running<'a> {
    fn start(probe: &'a Probe) -> Self {
        let now = probe.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        probe.max_in_flight.fetch_max(now, Ordering::SeqCst);
        Self {
            probe,
            finished: false,
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.probe.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !self.finished {
            self.probe.dropped_unfinished.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Probe {
    pub(crate) fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }
    pub(crate) fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }
    pub(crate) fn dropped_unfinished(&self) -> u32 {
        self.dropped_unfinished.load(Ordering::SeqCst)
    }
    /// How long the stack waited between consecutive calls (tokio's clock).
    pub(crate) fn gaps(&self) -> Vec<Duration> {
        let started = self.started_at.lock().unwrap();
        started.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

impl Recorder {
    pub(crate) fn vetoing_from(attempt: u32) -> Self {
        Self {
            veto_from: Some(attempt),
            ..Self::default()
        }
    }
    /// The attempts vetoed, in order.
    pub(crate) fn vetoed(&self) -> Vec<u32> {
        self.vetoed.lock().unwrap().clone()
    }
    pub(crate) fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }
    /// `(attempt, ok)` for every finished attempt.
    pub(crate) fn finished(&self) -> Vec<(u32, Result<(), ToolError>)> {
        self.events()
            .into_iter()
            .filter_map(|event| match event {
                Event::Finished {
                    attempt, outcome, ..
                } => Some((attempt, outcome.map(drop))),
                Event::Started(_) => None,
            })
            .collect()
    }
}

impl AttemptObserver for Recorder {
    fn before_attempt(&self, _tool: &ToolName, attempt: u32) -> Admission {
        if self.veto_from.is_some_and(|from| attempt >= from) {
            self.vetoed.lock().unwrap().push(attempt);
            return Admission::deny(budget_exhausted());
        }
        self.events.lock().unwrap().push(Event::Started(attempt));
        Admission::allow()
    }

    fn after_attempt(&self, report: &AttemptReport<'_>) {
        self.events.lock().unwrap().push(Event::Finished {
            attempt: report.attempt,
            outcome: report.outcome.clone().map(ToolOutput::into_value),
            elapsed: report.elapsed,
        });
    }
}

/// A config for tests: deterministic backoff (100 ms doubling, no jitter), 5 attempts,
/// 10 s timeout, a breaker that opens after 10 failures for 30 s, no bulkhead.
pub(crate) fn config() -> ResilienceConfig {
    ResilienceConfig {
        default_timeout: Duration::from_secs(10),
        bulkhead: Bulkhead::Unlimited,
        retry: RetryConfig {
            max_attempts: 5.try_into().unwrap(),
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            jitter: Jitter::None,
        },
        breaker: BreakerConfig {
            consecutive_failures: 10.try_into().unwrap(),
            open_for: Duration::from_secs(30),
        },
        overrides: Default::default(),
    }
}

/// A stack for `tool` under `config`.
pub(crate) fn stack(tool: SharedTool, config: ResilienceConfig) -> ToolStack {
    ExecutionStack::new(config).build(tool)
}

/// A call with a fresh recorder attached.
pub(crate) fn observed_call(recorder: &Arc<Recorder>) -> ToolCall {
    ToolCall::new(json!({"q": 1})).with_observer(Arc::clone(recorder) as Arc<dyn AttemptObserver>)
}

/// Calls `stack` without an observer.
pub(crate) async fn call(stack: &ToolStack) -> Result<Value, ToolError> {
    stack
        .call(ToolCall::new(json!({"q": 1})))
        .await
        .map(ToolOutput::into_value)
}

//! The attempt observer: an admission (now, never, or once a future says so) before each
//! attempt, a report after each.

use std::sync::Arc;
use std::time::Duration;

use rein_resilience::{Admission, AttemptObserver, AttemptReport, ToolCall};
use rein_tool::{Annotations, ToolError};
use tokio::sync::{mpsc, oneshot};

use crate::support::{
    Event, Recorder, Script, always_failing, budget_exhausted, config, fake, observed_call, stack,
    transient,
};

#[tokio::test(start_paused = true)]
async fn a_veto_stops_the_retries() {
    let (tool, probe) = always_failing(Annotations::read_only());
    // The budget allows two attempts; the test config would allow five.
    let recorder = Arc::new(Recorder::vetoing_from(3));
    let result = stack(tool, config()).call(observed_call(&recorder)).await;
    assert_eq!(result, Err(budget_exhausted()));
    assert_eq!(probe.calls(), 2);
    assert_eq!(recorder.vetoed(), [3], "nothing is tried after a veto");
    assert_eq!(
        recorder.finished(),
        [(1, Err(transient())), (2, Err(transient()))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_vetoed_first_attempt_never_reaches_the_tool() {
    let (tool, probe) = fake("echo", Annotations::read_only(), Script::Succeed);
    let recorder = Arc::new(Recorder::vetoing_from(1));
    let stack = stack(tool, config());
    for _ in 0..20 {
        assert_eq!(
            stack.call(observed_call(&recorder)).await,
            Err(budget_exhausted())
        );
    }
    assert_eq!(probe.calls(), 0);
    assert_eq!(recorder.vetoed(), [1; 20]);
    assert!(recorder.events().is_empty());
    // Vetoes are no failures: the breaker (10 failures in the test config) stayed closed.
    assert_eq!(stack.circuit_state(), rein_resilience::CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_report_carries_the_outcome_and_the_time_the_attempt_took() {
    let (tool, _) = fake(
        "slow",
        Annotations::side_effecting(),
        Script::Sleep(Duration::from_secs(3)),
    );
    let recorder = Arc::new(Recorder::default());
    let output = stack(tool, config())
        .call(observed_call(&recorder))
        .await
        .unwrap();
    match recorder.events().as_slice() {
        [
            Event::Started(1),
            Event::Finished {
                attempt: 1,
                outcome: Ok(value),
                elapsed,
            },
        ] => {
            assert_eq!(value, output.value());
            assert!(*elapsed >= Duration::from_secs(3), "{elapsed:?}");
        }
        events => panic!("unexpected events {events:?}"),
    }
}

/// Keeps the `elapsed` of every report, and times nothing itself.
#[derive(Default)]
struct Untimed(std::sync::Mutex<Vec<Duration>>);

impl AttemptObserver for Untimed {
    fn after_attempt(&self, report: &AttemptReport<'_>) {
        self.0.lock().unwrap().push(report.elapsed);
    }

    fn times_attempts(&self) -> bool {
        false
    }
}

#[tokio::test(start_paused = true)]
async fn an_observer_that_does_not_time_attempts_gets_zero_elapsed() {
    let (tool, _) = fake(
        "slow",
        Annotations::side_effecting(),
        Script::Sleep(Duration::from_secs(3)),
    );
    let untimed = Arc::new(Untimed::default());
    let call = ToolCall::new(serde_json::json!(1)).with_observer(untimed.clone());
    stack(tool, config()).call(call).await.unwrap();
    assert_eq!(*untimed.0.lock().unwrap(), [Duration::ZERO]);
}

#[tokio::test(start_paused = true)]
async fn stack_made_errors_are_reported_as_the_attempt_outcome() {
    let annotations = Annotations::side_effecting().with_timeout(Duration::from_secs(1));
    let (tool, _) = fake("hang", annotations, Script::HangTimes { times: 1 });
    let recorder = Arc::new(Recorder::default());
    let _ = stack(tool, config()).call(observed_call(&recorder)).await;
    assert_eq!(
        recorder.finished(),
        [(
            1,
            Err(ToolError::TimedOut {
                after: Duration::from_secs(1)
            })
        )]
    );
}

/// A request for an admission: the attempt, and where its answer goes.
type Ask = (u32, oneshot::Sender<Result<(), ToolError>>);

/// What a [`Gate`] was asked, or told, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Ended(u32, bool),
    Asked(u32),
}

/// Admits attempt 1 at once and makes every later attempt wait for the test's answer, sent
/// through `answers`; keeps what it saw, in order.
struct Gate {
    asks: mpsc::UnboundedSender<Ask>,
    seen: std::sync::Mutex<Vec<Seen>>,
}

impl Gate {
    fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Ask>) {
        let (asks, rx) = mpsc::unbounded_channel();
        let gate = Self {
            asks,
            seen: std::sync::Mutex::default(),
        };
        (Arc::new(gate), rx)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl AttemptObserver for Gate {
    fn before_attempt(&self, _tool: &rein_tool::ToolName, attempt: u32) -> Admission {
        self.seen.lock().unwrap().push(Seen::Asked(attempt));
        if attempt == 1 {
            return Admission::allow();
        }
        let (reply, answer) = oneshot::channel();
        if self.asks.send((attempt, reply)).is_err() {
            return Admission::deny(ToolError::Cancelled);
        }
        Admission::wait(async move { answer.await.unwrap_or(Err(ToolError::Cancelled)) })
    }

    fn after_attempt(&self, report: &AttemptReport<'_>) {
        self.seen
            .lock()
            .unwrap()
            .push(Seen::Ended(report.attempt, report.outcome.is_ok()));
    }
}

fn gated_call(gate: &Arc<Gate>) -> ToolCall {
    ToolCall::new(serde_json::json!({"q": 1}))
        .with_observer(Arc::clone(gate) as Arc<dyn AttemptObserver>)
}

#[tokio::test(start_paused = true)]
async fn a_waiting_admission_holds_the_attempt_until_it_is_answered() {
    let (tool, probe) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 2,
            error: transient(),
        },
    );
    let (gate, mut asks) = Gate::new();
    let call = tokio::spawn(stack(tool, config()).call(gated_call(&gate)));
    for attempt in 2..=3 {
        let (asked, reply) = asks.recv().await.expect("the stack asks");
        assert_eq!(asked, attempt);
        // Asked, not answered: the attempt has not reached the tool, however long we wait.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(probe.calls(), attempt - 1);
        // The attempt before it was reported before this one was asked for.
        assert_eq!(
            gate.seen().last(),
            Some(&Seen::Asked(attempt)),
            "{:?}",
            gate.seen()
        );
        reply.send(Ok(())).unwrap();
    }
    let output = call.await.unwrap().unwrap();
    assert_eq!(output.value()["q"], 1);
    assert_eq!(probe.calls(), 3);
    assert_eq!(
        gate.seen(),
        [
            Seen::Asked(1),
            Seen::Ended(1, false),
            Seen::Asked(2),
            Seen::Ended(2, false),
            Seen::Asked(3),
            Seen::Ended(3, true),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiting_admission_answered_with_an_error_vetoes_the_attempt() {
    let (tool, probe) = always_failing(Annotations::read_only());
    let (gate, mut asks) = Gate::new();
    let stack = stack(tool, config());
    let call = tokio::spawn(stack.call(gated_call(&gate)));
    let (_, reply) = asks.recv().await.expect("the stack asks for attempt 2");
    reply.send(Err(budget_exhausted())).unwrap();
    assert_eq!(call.await.unwrap(), Err(budget_exhausted()));
    assert_eq!(
        probe.calls(),
        1,
        "the vetoed attempt never reached the tool"
    );
    assert_eq!(
        gate.seen(),
        [Seen::Asked(1), Seen::Ended(1, false), Seen::Asked(2)]
    );
    assert!(asks.try_recv().is_err(), "nothing is asked after a veto");
    // A veto is no failure of the tool: one failure in, the breaker stays closed.
    assert_eq!(stack.circuit_state(), rein_resilience::CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_an_admission_waits_starts_nothing_and_reports_nothing() {
    let (tool, probe) = always_failing(Annotations::read_only());
    let (gate, mut asks) = Gate::new();
    let call = tokio::spawn(stack(tool, config()).call(gated_call(&gate)));
    let (_, reply) = asks.recv().await.expect("the stack asks for attempt 2");
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert!(
        reply.is_closed(),
        "the waiting admission was dropped with the call"
    );
    assert_eq!(probe.calls(), 1);
    assert_eq!(probe.dropped_unfinished(), 0);
    assert_eq!(
        gate.seen(),
        [Seen::Asked(1), Seen::Ended(1, false), Seen::Asked(2)]
    );
}

#[tokio::test(start_paused = true)]
async fn the_wait_for_an_admission_is_not_part_of_the_attempts_timeout() {
    let annotations = Annotations::read_only().with_timeout(Duration::from_secs(1));
    let (tool, probe) = fake(
        "flaky",
        annotations,
        Script::FailTimes {
            times: 1,
            error: transient(),
        },
    );
    let (gate, mut asks) = Gate::new();
    let call = tokio::spawn(stack(tool, config()).call(gated_call(&gate)));
    let (_, reply) = asks.recv().await.expect("the stack asks for attempt 2");
    tokio::time::sleep(Duration::from_secs(5)).await;
    reply.send(Ok(())).unwrap();
    assert!(
        call.await.unwrap().is_ok(),
        "five seconds of waiting, no timeout"
    );
    assert_eq!(probe.calls(), 2);
}

#[test]
fn an_admission_converts_from_a_result() {
    let allowed: Admission = Ok(()).into();
    assert_eq!(format!("{allowed:?}"), "Admission::Allow");
    let denied: Admission = Err(budget_exhausted()).into();
    assert!(format!("{denied:?}").starts_with("Admission::Deny"));
    let waiting = Admission::wait(async { Ok(()) });
    assert_eq!(format!("{waiting:?}"), "Admission::Wait(..)");
}

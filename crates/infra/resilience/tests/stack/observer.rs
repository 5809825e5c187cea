//! The attempt observer: a veto before each attempt, a report after each.

use std::sync::Arc;
use std::time::Duration;

use rein_tool::{Annotations, ToolError};

use crate::support::{
    Event, Recorder, Script, budget_exhausted, config, fake, observed_call, stack, transient,
};

#[tokio::test(start_paused = true)]
async fn a_veto_stops_the_retries() {
    let (tool, probe) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: u32::MAX,
            error: transient(),
        },
    );
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

//! Circuit breaker: per tool, fails fast when open, counts hangs, half-opens on tokio's clock.

use std::sync::Arc;
use std::time::Duration;

use rein_resilience::{BreakerConfig, CircuitState, ResilienceConfig, ToolStack};
use rein_tool::{Annotations, ToolError};

use crate::support::{
    Probe, Recorder, Script, always_failing, call, config, fake, name, observed_call, stack,
    transient,
};

const OPEN_FOR: Duration = Duration::from_secs(30);

/// The test config with a breaker that opens after `failures` failed attempts.
fn opening_after(failures: u32) -> ResilienceConfig {
    ResilienceConfig {
        breaker: BreakerConfig {
            consecutive_failures: failures.try_into().unwrap(),
            open_for: OPEN_FOR,
        },
        ..config()
    }
}

/// A side-effecting (never retried) fake following `script`, behind a breaker opening
/// after 2 failures.
fn tool(tool_name: &str, script: Script) -> (ToolStack, Arc<Probe>) {
    let (tool, probe) = fake(tool_name, Annotations::side_effecting(), script);
    (stack(tool, opening_after(2)), probe)
}

fn circuit_open(tool_name: &str, retry_after: Duration) -> Result<serde_json::Value, ToolError> {
    Err(ToolError::CircuitOpen {
        tool: name(tool_name),
        retry_after,
    })
}

#[tokio::test(start_paused = true)]
async fn consecutive_failures_open_the_breaker_and_it_fails_fast_without_the_tool() {
    let (flaky, probe) = tool(
        "flaky",
        Script::FailTimes {
            times: u32::MAX,
            error: transient(),
        },
    );
    assert_eq!(call(&flaky).await, Err(transient()));
    assert_eq!(flaky.circuit_state(), CircuitState::Closed);
    assert_eq!(call(&flaky).await, Err(transient()));
    assert_eq!(
        flaky.circuit_state(),
        CircuitState::Open {
            retry_after: OPEN_FOR
        }
    );

    tokio::time::advance(Duration::from_secs(10)).await;
    let recorder = Arc::new(Recorder::default());
    let rejected = flaky
        .call(observed_call(&recorder))
        .await
        .map(rein_tool::ToolOutput::into_value);
    assert_eq!(rejected, circuit_open("flaky", Duration::from_secs(20)));
    assert_eq!(probe.calls(), 2, "a rejected call never reaches the tool");
    assert!(
        recorder.events().is_empty(),
        "a rejected call is no attempt"
    );
}

#[tokio::test(start_paused = true)]
async fn timeouts_of_a_hanging_tool_open_the_breaker() {
    let (hang, probe) = tool("hang", Script::HangTimes { times: u32::MAX });
    for _ in 0..2 {
        assert!(matches!(call(&hang).await, Err(ToolError::TimedOut { .. })));
    }
    assert_eq!(call(&hang).await, circuit_open("hang", OPEN_FOR));
    assert_eq!(probe.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_running_counts_as_a_failure() {
    let (hang, probe) = tool("hang", Script::HangTimes { times: u32::MAX });
    for _ in 0..2 {
        // An outer deadline, shorter than the stack's, drops the running call.
        let outer = tokio::time::timeout(Duration::from_secs(1), call(&hang)).await;
        assert!(outer.is_err(), "the outer deadline fired first");
    }
    assert_eq!(probe.dropped_unfinished(), 2);
    assert!(matches!(hang.circuit_state(), CircuitState::Open { .. }));
}

#[tokio::test(start_paused = true)]
async fn breakers_are_per_tool() {
    let (a, _) = tool(
        "a",
        Script::FailTimes {
            times: u32::MAX,
            error: transient(),
        },
    );
    let (b, b_probe) = tool("b", Script::Succeed);
    for _ in 0..2 {
        call(&a).await.unwrap_err();
    }
    assert_eq!(call(&a).await, circuit_open("a", OPEN_FOR));
    for _ in 0..3 {
        assert!(call(&b).await.is_ok());
    }
    assert_eq!(b_probe.calls(), 3);
    assert_eq!(b.circuit_state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn clones_of_a_stack_share_its_breaker() {
    let (a, _) = tool(
        "a",
        Script::FailTimes {
            times: u32::MAX,
            error: transient(),
        },
    );
    let clone = a.clone();
    call(&a).await.unwrap_err();
    call(&clone).await.unwrap_err();
    assert!(matches!(a.circuit_state(), CircuitState::Open { .. }));
}

#[tokio::test(start_paused = true)]
async fn after_open_for_a_trial_call_goes_through_and_success_closes_the_breaker() {
    let (flaky, probe) = tool(
        "flaky",
        Script::FailTimes {
            times: 2,
            error: transient(),
        },
    );
    for _ in 0..2 {
        call(&flaky).await.unwrap_err();
    }
    tokio::time::advance(OPEN_FOR).await;
    assert_eq!(
        flaky.circuit_state(),
        CircuitState::Open {
            retry_after: Duration::ZERO
        }
    );
    assert!(call(&flaky).await.is_ok());
    assert_eq!(probe.calls(), 3);
    assert_eq!(flaky.circuit_state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_failed_trial_opens_the_breaker_again() {
    let (flaky, probe) = tool(
        "flaky",
        Script::FailTimes {
            times: u32::MAX,
            error: transient(),
        },
    );
    for _ in 0..2 {
        call(&flaky).await.unwrap_err();
    }
    tokio::time::advance(OPEN_FOR).await;
    assert_eq!(
        call(&flaky).await,
        Err(transient()),
        "the trial reached the tool"
    );
    assert_eq!(
        flaky.circuit_state(),
        CircuitState::Open {
            retry_after: OPEN_FOR
        }
    );
    assert_eq!(call(&flaky).await, circuit_open("flaky", OPEN_FOR));
    assert_eq!(probe.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn permanent_errors_do_not_open_the_breaker() {
    let (strict, probe) = tool(
        "strict",
        Script::FailTimes {
            times: u32::MAX,
            error: ToolError::invalid_input("no"),
        },
    );
    for _ in 0..5 {
        assert_eq!(call(&strict).await, Err(ToolError::invalid_input("no")));
    }
    assert_eq!(probe.calls(), 5);
    assert_eq!(strict.circuit_state(), CircuitState::Closed);
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_cuts_retries_short() {
    let (tool, probe) = always_failing(Annotations::read_only());
    let stack = stack(tool, opening_after(2)); // the test config allows 5 attempts
    let recorder = Arc::new(Recorder::default());
    match stack.call(observed_call(&recorder)).await {
        // The third attempt was due 200 ms after the breaker opened.
        Err(ToolError::CircuitOpen { tool, retry_after }) => {
            assert_eq!(tool, name("flaky"));
            assert!(retry_after < OPEN_FOR, "{retry_after:?}");
        }
        other => panic!("expected CircuitOpen, got {other:?}"),
    }
    assert_eq!(probe.calls(), 2);
    assert_eq!(
        recorder.finished(),
        [(1, Err(transient())), (2, Err(transient()))]
    );
}

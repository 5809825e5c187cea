//! Retry: idempotent tools only, transient errors only, bounded, with backoff.

use std::sync::Arc;
use std::time::Duration;

use rein_resilience::{ResilienceConfig, RetryConfig, ToolOverrides};
use rein_tool::{Annotations, ToolError};

use crate::support::{
    Event, Recorder, Script, config, fake, name, observed_call, stack, transient,
};

/// Runs one observed call of a fake following `script`; returns the result, the tool's call
/// count and the finished attempts the observer saw.
async fn check(
    annotations: Annotations,
    script: Script,
    config: ResilienceConfig,
) -> (
    Result<(), ToolError>,
    u32,
    Vec<(u32, Result<(), ToolError>)>,
) {
    let (tool, probe) = fake("flaky", annotations, script);
    let stack = stack(tool, config);
    let recorder = Arc::new(Recorder::default());
    let result = stack.call(observed_call(&recorder)).await.map(drop);
    (result, probe.calls(), recorder.finished())
}

#[tokio::test(start_paused = true)]
async fn an_idempotent_tool_is_retried_to_success_and_every_attempt_is_reported() {
    let script = Script::FailTimes {
        times: 2,
        error: transient(),
    };
    let (result, calls, finished) = check(Annotations::read_only(), script, config()).await;
    assert_eq!(result, Ok(()));
    assert_eq!(calls, 3);
    assert_eq!(
        finished,
        [(1, Err(transient())), (2, Err(transient())), (3, Ok(()))]
    );
}

#[tokio::test(start_paused = true)]
async fn each_attempt_is_started_then_finished_in_order() {
    let (tool, _) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 1,
            error: transient(),
        },
    );
    let recorder = Arc::new(Recorder::default());
    stack(tool, config())
        .call(observed_call(&recorder))
        .await
        .unwrap();
    let kinds: Vec<String> = recorder
        .events()
        .iter()
        .map(|event| match event {
            Event::Started(n) => format!("start {n}"),
            Event::Finished {
                attempt, outcome, ..
            } => format!("end {attempt} ok={}", outcome.is_ok()),
        })
        .collect();
    assert_eq!(
        kinds,
        ["start 1", "end 1 ok=false", "start 2", "end 2 ok=true"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_is_not_idempotent_is_never_retried() {
    let script = Script::FailTimes {
        times: 2,
        error: transient(),
    };
    let (result, calls, finished) = check(Annotations::side_effecting(), script, config()).await;
    assert_eq!(result, Err(transient()));
    assert_eq!(calls, 1);
    assert_eq!(finished, [(1, Err(transient()))]);
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_max_attempts() {
    let script = Script::FailTimes {
        times: u32::MAX,
        error: transient(),
    };
    let (result, calls, finished) = check(Annotations::read_only(), script, config()).await;
    assert_eq!(result, Err(transient()));
    assert_eq!(calls, 5);
    assert_eq!(finished.len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_per_tool_override_bounds_attempts_differently() {
    let retry = RetryConfig {
        max_attempts: 2.try_into().unwrap(),
        ..config().retry
    };
    let config = config().with_override(
        name("flaky"),
        ToolOverrides {
            retry: Some(retry),
            ..ToolOverrides::default()
        },
    );
    let script = Script::FailTimes {
        times: u32::MAX,
        error: transient(),
    };
    let (_, calls, _) = check(Annotations::read_only(), script, config).await;
    assert_eq!(calls, 2);
}

#[tokio::test(start_paused = true)]
async fn permanent_errors_are_not_retried() {
    for error in [
        ToolError::failed("no such user"),
        ToolError::invalid_input("missing `q`"),
    ] {
        let script = Script::FailTimes {
            times: 1,
            error: error.clone(),
        };
        let (result, calls, _) = check(Annotations::read_only(), script, config()).await;
        assert_eq!(result, Err(error));
        assert_eq!(calls, 1);
    }
}

#[tokio::test(start_paused = true)]
async fn attempts_wait_an_exponential_backoff() {
    let (tool, probe) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 3,
            error: transient(),
        },
    );
    crate::support::call(&stack(tool, config())).await.unwrap();
    // 100 ms, then 200 ms, then 400 ms (no jitter in the test config); tokio's timer may
    // round a deadline up to its next millisecond.
    let gaps = probe.gaps();
    assert_eq!(gaps.len(), 3);
    for (gap, base) in gaps.iter().zip([100, 200, 400]) {
        assert!(*gap >= Duration::from_millis(base), "{gaps:?}");
    }
    assert!(gaps.windows(2).all(|w| w[0] < w[1]), "{gaps:?}");
}

#[tokio::test(start_paused = true)]
async fn a_call_without_retries_is_attempted_once_and_fails_at_once() {
    let (tool, probe) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 1,
            error: transient(),
        },
    );
    let recorder = Arc::new(Recorder::default());
    let start = tokio::time::Instant::now();
    let result = stack(tool, config())
        .call(observed_call(&recorder).without_retries())
        .await
        .map(drop);
    assert_eq!(result, Err(transient()));
    assert_eq!(probe.calls(), 1);
    assert_eq!(recorder.finished(), [(1, Err(transient()))]);
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "no backoff before giving up"
    );
}

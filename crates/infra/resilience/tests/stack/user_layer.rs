//! User layers: applied to every attempt, inside the policy layers, first added outermost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_resilience::{
    CircuitState, ExecutionStack, ResilienceConfig, RetryConfig, ToolCall, ToolStack,
};
use rein_tool::{Annotations, SharedTool, ToolError};
use tower::ServiceBuilder;

use crate::support::{Script, always_failing, call, config, fake, transient};

type Log = Arc<Mutex<Vec<String>>>;

/// A stack for `tool` with two layers logging `outer <attempt>` and `inner <attempt>`.
fn logged(tool: SharedTool, config: ResilienceConfig) -> (ToolStack, Log) {
    let log = Log::default();
    let tag = |tag: &'static str| {
        let log = Arc::clone(&log);
        ServiceBuilder::new().map_request(move |call: ToolCall| {
            log.lock()
                .unwrap()
                .push(format!("{tag} {}", call.attempt()));
            call
        })
    };
    let stack = ExecutionStack::new(config)
        .with_layer(tag("outer"))
        .with_layer(tag("inner"))
        .build(tool);
    (stack, log)
}

#[tokio::test(start_paused = true)]
async fn user_layers_see_every_attempt_in_the_order_they_were_added() {
    let (tool, _) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 1,
            error: transient(),
        },
    );
    let (stack, log) = logged(tool, config());
    call(&stack).await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["outer 1", "inner 1", "outer 2", "inner 2"]
    );
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_keeps_calls_from_user_layers() {
    let config = ResilienceConfig {
        breaker: rein_resilience::BreakerConfig {
            consecutive_failures: 1.try_into().unwrap(),
            open_for: Duration::from_secs(30),
        },
        ..config()
    };
    let (tool, _) = always_failing(Annotations::side_effecting());
    let (stack, log) = logged(tool, config);
    call(&stack).await.unwrap_err();
    assert!(matches!(stack.circuit_state(), CircuitState::Open { .. }));
    assert!(matches!(
        call(&stack).await,
        Err(ToolError::CircuitOpen { .. })
    ));
    assert_eq!(
        log.lock().unwrap().len(),
        2,
        "only the first call passed the layers"
    );
}

#[tokio::test(start_paused = true)]
async fn the_timeout_bounds_user_layers_too() {
    let (tool, probe) = fake("echo", Annotations::side_effecting(), Script::Succeed);
    let stack = ExecutionStack::new(config()) // 10 s per attempt
        .with_layer(ServiceBuilder::new().map_future(|tool_call| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            tool_call.await
        }))
        .build(tool);
    assert_eq!(
        call(&stack).await,
        Err(ToolError::TimedOut {
            after: Duration::from_secs(10)
        })
    );
    assert_eq!(probe.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn every_attempt_carries_the_callers_input() {
    // Attempts 1 and 2 get a copy (a retry may follow), attempt 3 the input itself.
    let (tool, probe) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 2,
            error: transient(),
        },
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let base = config();
    let three_attempts = ResilienceConfig {
        retry: RetryConfig {
            max_attempts: 3.try_into().unwrap(),
            ..base.retry
        },
        ..base
    };
    let stack = ExecutionStack::new(three_attempts)
        .with_layer(ServiceBuilder::new().map_request(move |call: ToolCall| {
            log.lock()
                .unwrap()
                .push((call.attempt(), call.input().clone()));
            call
        }))
        .build(tool);
    let input = serde_json::json!({"query": "rust", "page": 2});
    let output = stack.call(ToolCall::new(input.clone())).await.unwrap();
    assert_eq!(
        output.value(),
        &input,
        "the last attempt's tool got the input"
    );
    assert_eq!(probe.calls(), 3);
    assert_eq!(
        *seen.lock().unwrap(),
        [(1, input.clone()), (2, input.clone()), (3, input)]
    );
}

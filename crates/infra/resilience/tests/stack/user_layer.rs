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

/// A user layer whose service never gets ready: its `poll_ready` fails with `transient`,
/// and counts how often it was asked.
#[derive(Clone, Default)]
struct NeverReady(Arc<std::sync::atomic::AtomicU32>);

impl<S> tower::Layer<S> for NeverReady {
    type Service = NeverReady;

    fn layer(&self, _inner: S) -> NeverReady {
        self.clone()
    }
}

impl tower::Service<ToolCall> for NeverReady {
    type Response = rein_tool::ToolOutput;
    type Error = ToolError;
    type Future = std::future::Ready<Result<rein_tool::ToolOutput, ToolError>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), ToolError>> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::task::Poll::Ready(Err(transient()))
    }

    fn call(&mut self, _: ToolCall) -> Self::Future {
        std::future::ready(Err(ToolError::failed("called without being ready")))
    }
}

#[tokio::test(start_paused = true)]
async fn user_layers_that_fail_to_get_ready_end_the_call_unretried_and_uncounted() {
    let (tool, probe) = fake("echo", Annotations::read_only(), Script::Succeed);
    let never_ready = NeverReady::default();
    let stack = ExecutionStack::new(config())
        .with_layer(never_ready.clone())
        .build(tool);
    let recorder = Arc::new(crate::support::Recorder::default());
    for _ in 0..12 {
        // Transient, on an idempotent tool: an attempt's error would be retried.
        assert_eq!(
            stack.call(crate::support::observed_call(&recorder)).await,
            Err(transient())
        );
    }
    assert_eq!(
        never_ready.0.load(std::sync::atomic::Ordering::SeqCst),
        12,
        "asked once a call: not retried"
    );
    assert_eq!(probe.calls(), 0);
    assert!(recorder.events().is_empty(), "no attempt started");
    // 12 failures, over the test config's 10, and the breaker is still closed.
    assert_eq!(stack.circuit_state(), CircuitState::Closed);
}

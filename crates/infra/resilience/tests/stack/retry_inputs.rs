//! Retry inputs handed over by the observer (`ToolCall::with_retry_inputs`): the stack keeps
//! no copy of the input, every retry runs on the input its admission hands over.

use std::sync::{Arc, Mutex};

use rein_resilience::{Admission, AttemptObserver, ExecutionStack, ToolCall};
use rein_tool::{Annotations, SharedTool, ToolError, ToolName};
use serde_json::{Value, json};
use tower::ServiceBuilder;

use crate::support::{Script, config, fake, transient};

/// Hands retry `n` the input `{"retry": n}`, the second one after a wait; or, if `bare`,
/// admits every retry without an input.
struct Handing {
    bare: bool,
}

impl AttemptObserver for Handing {
    fn before_attempt(&self, _tool: &ToolName, attempt: u32) -> Admission {
        match attempt {
            1 => Admission::allow(),
            _ if self.bare => Admission::allow(),
            2 => Admission::allow_with_input(json!({ "retry": 2 })),
            n => Admission::wait_with_input(async move {
                tokio::task::yield_now().await;
                Ok(json!({ "retry": n }))
            }),
        }
    }
}

/// `tool` behind a user layer that logs the input of every attempt.
fn logged(tool: SharedTool) -> (rein_resilience::ToolStack, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let stack = ExecutionStack::new(config())
        .with_layer(ServiceBuilder::new().map_request(move |call: ToolCall| {
            log.lock().unwrap().push(call.input().clone());
            call
        }))
        .build(tool);
    (stack, seen)
}

#[tokio::test(start_paused = true)]
async fn every_retry_runs_on_the_input_its_admission_hands_over() {
    let (tool, probe) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 2,
            error: transient(),
        },
    );
    let (stack, seen) = logged(tool);
    let call = ToolCall::new(json!({"query": "rust"}))
        .with_retry_inputs(Arc::new(Handing { bare: false }));
    let output = stack.call(call).await.unwrap();
    assert_eq!(probe.calls(), 3);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            json!({"query": "rust"}),
            json!({"retry": 2}),
            json!({"retry": 3})
        ]
    );
    assert_eq!(output.value(), &json!({"retry": 3}), "the tool got it too");
}

#[tokio::test(start_paused = true)]
async fn a_retry_admitted_without_its_input_does_not_run() {
    let (tool, probe) = fake(
        "flaky",
        Annotations::read_only(),
        Script::FailTimes {
            times: 1,
            error: transient(),
        },
    );
    let (stack, seen) = logged(tool);
    let call =
        ToolCall::new(json!({"query": "rust"})).with_retry_inputs(Arc::new(Handing { bare: true }));
    let error = stack.call(call).await.unwrap_err();
    assert!(
        matches!(&error, ToolError::Failed { message, .. }
            if message.contains("retry 2 of `flaky` was admitted without its input")),
        "{error:?}"
    );
    assert_eq!(probe.calls(), 1, "the retry never reached the tool");
    assert_eq!(*seen.lock().unwrap(), [json!({"query": "rust"})]);
}

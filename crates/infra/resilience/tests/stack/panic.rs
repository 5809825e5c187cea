//! Panics: a panicking tool or user layer becomes `ToolError::Panicked` with its message.

use rein_resilience::{ExecutionStack, ToolCall};
use rein_tool::{Annotations, ToolError};
use serde_json::json;
use tower::ServiceBuilder;

use crate::support::{Script, call, config, fake, stack};

fn panicked(message: &str) -> Result<serde_json::Value, ToolError> {
    Err(ToolError::Panicked {
        message: message.to_owned(),
    })
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_becomes_panicked_with_its_message() {
    let (tool, _) = fake(
        "boom",
        Annotations::side_effecting(),
        Script::Panic("disk on fire"),
    );
    let stack = stack(tool, config());
    assert_eq!(call(&stack).await, panicked("disk on fire"));
    // The stack is still usable afterwards.
    assert_eq!(call(&stack).await, panicked("disk on fire"));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_idempotent_tool_is_not_retried() {
    let (tool, probe) = fake("boom", Annotations::read_only(), Script::Panic("bug"));
    assert_eq!(call(&stack(tool, config())).await, panicked("bug"));
    assert_eq!(probe.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_a_user_layer_is_caught_too() {
    let (tool, probe) = fake("echo", Annotations::side_effecting(), Script::Succeed);
    let stack = ExecutionStack::new(config())
        .with_layer(
            ServiceBuilder::new().map_request(|call: ToolCall| -> ToolCall {
                let n = call.attempt();
                panic!("layer failed on attempt {n}")
            }),
        )
        .build(tool);
    let result = stack
        .call(ToolCall::new(json!(null)))
        .await
        .map(rein_tool::ToolOutput::into_value);
    assert_eq!(result, panicked("layer failed on attempt 1"));
    assert_eq!(probe.calls(), 0);
}

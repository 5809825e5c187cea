//! Compile-time checks: stacks are shareable, calls are spawnable, the observer is dyn-usable.

use std::future::Future;
use std::sync::Arc;

use rein_resilience::{AttemptObserver, ExecutionStack, ToolCall, ToolStack};

fn is_send_sync<T: Send + Sync>() {}
fn is_clone<T: Clone>() {}
fn is_spawnable<F: Future + Send + 'static>(_: &F) {}
fn _observer_is_object_safe(_: Arc<dyn AttemptObserver>) {}

#[test]
fn stacks_are_send_sync_and_clone() {
    is_send_sync::<ToolStack>();
    is_clone::<ToolStack>();
    is_send_sync::<ExecutionStack>();
    is_send_sync::<ToolCall>();
}

#[tokio::test]
async fn a_call_is_send_and_static_and_can_be_spawned() {
    let (tool, _) = crate::support::fake(
        "echo",
        rein_tool::Annotations::read_only(),
        crate::support::Script::Succeed,
    );
    let stack = crate::support::stack(tool, crate::support::config());
    let call = stack.call(ToolCall::new(serde_json::json!(1)));
    is_spawnable(&call);
    drop(stack); // the call does not borrow the stack
    assert!(tokio::spawn(call).await.unwrap().is_ok());
}

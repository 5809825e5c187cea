//! The `Tool` port, its object-safe twin `DynTool`, and the `Registry` port.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::{ToolError, ToolName, ToolOutput, ToolSpec};

/// A boxed, `Send` future: what object-safe twins of rein's async ports return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool the engine can call. Implement it with a plain `async fn`.
///
/// # Contract
/// - `spec` MUST return the same spec on every call; the engine reads it once at build time.
/// - `call` MUST NOT assume it runs to completion: when a timeout fires or a run is aborted
///   the future is dropped. Do cleanup in `Drop`, not after an `.await`.
/// - `call` SHOULD return [`ToolError::InvalidInput`] for input it cannot use (the engine has
///   already checked the input schema), [`ToolError::transient`] for failures worth retrying
///   and [`ToolError::failed`] otherwise. A panic is caught and recorded as
///   [`ToolError::Panicked`]; it never takes the engine down.
/// - A tool that is not read-only MUST say so in its annotations: that is what keeps it out
///   of every state but `act`.
///
/// ```
/// use rein_tool::{Annotations, Tool, ToolError, ToolOutput, ToolSpec};
/// use serde_json::{json, Value};
///
/// struct Add { spec: ToolSpec }
///
/// impl Tool for Add {
///     fn spec(&self) -> &ToolSpec { &self.spec }
///     async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
///         let (Some(a), Some(b)) = (input["a"].as_i64(), input["b"].as_i64()) else {
///             return Err(ToolError::invalid_input("expected integers `a` and `b`"));
///         };
///         Ok(json!({ "sum": a + b }).into())
///     }
/// }
/// # let _ = Add { spec: ToolSpec::new("add".parse().unwrap(), "adds") };
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool on `input`.
    fn call(&self, input: Value) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// The object-safe twin of [`Tool`], implemented for every `Tool`. The engine stores tools
/// as [`SharedTool`]s; you never implement this yourself.
pub trait DynTool: Send + Sync + 'static {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool on `input`, boxed.
    fn call_boxed(&self, input: Value) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;

    /// Runs the tool on `input`, boxed, with a future that holds its own share of the tool,
    /// so it can outlive every borrow (what an execution stack needs). For a `Tool` this is
    /// one allocation, where a future that owns the `Arc` and awaits
    /// [`call_boxed`](Self::call_boxed) takes two.
    fn call_owned(
        self: Arc<Self>,
        input: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move { self.call_boxed(input).await })
    }
}

impl<T: Tool> DynTool for T {
    fn spec(&self) -> &ToolSpec {
        Tool::spec(self)
    }

    fn call_boxed(&self, input: Value) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(input))
    }

    fn call_owned(
        self: Arc<Self>,
        input: Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move { self.call(input).await })
    }
}

/// A tool shared between the registry and the runs that call it.
pub type SharedTool = Arc<dyn DynTool>;

/// Where the engine looks tools up by name.
///
/// # Contract
/// - `get` MUST return the same tool for the same name for the registry's whole life (the
///   engine compiles schemas and builds the execution stack once per tool).
/// - `get` MUST be cheap: it runs once per tool call.
/// - `specs` lists every tool once, in a stable order.
pub trait Registry: Send + Sync + 'static {
    /// The tool registered under `name`, if any.
    fn get(&self, name: &str) -> Option<SharedTool>;

    /// The specs of every registered tool.
    fn specs(&self) -> Vec<ToolSpec>;
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Another tool already has the name.
    #[error("a tool named `{0}` is already registered; tool names must be unique")]
    Duplicate(ToolName),
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Noop(ToolSpec);
    impl Tool for Noop {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
            Ok(input.into())
        }
    }

    fn _ports_are_object_safe(_: &dyn DynTool, _: &dyn Registry) {}

    #[test]
    fn an_owned_call_outlives_the_callers_handle() {
        let tool: SharedTool = Arc::new(Noop(ToolSpec::new(ToolName::new("noop").unwrap(), "")));
        let mut call = Arc::clone(&tool).call_owned(Value::from("in"));
        drop(tool);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match call.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(Ok(output)) => assert_eq!(output, ToolOutput::new("in".into())),
            other => panic!("expected the echoed input, got {other:?}"),
        }
    }

    #[test]
    fn every_tool_is_a_dyn_tool() {
        let tool: SharedTool = Arc::new(Noop(ToolSpec::new(ToolName::new("noop").unwrap(), "")));
        assert_eq!(tool.spec().name().as_str(), "noop");
        // The boxed future is `Send`; nothing else is needed to hold it across tasks.
        fn assert_send<T: Send>(_: &T) {}
        let fut = tool.call_boxed(Value::Null);
        assert_send(&fut);
    }
}

//! The panic step: a panic in the tool or in a user layer becomes `ToolError::Panicked`.
//!
//! A panic only unwinds to here when the binary is built with `panic = "unwind"` (Rust's
//! default); with `panic = "abort"` the process ends.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures_util::FutureExt as _;
use rein_tool::{BoxFuture, ToolError, ToolOutput};

/// Runs the future `start` makes, turning a panic in `start` or in the future into
/// `ToolError::Panicked` with the panic's message.
pub(crate) async fn catch_panic<'a, S>(start: S) -> Result<ToolOutput, ToolError>
where
    S: FnOnce() -> BoxFuture<'a, Result<ToolOutput, ToolError>>,
{
    let future = catch_unwind(AssertUnwindSafe(start)).map_err(|payload| panicked(&*payload))?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .unwrap_or_else(|payload| Err(panicked(&*payload)))
}

/// `ToolError::Panicked` with the panic's message (`panic!` payloads are `&str` or `String`).
fn panicked(payload: &(dyn Any + Send)) -> ToolError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic payload is not a string".to_owned());
    tracing::warn!(%message, "tool panicked");
    ToolError::Panicked { message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_str_payloads_keep_their_message() {
        let str_payload: Box<dyn Any + Send> = Box::new("static message");
        let string_payload: Box<dyn Any + Send> = Box::new(format!("formatted {}", 42));
        let other: Box<dyn Any + Send> = Box::new(7_u32);
        let message = |payload: Box<dyn Any + Send>| match panicked(&*payload) {
            ToolError::Panicked { message } => message,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(message(str_payload), "static message");
        assert_eq!(message(string_payload), "formatted 42");
        assert_eq!(message(other), "panic payload is not a string");
    }
}

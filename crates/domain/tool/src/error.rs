//! `ToolError`: every way a tool call can fail, typed so the engine can decide what follows.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ToolName;

/// Why a tool call failed.
///
/// Tools return [`ToolError::InvalidInput`] or [`ToolError::Failed`] themselves; the rest are
/// produced around the tool by the execution stack (timeouts, panics, cancellation, an open
/// circuit breaker, a full bulkhead). Only [transient](ToolError::is_transient) errors are
/// retried, and only for idempotent tools.
///
/// ```
/// use rein_tool::ToolError;
/// let e = ToolError::transient("connection reset");
/// assert!(e.is_transient());
/// assert_eq!(e.to_string(), "tool failed: connection reset (transient)");
/// assert!(!ToolError::failed("no such user").is_transient());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolError {
    /// The tool refused its input. Not retried: the same input fails the same way.
    #[error("invalid tool input: {message}")]
    InvalidInput {
        /// What was wrong with the input.
        message: String,
    },
    /// The tool ran and failed.
    #[error("tool failed: {message}{}", if *retryable { " (transient)" } else { "" })]
    Failed {
        /// What went wrong.
        message: String,
        /// Whether trying again may succeed (a network blip, a lock held elsewhere).
        retryable: bool,
    },
    /// The call did not finish within its timeout and was dropped.
    #[error("tool timed out after {} ms", after.as_millis())]
    TimedOut {
        /// The timeout that elapsed.
        #[serde(rename = "after_ms", with = "crate::duration_ms")]
        after: Duration,
    },
    /// The tool panicked; the panic was caught and the engine went on.
    #[error("tool panicked: {message}")]
    Panicked {
        /// The panic's message, when it had a string payload.
        message: String,
    },
    /// The call was cancelled (the run was aborted) before it finished.
    #[error("tool call cancelled")]
    Cancelled,
    /// The tool's circuit breaker is open after repeated failures; the call was not made.
    #[error("circuit breaker for tool `{tool}` is open; it will be tried again in {} ms", retry_after.as_millis())]
    CircuitOpen {
        /// The tool whose breaker is open.
        tool: ToolName,
        /// How long until the breaker lets a trial call through.
        #[serde(rename = "retry_after_ms", with = "crate::duration_ms")]
        retry_after: Duration,
    },
    /// The tool's bulkhead is full and the engine is configured to shed load.
    #[error("tool `{tool}` is at its concurrency limit; try again later or raise the limit")]
    Overloaded {
        /// The tool at its limit.
        tool: ToolName,
    },
}

impl ToolError {
    /// The error as a sentence about `tool`, for a run's failure and for people: the
    /// error's own text says "tool failed", so `format!("tool `{tool}` failed: {error}")`
    /// would say it twice.
    ///
    /// ```
    /// use rein_tool::ToolError;
    /// use std::time::Duration;
    /// let tool = "fetch".parse()?;
    /// assert_eq!(ToolError::transient("503").about(&tool), "tool `fetch` failed: 503 (transient)");
    /// let late = ToolError::TimedOut { after: Duration::from_millis(5) };
    /// assert_eq!(late.about(&tool), "tool `fetch` timed out after 5 ms");
    /// # Ok::<(), rein_tool::ToolNameError>(())
    /// ```
    #[must_use]
    pub fn about(&self, tool: &ToolName) -> String {
        match self {
            Self::InvalidInput { message } => format!("tool `{tool}` refused its input: {message}"),
            Self::Failed { message, retryable } => format!(
                "tool `{tool}` failed: {message}{}",
                if *retryable { " (transient)" } else { "" }
            ),
            Self::TimedOut { after } => {
                format!("tool `{tool}` timed out after {} ms", after.as_millis())
            }
            Self::Panicked { message } => format!("tool `{tool}` panicked: {message}"),
            Self::Cancelled => format!("the call to tool `{tool}` was cancelled"),
            Self::CircuitOpen { .. } | Self::Overloaded { .. } => self.to_string(),
        }
    }

    /// The tool refused its input.
    #[must_use]
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::InvalidInput {
            message: message.into(),
        }
    }

    /// The tool failed for good: retrying the same input will not help.
    #[must_use]
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: false,
        }
    }

    /// The tool failed in a way that may pass (idempotent tools are retried).
    #[must_use]
    pub fn transient(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: true,
        }
    }

    /// Whether trying the same call again may succeed: transient failures and timeouts.
    #[must_use]
    pub const fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Failed {
                retryable: true,
                ..
            } | Self::TimedOut { .. }
        )
    }

    /// A short, stable name for the kind of error (as in its serialized `kind` tag).
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::InvalidInput { .. } => "invalid_input",
            Self::Failed { .. } => "failed",
            Self::TimedOut { .. } => "timed_out",
            Self::Panicked { .. } => "panicked",
            Self::Cancelled => "cancelled",
            Self::CircuitOpen { .. } => "circuit_open",
            Self::Overloaded { .. } => "overloaded",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trips_every_variant() {
        let tool = ToolName::new("t").unwrap();
        for e in [
            ToolError::invalid_input("x"),
            ToolError::failed("y"),
            ToolError::transient("z"),
            ToolError::TimedOut {
                after: Duration::from_millis(5),
            },
            ToolError::Panicked {
                message: "boom".into(),
            },
            ToolError::Cancelled,
            ToolError::CircuitOpen {
                tool: tool.clone(),
                retry_after: Duration::from_secs(2),
            },
            ToolError::Overloaded { tool },
        ] {
            let json = serde_json::to_value(&e).unwrap();
            assert_eq!(json["kind"], e.kind());
            assert_eq!(serde_json::from_value::<ToolError>(json).unwrap(), e);
        }
    }

    #[test]
    fn circuit_open_says_which_tool_and_when() {
        let e = ToolError::CircuitOpen {
            tool: ToolName::new("flaky").unwrap(),
            retry_after: Duration::from_millis(1500),
        };
        assert_eq!(
            e.to_string(),
            "circuit breaker for tool `flaky` is open; it will be tried again in 1500 ms"
        );
    }
}

//! The circuit breaker: failsafe's `StateMachine` per tool, consulted *before* an attempt
//! starts, with a drop guard so that an attempt dropped mid-flight counts.
//!
//! failsafe counts consecutive failures and walks closed → open → half-open → closed; this
//! module keeps the open window itself, on tokio's clock, so that `retry_after` is known and
//! tests can use a paused clock. failsafe is given a zero open delay, so it turns half-open
//! at the first permission request once this module's window has passed.

use std::iter::Repeat;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use failsafe::failure_policy::{ConsecutiveFailures, consecutive_failures};
use failsafe::{Instrument, StateMachine};
use rein_tool::{ToolError, ToolName, ToolOutput};
use tokio::time::Instant;

use super::Failure;
use crate::BreakerConfig;

/// The state of a tool's circuit breaker (see [`ToolStack::circuit_state`]).
///
/// [`ToolStack::circuit_state`]: crate::ToolStack::circuit_state
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Calls go through; failed attempts are counted.
    Closed,
    /// Calls fail fast with [`ToolError::CircuitOpen`] without reaching the tool.
    Open {
        /// How long until a call is let through as a trial (zero: the next call is).
        retry_after: Duration,
    },
    /// Calls go through as trials: a success closes the breaker, a counted failure opens it
    /// again.
    HalfOpen,
}

/// One tool's circuit breaker. Clones share it.
#[derive(Debug, Clone)]
pub(crate) struct Circuit {
    machine: Machine,
    shared: Arc<Shared>,
}

/// An attempt the breaker let through and has not heard back from: dropped unfinished, it
/// counts as a failure (a hang that an outer deadline or the caller cut short).
#[must_use = "an attempt let through must report how it ended"]
pub(crate) struct InFlight<'a> {
    circuit: Option<&'a Circuit>,
}

type Machine = StateMachine<ConsecutiveFailures<Repeat<Duration>>, Observer>;

const CLOSED: u8 = 0;
const OPEN: u8 = 1;
const HALF_OPEN: u8 = 2;

/// What the breaker's [`Observer`] saw, read by the layer.
#[derive(Debug)]
struct Shared {
    tool: ToolName,
    open_for: Duration,
    state: AtomicU8,
    opened_at: Mutex<Option<Instant>>,
    /// Whether failsafe was told of a failure since it was last told of a success. While
    /// the circuit is closed and this is false, failsafe's count of consecutive failures is
    /// zero, so a success would change nothing there: it is not fed, and the healthy path
    /// (every call of every run of the tool) takes no lock. Set only *after* failsafe has
    /// the failure, so a success that skips the lock can always be ordered before any
    /// failure it did not see.
    failed_since_success: AtomicBool,
}

/// failsafe's `Instrument`: records transitions and logs them.
#[derive(Debug)]
struct Observer(Arc<Shared>);

impl InFlight<'_> {
    /// Feeds the attempt's outcome to the breaker.
    pub(crate) fn finish(mut self, outcome: &Result<ToolOutput, Failure>) {
        if let Some(circuit) = self.circuit.take() {
            circuit.record(outcome);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(circuit) = self.circuit.take() {
            circuit.on_error();
        }
    }
}

impl Circuit {
    /// A closed breaker for `tool`.
    pub(crate) fn new(tool: ToolName, config: BreakerConfig) -> Self {
        let shared = Arc::new(Shared {
            tool,
            open_for: config.open_for,
            state: AtomicU8::new(CLOSED),
            opened_at: Mutex::new(None),
            failed_since_success: AtomicBool::new(false),
        });
        // The open window is kept here, on tokio's clock; failsafe's own (std) delay is zero.
        let policy = consecutive_failures(
            config.consecutive_failures.get(),
            std::iter::repeat(Duration::ZERO),
        );
        let machine = failsafe::Config::new()
            .failure_policy(policy)
            .instrument(Observer(Arc::clone(&shared)))
            .build();
        Self { machine, shared }
    }

    /// The breaker's state as last observed.
    pub(crate) fn state(&self) -> CircuitState {
        match self.shared.state.load(Ordering::Acquire) {
            OPEN => CircuitState::Open {
                retry_after: self.shared.open_remaining(),
            },
            HALF_OPEN => CircuitState::HalfOpen,
            _ => CircuitState::Closed,
        }
    }

    /// Lets an attempt through, to report how it ended; `CircuitOpen` naming the tool if the
    /// circuit is open.
    pub(crate) fn enter(&self) -> Result<InFlight<'_>, ToolError> {
        self.admit()?;
        Ok(InFlight {
            circuit: Some(self),
        })
    }

    /// Whether a call may go through now; `CircuitOpen` naming the tool if not.
    fn admit(&self) -> Result<(), ToolError> {
        match self.shared.state.load(Ordering::Acquire) {
            // failsafe permits every call while closed: asking it would only take its lock.
            CLOSED => return Ok(()),
            OPEN => {
                let retry_after = self.shared.open_remaining();
                if !retry_after.is_zero() {
                    tracing::debug!(tool = %self.shared.tool, ?retry_after, "circuit open: call rejected");
                    return Err(self.open_error(retry_after));
                }
            }
            _ => {}
        }
        // Closed, half-open, or open with the window passed: failsafe turns half-open then.
        if self.machine.is_call_permitted() {
            Ok(())
        } else {
            Err(self.open_error(Duration::ZERO))
        }
    }

    /// Feeds an attempt's outcome to the state machine. Vetoed attempts never ran: they
    /// count neither way.
    fn record(&self, outcome: &Result<ToolOutput, Failure>) {
        match outcome {
            Err(Failure::Tool(error)) if counts_as_failure(error) => self.on_error(),
            Ok(_) | Err(Failure::Tool(_)) => self.on_success(),
            Err(Failure::Vetoed(_)) => {}
        }
    }

    fn on_error(&self) {
        self.machine.on_error();
        self.shared
            .failed_since_success
            .store(true, Ordering::Release);
    }

    fn on_success(&self) {
        let closed = self.shared.state.load(Ordering::Acquire) == CLOSED;
        let failed = &self.shared.failed_since_success;
        // A plain load first: the healthy path writes nothing shared.
        if closed && !(failed.load(Ordering::Acquire) && failed.swap(false, Ordering::AcqRel)) {
            // Closed, and no failure since the last success: nothing for failsafe to reset.
            return;
        }
        self.machine.on_success();
    }

    fn open_error(&self, retry_after: Duration) -> ToolError {
        ToolError::CircuitOpen {
            tool: self.shared.tool.clone(),
            retry_after,
        }
    }
}

/// Whether an error says the tool is unwell: transient failures, timeouts and panics. A
/// refused input or a permanent failure is a tool working as designed.
const fn counts_as_failure(error: &ToolError) -> bool {
    error.is_transient() || matches!(error, ToolError::Panicked { .. })
}

impl Shared {
    /// How much of the open window is left (zero once it has passed).
    fn open_remaining(&self) -> Duration {
        let opened_at = *self
            .opened_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        opened_at.map_or(Duration::ZERO, |at| {
            self.open_for.saturating_sub(at.elapsed())
        })
    }

    fn set_opened_at(&self, at: Option<Instant>) {
        *self
            .opened_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = at;
    }
}

impl Instrument for Observer {
    fn on_call_rejected(&self) {}

    fn on_open(&self) {
        self.0.set_opened_at(Some(Instant::now()));
        self.0.state.store(OPEN, Ordering::Release);
        tracing::warn!(tool = %self.0.tool, open_for = ?self.0.open_for, "circuit breaker opened");
    }

    fn on_half_open(&self) {
        self.0.state.store(HALF_OPEN, Ordering::Release);
        self.0.set_opened_at(None);
        tracing::info!(tool = %self.0.tool, "circuit breaker half-open: trial calls go through");
    }

    fn on_closed(&self) {
        let was = self.0.state.swap(CLOSED, Ordering::AcqRel);
        self.0.set_opened_at(None);
        if was != CLOSED {
            tracing::info!(tool = %self.0.tool, "circuit breaker closed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> ToolName {
        ToolName::new("t").unwrap()
    }

    #[test]
    fn only_signs_of_an_unwell_tool_count() {
        assert!(counts_as_failure(&ToolError::transient("blip")));
        assert!(counts_as_failure(&ToolError::TimedOut {
            after: Duration::from_secs(1)
        }));
        assert!(counts_as_failure(&ToolError::Panicked {
            message: "boom".into()
        }));
        assert!(!counts_as_failure(&ToolError::failed("no such user")));
        assert!(!counts_as_failure(&ToolError::invalid_input(
            "missing field"
        )));
        assert!(!counts_as_failure(&ToolError::Cancelled));
    }

    #[tokio::test(start_paused = true)]
    async fn opens_after_consecutive_failures_and_reports_the_window() {
        let open_for = Duration::from_secs(10);
        let config = BreakerConfig {
            consecutive_failures: 2.try_into().unwrap(),
            open_for,
        };
        let circuit = Circuit::new(tool(), config);
        let failed: Result<ToolOutput, Failure> = Err(Failure::Tool(ToolError::transient("x")));

        circuit.record(&failed);
        assert_eq!(circuit.state(), CircuitState::Closed);
        circuit.record(&failed);
        assert_eq!(
            circuit.state(),
            CircuitState::Open {
                retry_after: open_for
            }
        );

        tokio::time::advance(Duration::from_secs(4)).await;
        match circuit.admit() {
            Err(ToolError::CircuitOpen {
                tool: name,
                retry_after,
            }) => {
                assert_eq!(name, tool());
                assert_eq!(retry_after, Duration::from_secs(6));
            }
            other => panic!("expected CircuitOpen, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_between_failures_resets_the_count() {
        let config = BreakerConfig {
            consecutive_failures: 2.try_into().unwrap(),
            open_for: Duration::from_secs(10),
        };
        let circuit = Circuit::new(tool(), config);
        let failed: Result<ToolOutput, Failure> = Err(Failure::Tool(ToolError::transient("x")));
        let ok: Result<ToolOutput, Failure> = Ok(ToolOutput::new(serde_json::Value::Null));
        // Successes on a healthy circuit (the lock-free path) leave it closed and counting.
        for outcome in [&ok, &ok, &failed, &ok, &ok, &failed, &ok] {
            circuit.record(outcome);
            assert_eq!(circuit.state(), CircuitState::Closed);
            assert!(circuit.admit().is_ok());
        }
        circuit.record(&failed);
        circuit.record(&failed);
        assert!(matches!(circuit.state(), CircuitState::Open { .. }));
        assert!(circuit.admit().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_vetoed_attempt_counts_neither_way() {
        let config = BreakerConfig {
            consecutive_failures: 1.try_into().unwrap(),
            open_for: Duration::ZERO,
        };
        let circuit = Circuit::new(tool(), config);
        circuit.record(&Err(Failure::Vetoed(ToolError::transient("x"))));
        assert_eq!(circuit.state(), CircuitState::Closed);
    }
}

//! The retry policy for tower's `Retry`: idempotent tools only (the layer is left out for
//! the others), transient errors only, bounded attempts, exponential backoff with jitter.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use rein_tool::ToolOutput;
use tokio::time::Sleep;
use tower::retry::Policy;

use super::Failure;
use crate::{Jitter, RetryConfig, ToolCall};

/// Retries a call while its error is transient and attempts are left. `Retry` clones the
/// policy per call, and the attempt number travels in the request, so calls share nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdempotentRetry {
    config: RetryConfig,
}

impl IdempotentRetry {
    /// A policy following `config`.
    pub(crate) const fn new(config: RetryConfig) -> Self {
        Self { config }
    }
}

impl Policy<ToolCall, ToolOutput, Failure> for IdempotentRetry {
    type Future = Sleep;

    fn retry(
        &mut self,
        call: &mut ToolCall,
        result: &mut Result<ToolOutput, Failure>,
    ) -> Option<Sleep> {
        // Not retried: success, a veto, a permanent error, an open circuit, the last attempt.
        let Err(Failure::Tool(error)) = result else {
            return None;
        };
        let max_attempts = self.config.max_attempts.get().min(call.max_attempts);
        if !error.is_transient() || call.attempt >= max_attempts {
            return None;
        }
        let delay = jittered(self.config.base_delay(call.attempt), self.config.jitter);
        tracing::debug!(attempt = call.attempt, ?delay, %error, "retrying tool call");
        // `call` is the copy the next attempt is made with.
        call.attempt += 1;
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, call: &ToolCall) -> Option<ToolCall> {
        Some(call.clone())
    }
}

/// `delay` spread by `jitter`.
fn jittered(delay: Duration, jitter: Jitter) -> Duration {
    match jitter {
        Jitter::None => delay,
        Jitter::Equal => delay / 2 + (delay / 2).mul_f64(unit_random()),
        Jitter::Full => delay.mul_f64(unit_random()),
    }
}

/// A number in `[0, 1)`, different on every call. Not for cryptography: std's `RandomState`
/// is seeded from the OS once per thread and changes its keys on every `new`.
fn unit_random() -> f64 {
    const MANTISSA_BITS: u32 = 53;
    let bits = RandomState::new().hash_one(()) >> (u64::BITS - MANTISSA_BITS);
    bits as f64 / (1_u64 << MANTISSA_BITS) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_in_its_band() {
        let delay = Duration::from_millis(800);
        assert_eq!(jittered(delay, Jitter::None), delay);
        for _ in 0..1000 {
            let equal = jittered(delay, Jitter::Equal);
            assert!(equal >= delay / 2 && equal <= delay, "{equal:?}");
            assert!(jittered(delay, Jitter::Full) <= delay);
        }
    }

    #[test]
    fn jitter_differs_between_draws() {
        let draws: std::collections::HashSet<u64> =
            (0..100).map(|_| unit_random().to_bits()).collect();
        assert!(draws.len() > 90, "{} distinct draws of 100", draws.len());
    }
}

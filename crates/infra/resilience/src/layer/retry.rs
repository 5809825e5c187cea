//! The retry step: idempotent tools only (the stack has no retry policy for the others),
//! transient errors only, bounded attempts, exponential backoff with jitter.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use rein_tool::ToolOutput;

use super::Failure;
use crate::{Jitter, RetryConfig};

/// How long to wait before retrying attempt `attempt`, which ended with `result`; `None`
/// when it is not retried: a success, a veto, a permanent error, an open circuit, or
/// `attempt` was the last of `max_attempts`.
pub(crate) fn backoff(
    config: &RetryConfig,
    attempt: u32,
    max_attempts: u32,
    result: &Result<ToolOutput, Failure>,
) -> Option<Duration> {
    let Err(Failure::Tool(error)) = result else {
        return None;
    };
    if !error.is_transient() || attempt >= max_attempts {
        return None;
    }
    let delay = jittered(config.base_delay(attempt), config.jitter);
    tracing::debug!(attempt, ?delay, %error, "retrying tool call");
    Some(delay)
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

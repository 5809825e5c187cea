//! How `HttpProvider` retries and when it stops trying: the wait a server asks for
//! (`Retry-After`), tower's retry policy, and the circuit breaker per provider.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::time::Instant;
use tower::retry::Policy;

use crate::chat::ChatResponse;
use crate::error::LlmError;

/// The cap of the doubling backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// `retry-after-ms`, or `retry-after` in seconds or as an HTTP date (RFC 9110 §10.2.3),
/// read against the wall clock. A date in the past means now; the caller bounds the wait by
/// [`MAX_RETRY_AFTER`](crate::MAX_RETRY_AFTER).
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, std::time::SystemTime::now())
}

/// [`retry_after`] with `now` given.
fn retry_after_at(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    const DAY: f64 = 86_400.0;
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let secs = |s: &str| s.parse::<f64>().ok().filter(|d| d.is_finite() && *d >= 0.0);
    if let Some(ms) = text("retry-after-ms").and_then(secs) {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(DAY)));
    }
    let value = text("retry-after")?;
    if let Some(s) = secs(value) {
        return Some(Duration::from_secs_f64(s.min(DAY)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs_f64(DAY)),
    )
}

/// Retries transient failures: 429 after its `Retry-After` (else the backoff), 5xx,
/// connection errors and attempts that timed out after a doubling backoff. A timed-out
/// attempt is safe to retry: nothing of its reply was used, and each attempt is on the
/// record (and charged) before it is sent.
#[derive(Debug, Clone)]
pub(super) struct RetryPolicy {
    pub(super) left: u32,
    pub(super) backoff: Duration,
    /// The longest `Retry-After` honoured.
    pub(super) max_wait: Duration,
}

impl Policy<Arc<Vec<u8>>, ChatResponse, LlmError> for RetryPolicy {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _: &mut Arc<Vec<u8>>,
        result: &mut Result<ChatResponse, LlmError>,
    ) -> Option<Self::Future> {
        let Err(error) = result else { return None };
        if self.left == 0 || !error.is_transient() {
            return None;
        }
        let wait = match error {
            LlmError::RateLimited {
                retry_after: Some(after),
            } if *after > self.max_wait => return None,
            LlmError::RateLimited {
                retry_after: Some(after),
            } => *after,
            _ => {
                let wait = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                wait
            }
        };
        self.left -= 1;
        tracing::debug!(?wait, %error, "model call failed; retrying");
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, request: &Arc<Vec<u8>>) -> Option<Arc<Vec<u8>>> {
        Some(Arc::clone(request))
    }
}

/// A circuit breaker per provider: `threshold` failed calls in a row (transient failures
/// and timeouts, after retries) open it for `open_for`; then one call is let through.
#[derive(Debug, Clone)]
pub(super) struct Breaker {
    threshold: u32,
    open_for: Duration,
    state: Arc<Mutex<BreakerState>>,
}

#[derive(Debug, Default)]
struct BreakerState {
    failures: u32,
    opened: Option<Instant>,
}

impl Breaker {
    pub(super) fn new(threshold: u32, open_for: Duration) -> Self {
        Self {
            threshold: threshold.max(1),
            open_for,
            state: Arc::default(),
        }
    }

    pub(super) fn admit(&self) -> Result<(), LlmError> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match state.opened {
            Some(at) if at.elapsed() < self.open_for => Err(LlmError::CircuitOpen {
                failures: state.failures,
            }),
            Some(_) => {
                // Half-open: this call probes; a failure re-opens at once.
                state.opened = None;
                state.failures = self.threshold.saturating_sub(1);
                Ok(())
            }
            None => Ok(()),
        }
    }

    pub(super) fn record<T>(&self, outcome: &Result<T, LlmError>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match outcome {
            // Nothing was sent: the server's health is unknown.
            Err(LlmError::AttemptRefused { .. }) => {}
            Err(e) if e.is_transient() => {
                state.failures = state.failures.saturating_add(1);
                if state.failures >= self.threshold {
                    state.opened = Some(Instant::now());
                }
            }
            _ => *state = BreakerState::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        h.insert("retry-after-ms", HeaderValue::from_static("-1"));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn retry_after_reads_an_http_date_against_now() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        let mut h = HeaderMap::new();
        for (date, wait) in [
            ("Wed, 21 Oct 2015 07:28:30 GMT", 30),
            // RFC 850 and asctime forms are HTTP dates too.
            ("Wednesday, 21-Oct-15 07:29:00 GMT", 60),
            ("Wed Oct 21 07:28:05 2015", 5),
            // In the past: now.
            ("Wed, 21 Oct 2015 07:00:00 GMT", 0),
            // Bounded to a day (the retry policy then refuses to wait that long).
            ("Wed, 21 Oct 2099 07:28:00 GMT", 86_400),
        ] {
            h.insert("retry-after", HeaderValue::from_static(date));
            assert_eq!(
                retry_after_at(&h, now),
                Some(Duration::from_secs(wait)),
                "{date}"
            );
        }
    }
}

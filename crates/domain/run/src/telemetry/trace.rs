//! W3C trace context: a span's identity as it travels out with a request (`traceparent`),
//! and the port through which rein's crates ask an exporter for it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A span's W3C trace context (the `traceparent` header value, version `00`): a trace id, a
/// span id and the trace flags. Not a secret: two random identifiers and a sampled bit.
///
/// It is checked when it is made: lowercase hex of the right lengths, neither id all
/// zeros, so a value read back from a ledger or a header is one a collector accepts.
///
/// ```
/// use rein_run::telemetry::TraceParent;
/// let tp: TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".parse()?;
/// assert_eq!(tp.trace_id(), "0af7651916cd43dd8448eb211c80319c");
/// assert_eq!(tp.span_id(), "b7ad6b7169203331");
/// assert!(tp.sampled());
/// assert_eq!(tp.to_string(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
/// assert!("00-00000000000000000000000000000000-b7ad6b7169203331-01".parse::<TraceParent>().is_err());
/// # Ok::<(), rein_run::telemetry::TraceParentError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

/// Why a text is not a `traceparent`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid traceparent {value:?}: expected version 00, a 32-digit and a 16-digit lowercase \
     hex id (neither all zeros) and 2 hex digits of flags, as in \
     00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)]
pub struct TraceParentError {
    /// The text refused (at most its first 64 characters).
    pub value: String,
}

impl TraceParent {
    /// The context made of a trace id, a span id and the trace flags (bit 0: sampled).
    ///
    /// # Errors
    /// [`TraceParentError`] when either id is all zeros (W3C: an invalid id).
    pub fn from_parts(
        trace_id: [u8; 16],
        span_id: [u8; 8],
        flags: u8,
    ) -> Result<Self, TraceParentError> {
        let parent = Self {
            trace_id,
            span_id,
            flags,
        };
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(TraceParentError {
                value: parent.to_string(),
            });
        }
        Ok(parent)
    }

    /// The trace id, 32 lowercase hex digits.
    #[must_use]
    pub fn trace_id(&self) -> String {
        hex(&self.trace_id)
    }

    /// The span id, 16 lowercase hex digits.
    #[must_use]
    pub fn span_id(&self) -> String {
        hex(&self.span_id)
    }

    /// The trace id's bytes.
    #[must_use]
    pub const fn trace_id_bytes(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The span id's bytes.
    #[must_use]
    pub const fn span_id_bytes(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace flags.
    #[must_use]
    pub const fn flags(&self) -> u8 {
        self.flags
    }

    /// Whether the span was sampled (flag bit 0).
    #[must_use]
    pub const fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl FromStr for TraceParent {
    type Err = TraceParentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let refuse = || TraceParentError {
            value: s.chars().take(64).collect(),
        };
        let mut parts = s.split('-');
        let (Some("00"), Some(trace), Some(span), Some(flags), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(refuse());
        };
        let mut trace_id = [0; 16];
        let mut span_id = [0; 8];
        let mut flag = [0; 1];
        if !(unhex(trace, &mut trace_id) && unhex(span, &mut span_id) && unhex(flags, &mut flag)) {
            return Err(refuse());
        }
        Self::from_parts(trace_id, span_id, flag[0]).map_err(|_| refuse())
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            self.flags
        )
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TraceParent")
            .field(&self.to_string())
            .finish()
    }
}

impl Serialize for TraceParent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TraceParent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The port through which rein's crates reach the trace context of the span they run in:
/// the engine (to link a resumed run's trace to the one before), the model providers and
/// the MCP client (to send `traceparent` with each request). An exporter implements it
/// (`rein_otel::Telemetry::trace_context`); without one nothing is propagated or linked.
///
/// Both methods are about the *current* span (the one the calling code runs in). They
/// MUST NOT block and MUST NOT fail: a span that is not exported has no context
/// (`current` answers `None`) and cannot be linked (`link_current` does nothing).
pub trait TraceContext: Send + Sync + fmt::Debug {
    /// The trace context of the current span, when it is exported.
    fn current(&self) -> Option<TraceParent>;

    /// Adds a link from the current span to the span `to` names (a span of another
    /// trace: the previous drive of a resumed run).
    fn link_current(&self, to: &TraceParent);
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Fills `out` from `text`, exactly twice as many lowercase hex digits as `out` has bytes.
fn unhex(text: &str, out: &mut [u8]) -> bool {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if text.len() != out.len() * 2 {
        return false;
    }
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        match (digit(pair[0]), digit(pair[1])) {
            (Some(hi), Some(lo)) => *byte = hi << 4 | lo,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_contexts_are_refused() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333ü-01",
        ] {
            let error = bad.parse::<TraceParent>().expect_err(bad);
            assert!(error.to_string().contains("expected version 00"), "{error}");
        }
    }

    #[test]
    fn a_context_round_trips_through_json() {
        let tp: TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
            .parse()
            .expect("valid");
        assert!(!tp.sampled());
        let json = serde_json::to_value(tp).expect("serializes");
        assert_eq!(
            json,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        );
        assert_eq!(
            serde_json::from_value::<TraceParent>(json).expect("parses"),
            tp
        );
        assert!(serde_json::from_value::<TraceParent>("nope".into()).is_err());
    }
}

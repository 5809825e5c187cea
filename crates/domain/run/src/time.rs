//! `Timestamp`: a point in time, given to the domain by the caller's clock.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch (UTC). Serialized as an integer; shown as RFC 3339.
///
/// The domain never reads a clock: the engine's `Clock` produces timestamps, so tests can
/// fix time and runs are reproducible byte for byte.
///
/// ```
/// use rein_run::Timestamp;
/// let t = Timestamp::from_unix_millis(1_700_000_000_123);
/// assert_eq!(t.to_string(), "2023-11-14T22:13:20.123Z");
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Self = Self(0);

    /// A timestamp `millis` milliseconds after the Unix epoch.
    #[must_use]
    pub const fn from_unix_millis(millis: u64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the Unix epoch.
    #[must_use]
    pub const fn as_unix_millis(self) -> u64 {
        self.0
    }

    /// Milliseconds from `earlier` to `self`, zero if `earlier` is later.
    #[must_use]
    pub const fn millis_since(self, earlier: Self) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0 % 1000;
        let secs = self.0 / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    }
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's `civil_from_days`.
const fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(Timestamp::EPOCH.to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            Timestamp::from_unix_millis(951_782_400_000).to_string(),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            Timestamp::from_unix_millis(1_795_392_000_000).to_string(),
            "2026-11-23T00:00:00.000Z"
        );
    }
}

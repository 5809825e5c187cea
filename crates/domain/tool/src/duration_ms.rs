//! Serde helper: a [`Duration`] as whole milliseconds.
//!
//! Durations in rein's persisted forms (ledger entries, run snapshots, scenario files) are
//! integers of milliseconds, so they read well in JSON and round-trip exactly.
//!
//! ```
//! use std::time::Duration;
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Timed {
//!     #[serde(with = "rein_tool::duration_ms")]
//!     after: Duration,
//! }
//! let json = serde_json::to_string(&Timed { after: Duration::from_millis(1500) })?;
//! assert_eq!(json, r#"{"after":1500}"#);
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// Serializes `duration` as whole milliseconds (saturating at `u64::MAX`).
///
/// # Errors
/// Only those of the serializer.
pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// Deserializes whole milliseconds into a [`Duration`].
///
/// # Errors
/// When the value is not an unsigned integer.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    u64::deserialize(deserializer).map(Duration::from_millis)
}

/// The same helper for `Option<Duration>` (`null` or absent means `None`).
pub mod option {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes `Some(d)` as milliseconds and `None` as `null`.
    ///
    /// # Errors
    /// Only those of the serializer.
    pub fn serialize<S: Serializer>(
        duration: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match duration {
            Some(d) => super::serialize(d, serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Deserializes `null` or milliseconds.
    ///
    /// # Errors
    /// When the value is neither `null` nor an unsigned integer.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(deserializer)?.map(Duration::from_millis))
    }
}

//! `RunId`: the validated identity of a run.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};

/// The identity of a run: 1 to 128 ASCII letters, digits, `-` or `_`.
///
/// The alphabet is chosen so an id is always a safe file name: it cannot hold a path
/// separator, a dot or anything a shell would expand. The engine generates ids (uuid v7 by
/// default); callers may bring their own.
///
/// ```
/// use rein_run::RunId;
/// let id: RunId = "0193e5e2-7b1c-7cc0-9a57-31b0d5f3c2aa".parse()?;
/// assert_eq!(id.as_str().len(), 36);
/// assert!("../etc/passwd".parse::<RunId>().is_err());
/// # Ok::<(), rein_run::RunIdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct RunId(Arc<str>);

/// Why a string is not a [`RunId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid run id {value:?}: {reason}; use 1-128 ASCII letters, digits, '-' or '_'")]
pub struct RunIdError {
    /// The rejected value (cut to 140 characters).
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl RunId {
    /// The longest id accepted, in bytes.
    pub const MAX_LEN: usize = 128;

    /// Validates `id`.
    ///
    /// # Errors
    /// [`RunIdError`] naming the value when it is empty, longer than 128 bytes, or holds a
    /// character other than ASCII letters, digits, `-` and `_` (so no `/`, `\`, `.`).
    pub fn new(id: impl Into<String>) -> Result<Self, RunIdError> {
        let value = id.into();
        let reason = if value.is_empty() {
            Some("it is empty")
        } else if value.len() > Self::MAX_LEN {
            Some("it is longer than 128 bytes")
        } else if value.contains(['/', '\\']) {
            Some("it looks like a path")
        } else if !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            Some("it holds a character that is not allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(RunIdError {
                value: value.chars().take(140).collect(),
                reason,
            }),
            // Shared, not copied: a run's id is cloned into every entry of its ledger.
            None => Ok(Self(value.into())),
        }
    }

    /// The id as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for RunId {
    type Err = RunIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for RunId {
    type Error = RunIdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> Self {
        id.0.as_ref().to_owned()
    }
}

impl Serialize for RunId {
    /// The id as a string, borrowed (no copy per serialization: every ledger entry has one).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl AsRef<str> for RunId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_and_path_like_ids() {
        for (bad, reason) in [
            ("", "it is empty"),
            ("../x", "it looks like a path"),
            ("a/b", "it looks like a path"),
            ("a\\b", "it looks like a path"),
            ("..", "it holds a character that is not allowed"),
            ("a b", "it holds a character that is not allowed"),
            ("run\n", "it holds a character that is not allowed"),
        ] {
            let err = RunId::new(bad).unwrap_err();
            assert_eq!((err.value.as_str(), err.reason), (bad, reason));
        }
        assert_eq!(
            RunId::new("x".repeat(129)).unwrap_err().reason,
            "it is longer than 128 bytes"
        );
    }

    #[test]
    fn serde_validates() {
        assert!(serde_json::from_str::<RunId>(r#""ok_1-2""#).is_ok());
        assert!(serde_json::from_str::<RunId>(r#""/abs""#).is_err());
    }
}

//! `ToolName`: the validated name a tool is registered and called by.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The name of a tool: 1 to 64 ASCII characters, a letter first, then letters, digits,
/// `_`, `-` or `.` (so `fs.read` and `web_search` are names; `../x`, `a b` and `` are not).
///
/// ```
/// use rein_tool::ToolName;
/// let name: ToolName = "fs.read".parse()?;
/// assert_eq!(name.as_str(), "fs.read");
/// assert!("rm -rf".parse::<ToolName>().is_err());
/// # Ok::<(), rein_tool::ToolNameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ToolName(String);

/// Why a string is not a [`ToolName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid tool name {value:?}: {reason}; use 1-64 ASCII letters, digits, '_', '-' or '.', starting with a letter"
)]
pub struct ToolNameError {
    /// The rejected value.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl ToolName {
    /// The longest name accepted, in bytes.
    pub const MAX_LEN: usize = 64;

    /// Validates `name`.
    ///
    /// # Errors
    /// [`ToolNameError`] naming the value when it is empty, too long, does not start with a
    /// letter or holds a character other than ASCII letters, digits, `_`, `-` and `.`.
    pub fn new(name: impl Into<String>) -> Result<Self, ToolNameError> {
        let value = name.into();
        let reason = if value.is_empty() {
            Some("it is empty")
        } else if value.len() > Self::MAX_LEN {
            Some("it is longer than 64 bytes")
        } else if !value.as_bytes()[0].is_ascii_alphabetic() {
            Some("it does not start with a letter")
        } else if !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        {
            Some("it holds a character that is not allowed")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(ToolNameError { value, reason }),
            None => Ok(Self(value)),
        }
    }

    /// The name as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ToolName {
    type Err = ToolNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for ToolName {
    type Error = ToolNameError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl TryFrom<&str> for ToolName {
    type Error = ToolNameError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<ToolName> for String {
    fn from(name: ToolName) -> Self {
        name.0
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dotted_and_underscored_names() {
        for ok in ["a", "fs.read", "web_search", "tool-2", &"x".repeat(64)] {
            assert_eq!(ToolName::new(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn rejects_bad_names_with_the_value_and_reason() {
        for (bad, reason) in [
            ("", "it is empty"),
            ("1abc", "it does not start with a letter"),
            ("../etc", "it does not start with a letter"),
            ("a b", "it holds a character that is not allowed"),
            ("a/b", "it holds a character that is not allowed"),
            ("é", "it does not start with a letter"),
        ] {
            let err = ToolName::new(bad).unwrap_err();
            assert_eq!(err.value, bad);
            assert_eq!(err.reason, reason);
            assert!(err.to_string().contains(&format!("{bad:?}")));
        }
        assert_eq!(
            ToolName::new("x".repeat(65)).unwrap_err().reason,
            "it is longer than 64 bytes"
        );
    }

    #[test]
    fn serde_validates() {
        assert!(serde_json::from_str::<ToolName>(r#""ok.name""#).is_ok());
        let err = serde_json::from_str::<ToolName>(r#""no way""#).unwrap_err();
        assert!(err.to_string().contains("invalid tool name"));
    }
}

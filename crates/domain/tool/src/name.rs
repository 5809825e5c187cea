//! `ToolName`: the validated name a tool is registered and called by.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Serialize, Serializer};

/// The name of a tool: 1 to 64 ASCII characters, a letter first, then letters, digits,
/// `_`, `-` or `.` (so `fs.read` and `web_search` are names; `../x`, `a b` and the empty string are not).
///
/// ```
/// use rein_tool::ToolName;
/// let name: ToolName = "fs.read".parse()?;
/// assert_eq!(name.as_str(), "fs.read");
/// assert!("rm -rf".parse::<ToolName>().is_err());
/// # Ok::<(), rein_tool::ToolNameError>(())
/// ```
#[derive(Clone, Deserialize)]
#[serde(try_from = "String")]
pub struct ToolName {
    /// The name's bytes, kept inline: a name is short and is copied into every ledger entry
    /// and piece of evidence about its tool, so a clone copies 65 bytes instead of
    /// allocating (and, unlike an `Arc`, shares no count between the threads of concurrent
    /// runs). Validated ASCII, so always UTF-8. Equality, order and hash are the `str`'s.
    bytes: [u8; Self::MAX_LEN],
    len: u8,
}

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
            None => {
                let mut bytes = [0; Self::MAX_LEN];
                bytes[..value.len()].copy_from_slice(value.as_bytes());
                // At most MAX_LEN (64) bytes: fits in a u8.
                let len = u8::try_from(value.len()).unwrap_or(u8::MAX);
                Ok(Self { bytes, len })
            }
        }
    }

    /// The name's bytes: what equality and order compare, without the UTF-8 check
    /// [`as_str`](Self::as_str) makes (the same answers: a `str` compares as its bytes).
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The name as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        // ASCII by construction: the conversion cannot fail.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
        name.as_str().to_owned()
    }
}

impl fmt::Debug for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolName").field(&self.as_str()).finish()
    }
}

impl PartialEq for ToolName {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ToolName {}

impl PartialOrd for ToolName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for ToolName {
    /// As the `str` hashes, so maps keyed by names can be looked up with a `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl Serialize for ToolName {
    /// The name as a string, borrowed (no copy per serialization).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        self.as_str()
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
    fn compares_orders_and_hashes_as_its_str() {
        use std::collections::{BTreeSet, HashSet};
        use std::hash::BuildHasher;
        let names = ["web_search", "a", "fs.read", "b-2", "fs", &"z".repeat(64)];
        let mut by_name: Vec<ToolName> = names.iter().map(|n| ToolName::new(*n).unwrap()).collect();
        by_name.sort();
        let mut by_str = names.to_vec();
        by_str.sort_unstable();
        assert_eq!(
            by_name.iter().map(ToolName::as_str).collect::<Vec<_>>(),
            by_str
        );
        assert_eq!(
            by_name.iter().collect::<BTreeSet<_>>().len(),
            names.len(),
            "distinct names stay distinct"
        );
        let state = std::hash::RandomState::new();
        for n in names {
            let name = ToolName::new(n).unwrap();
            assert_eq!(state.hash_one(&name), state.hash_one(n));
            assert_eq!(name, ToolName::new(n.to_owned()).unwrap());
            assert_eq!(format!("{name:?}"), format!("ToolName({n:?})"));
        }
        let set: HashSet<ToolName> = names.iter().map(|n| ToolName::new(*n).unwrap()).collect();
        assert!(set.contains("fs.read"));
    }

    #[test]
    fn serde_validates() {
        assert!(serde_json::from_str::<ToolName>(r#""ok.name""#).is_ok());
        let err = serde_json::from_str::<ToolName>(r#""no way""#).unwrap_err();
        assert!(err.to_string().contains("invalid tool name"));
    }
}

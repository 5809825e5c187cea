//! `ArtifactId`: the content address of an artifact, safe to use as a file name.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Checksum;
use crate::digest::{self, DigestProblem};

/// The content address of an artifact: the SHA-256 of its bytes, as exactly 64 lowercase
/// hex digits.
///
/// Equal content has equal ids, so storing the same bytes twice stores them once. An id
/// holds nothing but `[0-9a-f]{64}`: no `/`, no `\`, no `.`, so a store that builds a path
/// from it (see [`ArtifactId::shard`]) can never leave its root. An invalid id cannot exist:
/// every way in ([`FromStr`], [`TryFrom`], serde) validates.
///
/// ```
/// use rein_artifact::ArtifactId;
///
/// let id = ArtifactId::of(b"abc");
/// assert_eq!(id.as_str(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
/// assert_eq!(id.to_string().parse::<ArtifactId>()?, id);
/// assert!("../../etc/passwd".parse::<ArtifactId>().is_err());
/// # Ok::<(), rein_artifact::ArtifactIdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ArtifactId(String);

/// Why a string is not an [`ArtifactId`].
///
/// ```
/// use rein_artifact::{ArtifactId, DigestProblem};
///
/// let err = "/etc/passwd".parse::<ArtifactId>().unwrap_err();
/// assert_eq!(err.value, "/etc/passwd");
/// assert_eq!(err.problem, DigestProblem::InvalidCharacter { found: '/', at: 0 });
/// assert!(err.to_string().starts_with("invalid artifact id \"/etc/passwd\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid artifact id {value:?}: {problem}; an artifact id is the SHA-256 of the content \
     as exactly 64 lowercase hex digits (0-9, a-f)"
)]
pub struct ArtifactIdError {
    /// The rejected value (its first 80 characters and `…` when longer).
    pub value: String,
    /// What is wrong with it.
    pub problem: DigestProblem,
}

impl ArtifactId {
    /// The length of an id, in bytes (and characters).
    pub const LEN: usize = digest::HEX_LEN;

    /// The length of the shard prefix returned by [`ArtifactId::shard`].
    pub const SHARD_LEN: usize = 2;

    /// Validates `id`: exactly 64 lowercase hex digits.
    ///
    /// ```
    /// use rein_artifact::ArtifactId;
    /// let id = ArtifactId::new("0".repeat(64))?;
    /// assert_eq!(id.as_str().len(), ArtifactId::LEN);
    /// assert!(ArtifactId::new("0".repeat(63)).is_err());
    /// # Ok::<(), rein_artifact::ArtifactIdError>(())
    /// ```
    ///
    /// # Errors
    /// [`ArtifactIdError`] naming the value and the [`DigestProblem`] when it is empty, holds
    /// anything but `0-9` and `a-f` (upper-case hex, `/`, `\`, `.`, `:` …) or is not exactly
    /// 64 characters long.
    pub fn new(id: impl Into<String>) -> Result<Self, ArtifactIdError> {
        let value = id.into();
        match digest::parse(&value) {
            Ok(_) => Ok(Self(value)),
            Err(problem) => Err(ArtifactIdError {
                value: digest::echo(&value),
                problem,
            }),
        }
    }

    /// The id of `bytes`: their SHA-256.
    ///
    /// ```
    /// use rein_artifact::ArtifactId;
    /// assert_eq!(ArtifactId::of(b"same"), ArtifactId::of(b"same"));
    /// assert_ne!(ArtifactId::of(b"same"), ArtifactId::of(b"other"));
    /// ```
    #[must_use]
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_digest(digest::sha256(bytes))
    }

    /// The id whose SHA-256 digest is `digest`.
    ///
    /// ```
    /// use rein_artifact::ArtifactId;
    /// let id = ArtifactId::from_digest([0xab; 32]);
    /// assert_eq!(id.as_str(), "ab".repeat(32));
    /// assert_eq!(id.digest(), [0xab; 32]);
    /// ```
    #[must_use]
    pub fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest::encode(&digest))
    }

    /// The 32 bytes of the SHA-256 digest.
    ///
    /// ```
    /// use rein_artifact::ArtifactId;
    /// let id = ArtifactId::of(b"abc");
    /// assert_eq!(id.digest()[0], 0xba);
    /// ```
    #[must_use]
    pub fn digest(&self) -> [u8; 32] {
        digest::decode_valid(&self.0)
    }

    /// The id as its 64 hex digits.
    ///
    /// ```
    /// use rein_artifact::ArtifactId;
    /// assert_eq!(ArtifactId::of(b"").as_str().len(), 64);
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Splits the id for a sharded folder layout: the first two hex digits name the folder,
    /// the other 62 the file, as in `<root>/ab/cdef…`.
    ///
    /// Two digits spread artifacts over 256 folders so no folder grows too large (git lays
    /// out its objects the same way). Both parts are hex digits only, so
    /// `root.join(folder).join(file)` is always a path inside `root`.
    ///
    /// ```
    /// use rein_artifact::ArtifactId;
    ///
    /// let id = ArtifactId::of(b"abc");
    /// let (folder, file) = id.shard();
    /// assert_eq!(folder, "ba");
    /// assert_eq!(file, "7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /// assert_eq!(format!("{folder}{file}"), id.as_str());
    /// ```
    #[must_use]
    pub fn shard(&self) -> (&str, &str) {
        self.0.split_at(Self::SHARD_LEN)
    }

    /// The checksum of the content this id addresses: the same digest, in checksum form.
    ///
    /// ```
    /// use rein_artifact::{ArtifactId, Checksum};
    /// let bytes = b"report";
    /// assert_eq!(ArtifactId::of(bytes).checksum(), Checksum::of(bytes));
    /// ```
    #[must_use]
    pub fn checksum(&self) -> Checksum {
        Checksum::from_digest(self.digest())
    }
}

impl fmt::Display for ArtifactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ArtifactId {
    type Err = ArtifactIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for ArtifactId {
    type Error = ArtifactIdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl TryFrom<&str> for ArtifactId {
    type Error = ArtifactIdError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<ArtifactId> for String {
    fn from(id: ArtifactId) -> Self {
        id.0
    }
}

impl From<Checksum> for ArtifactId {
    fn from(checksum: Checksum) -> Self {
        checksum.artifact_id()
    }
}

impl AsRef<str> for ArtifactId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for ArtifactId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Parses `text` and expects the same id back.
    fn accepts(text: &str) {
        assert_eq!(text.parse::<ArtifactId>().unwrap().as_str(), text);
    }

    /// Parses `text` and expects an error naming the value, `problem`, and what is allowed.
    fn rejects(text: &str, problem: DigestProblem) {
        let err = text.parse::<ArtifactId>().unwrap_err();
        assert_eq!(err.problem, problem, "{text:?}");
        assert_eq!(err.value, digest::echo(text));
        let message = err.to_string();
        assert!(message.contains(&format!("{:?}", err.value)), "{message}");
        assert!(message.contains("64 lowercase hex digits"), "{message}");
    }

    #[test]
    fn accepts_exactly_64_lowercase_hex_digits() {
        accepts(&"0".repeat(64));
        accepts(&"f".repeat(64));
        accepts("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn rejects_traversal_and_look_alikes() {
        use DigestProblem::{Empty, InvalidCharacter, WrongLength};
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        rejects("", Empty);
        rejects("..", InvalidCharacter { found: '.', at: 0 });
        rejects(".", InvalidCharacter { found: '.', at: 0 });
        rejects("../x", InvalidCharacter { found: '.', at: 0 });
        rejects("/etc/passwd", InvalidCharacter { found: '/', at: 0 });
        rejects("..\\..\\x", InvalidCharacter { found: '.', at: 0 });
        rejects(
            &format!("ab/{}", &hex[3..]),
            InvalidCharacter { found: '/', at: 2 },
        );
        rejects(
            &format!("ab\\{}", &hex[3..]),
            InvalidCharacter { found: '\\', at: 2 },
        );
        rejects(
            &format!("{}.", &hex[1..]),
            InvalidCharacter { found: '.', at: 63 },
        );
        rejects(&hex.to_uppercase(), InvalidCharacter { found: 'B', at: 0 });
        rejects(
            &format!("sha256:{hex}"),
            InvalidCharacter { found: 's', at: 0 },
        );
        rejects(&format!(" {hex}"), InvalidCharacter { found: ' ', at: 0 });
        rejects(
            &format!("{hex}\n"),
            InvalidCharacter {
                found: '\n',
                at: 64,
            },
        );
        rejects(&hex[..63], WrongLength { len: 63 });
        rejects(&format!("{hex}0"), WrongLength { len: 65 });
        rejects(&"a".repeat(1000), WrongLength { len: 1000 });
    }

    #[test]
    fn errors_cut_long_values() {
        let err = "a".repeat(1000).parse::<ArtifactId>().unwrap_err();
        assert_eq!(err.value, format!("{}…", "a".repeat(80)));
        assert!(err.to_string().len() < 300, "{err}");
    }

    #[test]
    fn shard_splits_after_two_digits() {
        let id = ArtifactId::of(b"");
        assert_eq!(
            id.shard(),
            (
                "e3",
                "b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
            )
        );
    }

    #[test]
    fn serde_is_the_plain_string_and_validates() {
        let id = ArtifactId::of(b"abc");
        assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{id}\""));
        for bad in [r#""../x""#, r#""""#, "42", "null"] {
            assert!(serde_json::from_str::<ArtifactId>(bad).is_err(), "{bad}");
        }
        let err = serde_json::from_str::<ArtifactId>(r#""/etc/passwd""#).unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid artifact id \"/etc/passwd\""),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn any_digest_round_trips(bytes in any::<[u8; 32]>()) {
            let id = ArtifactId::from_digest(bytes);
            prop_assert_eq!(id.digest(), bytes);
            prop_assert_eq!(&id.to_string().parse::<ArtifactId>().unwrap(), &id);
            let json = serde_json::to_string(&id).unwrap();
            prop_assert_eq!(&serde_json::from_str::<ArtifactId>(&json).unwrap(), &id);
            prop_assert_eq!(&ArtifactId::from(id.checksum()), &id);
            let (folder, file) = id.shard();
            prop_assert_eq!((folder.len(), file.len()), (2, 62));
        }

        #[test]
        fn a_parsed_id_never_holds_a_path_character(text in "[0-9a-fA-F./\\\\]{60,68}|\\PC{0,80}") {
            if let Ok(id) = text.parse::<ArtifactId>() {
                prop_assert_eq!(id.as_str().len(), 64);
                let lower_hex = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
                prop_assert!(id.as_str().bytes().all(lower_hex));
            }
        }
    }
}

//! `Checksum`: the `sha256:<hex>` checksum of an artifact's content, and how to verify it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ArtifactId;
use crate::digest::{self, DigestProblem};

/// The SHA-256 checksum of some content, written `sha256:<64 lowercase hex digits>`.
///
/// An artifact's checksum and its [`ArtifactId`] carry the same digest: the id names the
/// content, the checksum states which algorithm vouches for it. Convert between them with
/// [`ArtifactId::checksum`] and [`Checksum::artifact_id`].
///
/// ```
/// use rein_artifact::Checksum;
///
/// let sum = Checksum::of(b"abc");
/// assert_eq!(
///     sum.to_string(),
///     "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// assert_eq!(sum.to_string().parse::<Checksum>()?, sum);
/// assert!(sum.verify(b"abc").is_ok());
/// assert!(sum.verify(b"abd").is_err());
/// # Ok::<(), rein_artifact::ChecksumError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Checksum([u8; 32]);

/// Why a string is not a [`Checksum`].
///
/// ```
/// use rein_artifact::{Checksum, ChecksumProblem};
///
/// let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
/// let err = hex.parse::<Checksum>().unwrap_err();
/// assert_eq!(err.problem, ChecksumProblem::MissingPrefix);
/// assert!(err.to_string().contains("write a checksum as \"sha256:\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid checksum {value:?}: {problem}; write a checksum as \"sha256:\" followed by 64 \
     lowercase hex digits (0-9, a-f)"
)]
pub struct ChecksumError {
    /// The rejected value (its first 80 characters and `…` when longer).
    pub value: String,
    /// What is wrong with it.
    pub problem: ChecksumProblem,
}

/// What is wrong with a string that is not a [`Checksum`].
///
/// ```
/// use rein_artifact::{Checksum, ChecksumProblem, DigestProblem};
///
/// let err = "md5:0cc175b9c0f1b6a831c399e269772661".parse::<Checksum>().unwrap_err();
/// assert_eq!(err.problem, ChecksumProblem::UnsupportedAlgorithm { algorithm: "md5".into() });
/// let err = "sha256:abc".parse::<Checksum>().unwrap_err();
/// assert_eq!(err.problem, ChecksumProblem::Digest(DigestProblem::WrongLength { len: 3 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChecksumProblem {
    /// The text has no `algorithm:` prefix at all.
    #[error("it does not start with \"sha256:\"")]
    MissingPrefix,
    /// The text names an algorithm other than `sha256` (names are case-sensitive).
    #[error("algorithm {algorithm:?} is not supported, only \"sha256\" is")]
    UnsupportedAlgorithm {
        /// The algorithm named (its first 80 characters and `…` when longer).
        algorithm: String,
    },
    /// The digest after `sha256:` is not 64 lowercase hex digits.
    #[error("the digest after \"sha256:\" is invalid: {0}")]
    Digest(DigestProblem),
}

/// Content did not match the checksum it was expected to have.
///
/// ```
/// use rein_artifact::Checksum;
///
/// let err = Checksum::of(b"good").verify(b"evil").unwrap_err();
/// assert_eq!(err.expected, Checksum::of(b"good"));
/// assert_eq!(err.actual, Checksum::of(b"evil"));
/// assert!(err.to_string().starts_with("checksum mismatch: expected sha256:"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[error(
    "checksum mismatch: expected {expected}, got {actual}; the content was changed or \
     corrupted, fetch or write it again from a good copy"
)]
pub struct ChecksumMismatch {
    /// The checksum the content should have.
    pub expected: Checksum,
    /// The checksum the content has.
    pub actual: Checksum,
}

impl Checksum {
    /// The algorithm's name, as it appears before the `:`.
    pub const ALGORITHM: &'static str = "sha256";

    /// The text every checksum starts with: the algorithm and a `:`.
    pub const PREFIX: &'static str = "sha256:";

    /// The checksum of `bytes`.
    ///
    /// ```
    /// use rein_artifact::Checksum;
    /// assert_eq!(Checksum::of(b"x"), Checksum::of(b"x"));
    /// assert_ne!(Checksum::of(b"x"), Checksum::of(b"y"));
    /// ```
    #[must_use]
    pub fn of(bytes: &[u8]) -> Self {
        Self(digest::sha256(bytes))
    }

    /// The checksum whose SHA-256 digest is `digest`.
    ///
    /// ```
    /// use rein_artifact::Checksum;
    /// let sum = Checksum::from_digest([0; 32]);
    /// assert_eq!(sum.to_string(), format!("sha256:{}", "0".repeat(64)));
    /// ```
    #[must_use]
    pub const fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    /// The 32 bytes of the SHA-256 digest.
    ///
    /// ```
    /// use rein_artifact::Checksum;
    /// assert_eq!(Checksum::from_digest([7; 32]).digest(), &[7; 32]);
    /// ```
    #[must_use]
    pub const fn digest(&self) -> &[u8; 32] {
        &self.0
    }

    /// Checks that `bytes` have this checksum.
    ///
    /// ```
    /// use rein_artifact::Checksum;
    /// let sum = Checksum::of(b"payload");
    /// assert_eq!(sum.verify(b"payload"), Ok(()));
    /// assert_eq!(sum.verify(b"Payload").unwrap_err().actual, Checksum::of(b"Payload"));
    /// ```
    ///
    /// # Errors
    /// [`ChecksumMismatch`] with both checksums when the content differs.
    pub fn verify(&self, bytes: &[u8]) -> Result<(), ChecksumMismatch> {
        let actual = Self::of(bytes);
        if actual == *self {
            Ok(())
        } else {
            Err(ChecksumMismatch {
                expected: *self,
                actual,
            })
        }
    }

    /// The id of the content this checksum vouches for: the same digest, in id form.
    ///
    /// ```
    /// use rein_artifact::{ArtifactId, Checksum};
    /// assert_eq!(Checksum::of(b"abc").artifact_id(), ArtifactId::of(b"abc"));
    /// ```
    #[must_use]
    pub fn artifact_id(&self) -> ArtifactId {
        ArtifactId::from_digest(self.0)
    }

    /// Validates `text`: `sha256:` and 64 lowercase hex digits.
    fn parse(text: &str) -> Result<Self, ChecksumProblem> {
        let Some(hex) = text.strip_prefix(Self::PREFIX) else {
            return Err(match text.split_once(':') {
                Some((algorithm, _)) => ChecksumProblem::UnsupportedAlgorithm {
                    algorithm: digest::echo(algorithm),
                },
                None => ChecksumProblem::MissingPrefix,
            });
        };
        digest::parse(hex)
            .map(Self)
            .map_err(ChecksumProblem::Digest)
    }
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::PREFIX)?;
        f.write_str(&digest::encode(&self.0))
    }
}

impl fmt::Debug for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Checksum({self})")
    }
}

impl FromStr for Checksum {
    type Err = ChecksumError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).map_err(|problem| ChecksumError {
            value: digest::echo(s),
            problem,
        })
    }
}

impl TryFrom<String> for Checksum {
    type Error = ChecksumError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl TryFrom<&str> for Checksum {
    type Error = ChecksumError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Checksum> for String {
    fn from(checksum: Checksum) -> Self {
        checksum.to_string()
    }
}

impl From<&ArtifactId> for Checksum {
    fn from(id: &ArtifactId) -> Self {
        id.checksum()
    }
}

impl From<ArtifactId> for Checksum {
    fn from(id: ArtifactId) -> Self {
        id.checksum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HEX: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    /// Parses `text` and expects it to print the same way.
    fn accepts(text: &str) {
        assert_eq!(text.parse::<Checksum>().unwrap().to_string(), text);
    }

    /// Parses `text` and expects an error naming the value, `problem`, and the right form.
    fn rejects(text: &str, problem: ChecksumProblem) {
        let err = text.parse::<Checksum>().unwrap_err();
        let expected = ChecksumError {
            value: digest::echo(text),
            problem,
        };
        assert_eq!(err, expected, "{text:?}");
        let message = err.to_string();
        assert!(message.contains(&format!("{:?}", err.value)), "{message}");
        assert!(message.contains("write a checksum as"), "{message}");
    }

    #[test]
    fn accepts_the_sha256_form() {
        accepts(&format!("sha256:{HEX}"));
        assert_eq!(Checksum::of(b"abc").to_string(), format!("sha256:{HEX}"));
    }

    #[test]
    fn rejects_everything_else_with_a_typed_problem() {
        use ChecksumProblem::{Digest, MissingPrefix, UnsupportedAlgorithm};
        use DigestProblem::{Empty, InvalidCharacter, WrongLength};
        let algorithm = |name: &str| UnsupportedAlgorithm {
            algorithm: name.into(),
        };
        rejects("", MissingPrefix);
        rejects(HEX, MissingPrefix);
        rejects("../x", MissingPrefix);
        rejects("/etc/passwd", MissingPrefix);
        rejects(&format!("SHA256:{HEX}"), algorithm("SHA256"));
        rejects(&format!("sha-256:{HEX}"), algorithm("sha-256"));
        rejects(&format!("sha256 :{HEX}"), algorithm("sha256 "));
        rejects(
            &format!("{}:x", "m".repeat(100)),
            algorithm(&digest::echo(&"m".repeat(100))),
        );
        rejects("sha256:", Digest(Empty));
        rejects(
            "sha256:../x",
            Digest(InvalidCharacter { found: '.', at: 0 }),
        );
        rejects(
            &format!("sha256:{}", HEX.to_uppercase()),
            Digest(InvalidCharacter { found: 'B', at: 0 }),
        );
        rejects(
            &format!("sha256:{}", &HEX[..63]),
            Digest(WrongLength { len: 63 }),
        );
        rejects(&format!("sha256:{HEX}0"), Digest(WrongLength { len: 65 }));
        rejects(
            &format!("sha256:sha256:{HEX}"),
            Digest(InvalidCharacter { found: 's', at: 0 }),
        );
    }

    #[test]
    fn verify_reports_both_checksums() {
        let err = Checksum::of(b"a").verify(b"b").unwrap_err();
        assert_eq!(
            err,
            ChecksumMismatch {
                expected: Checksum::of(b"a"),
                actual: Checksum::of(b"b")
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "checksum mismatch: expected {}, got {}; the content was changed or corrupted, \
                 fetch or write it again from a good copy",
                Checksum::of(b"a"),
                Checksum::of(b"b")
            )
        );
    }

    #[test]
    fn mismatch_round_trips_through_serde() {
        let err = Checksum::of(b"a").verify(b"b").unwrap_err();
        let json = serde_json::to_value(err).unwrap();
        assert_eq!(json["expected"], Checksum::of(b"a").to_string());
        assert_eq!(
            serde_json::from_value::<ChecksumMismatch>(json).unwrap(),
            err
        );
    }

    #[test]
    fn serde_is_the_text_form_and_validates() {
        let sum = Checksum::of(b"abc");
        assert_eq!(
            serde_json::to_string(&sum).unwrap(),
            format!("\"sha256:{HEX}\"")
        );
        let err = serde_json::from_str::<Checksum>(&format!("\"{HEX}\"")).unwrap_err();
        assert!(
            err.to_string().contains("does not start with \"sha256:\""),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn any_digest_round_trips(bytes in any::<[u8; 32]>()) {
            let sum = Checksum::from_digest(bytes);
            prop_assert_eq!(sum.digest(), &bytes);
            prop_assert_eq!(sum.to_string().parse::<Checksum>().unwrap(), sum);
            let json = serde_json::to_string(&sum).unwrap();
            prop_assert_eq!(serde_json::from_str::<Checksum>(&json).unwrap(), sum);
            prop_assert_eq!(sum.artifact_id().checksum(), sum);
            prop_assert_eq!(sum.artifact_id().digest(), bytes);
        }

        #[test]
        fn verify_detects_any_flipped_bit(
            content in proptest::collection::vec(any::<u8>(), 1..512),
            index in any::<proptest::sample::Index>(),
            bit in 0u8..8,
        ) {
            let sum = Checksum::of(&content);
            prop_assert_eq!(sum.verify(&content), Ok(()));
            let mut tampered = content.clone();
            tampered[index.index(content.len())] ^= 1 << bit;
            let err = sum.verify(&tampered).unwrap_err();
            let expected = ChecksumMismatch { expected: sum, actual: Checksum::of(&tampered) };
            prop_assert_eq!(err, expected);
        }
    }
}

//! `ArtifactRef`: what evidence and the ledger keep instead of an artifact's bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::options::default_content_type;
use crate::{ArtifactError, ArtifactId, Checksum, StoreOptions};

/// A reference to stored content: its id, name, size, content type, checksum and metadata.
///
/// A run's evidence holds references, not bytes; the bytes live in an
/// [`ArtifactStore`](crate::ArtifactStore). A reference is consistent by construction: its
/// id and checksum carry the same SHA-256 digest, which deserialization checks too. Build
/// one with [`ArtifactRef::for_content`]; check content against it with
/// [`ArtifactRef::verify`].
///
/// ```
/// use rein_artifact::{ArtifactId, ArtifactRef, StoreOptions};
///
/// let bytes = b"{\"rows\": 3}";
/// let reference = ArtifactRef::for_content(
///     bytes,
///     StoreOptions::new().with_name("rows.json").with_content_type("application/json"),
/// );
/// assert_eq!(reference.id(), &ArtifactId::of(bytes));
/// assert_eq!(reference.size(), 11);
/// assert_eq!(reference.name(), Some("rows.json"));
/// assert!(reference.verify(bytes).is_ok());
///
/// let json = serde_json::to_string(&reference)?;
/// assert_eq!(serde_json::from_str::<ArtifactRef>(&json)?, reference);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArtifactRef {
    id: ArtifactId,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    size: u64,
    content_type: String,
    checksum: Checksum,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, String>,
}

/// The serialized shape of an [`ArtifactRef`], before its consistency is checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unchecked {
    id: ArtifactId,
    #[serde(default)]
    name: Option<String>,
    size: u64,
    #[serde(default = "default_content_type")]
    content_type: String,
    checksum: Checksum,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

impl ArtifactRef {
    /// The reference for `bytes` stored with `options`: id, checksum and size computed from
    /// the bytes, the rest taken from the options.
    ///
    /// ```
    /// use rein_artifact::{ArtifactRef, Checksum, StoreOptions};
    ///
    /// let reference = ArtifactRef::for_content(b"hello", StoreOptions::default());
    /// assert_eq!(reference.checksum(), &Checksum::of(b"hello"));
    /// assert_eq!(reference.size(), 5);
    /// assert_eq!(reference.content_type(), "application/octet-stream");
    /// ```
    #[must_use]
    pub fn for_content(bytes: &[u8], options: StoreOptions) -> Self {
        let checksum = Checksum::of(bytes);
        let (name, content_type, metadata) = options.into_parts();
        Self {
            id: checksum.artifact_id(),
            name,
            size: byte_len(bytes),
            content_type,
            checksum,
            metadata,
        }
    }

    /// Checks that `bytes` are the content this reference describes: same checksum, same
    /// size. Stores call it on every read.
    ///
    /// ```
    /// use rein_artifact::{ArtifactError, ArtifactRef, StoreOptions};
    ///
    /// let reference = ArtifactRef::for_content(b"original", StoreOptions::default());
    /// assert!(reference.verify(b"original").is_ok());
    /// assert!(matches!(
    ///     reference.verify(b"tampered"),
    ///     Err(ArtifactError::ChecksumMismatch { .. })
    /// ));
    /// ```
    ///
    /// # Errors
    /// - [`ArtifactError::ChecksumMismatch`] when the bytes have another checksum.
    /// - [`ArtifactError::Corrupt`] when the checksum matches but the recorded size does not
    ///   (the reference itself was damaged).
    pub fn verify(&self, bytes: &[u8]) -> Result<(), ArtifactError> {
        self.checksum
            .verify(bytes)
            .map_err(|mismatch| ArtifactError::ChecksumMismatch {
                id: self.id.clone(),
                expected: mismatch.expected,
                actual: mismatch.actual,
            })?;
        let actual = byte_len(bytes);
        if actual != self.size {
            return Err(ArtifactError::Corrupt {
                id: self.id.clone(),
                reason: format!(
                    "its reference records {} bytes but the content has {actual}",
                    self.size
                ),
            });
        }
        Ok(())
    }

    /// The content address.
    ///
    /// ```
    /// use rein_artifact::{ArtifactId, ArtifactRef, StoreOptions};
    /// let reference = ArtifactRef::for_content(b"x", StoreOptions::default());
    /// assert_eq!(reference.id(), &ArtifactId::of(b"x"));
    /// ```
    #[must_use]
    pub const fn id(&self) -> &ArtifactId {
        &self.id
    }

    /// The name given when the content was stored, if any. A label, never a path.
    ///
    /// ```
    /// use rein_artifact::{ArtifactRef, StoreOptions};
    /// let reference = ArtifactRef::for_content(b"x", StoreOptions::new().with_name("x.txt"));
    /// assert_eq!(reference.name(), Some("x.txt"));
    /// ```
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The content's size in bytes.
    ///
    /// ```
    /// use rein_artifact::{ArtifactRef, StoreOptions};
    /// assert_eq!(ArtifactRef::for_content(&[0; 42], StoreOptions::default()).size(), 42);
    /// ```
    #[must_use]
    pub const fn size(&self) -> u64 {
        self.size
    }

    /// The content's media type, `application/octet-stream` unless one was given.
    ///
    /// ```
    /// use rein_artifact::{ArtifactRef, StoreOptions};
    /// let options = StoreOptions::new().with_content_type("text/plain");
    /// assert_eq!(ArtifactRef::for_content(b"x", options).content_type(), "text/plain");
    /// ```
    #[must_use]
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// The content's checksum; it carries the same digest as [`ArtifactRef::id`].
    ///
    /// ```
    /// use rein_artifact::{ArtifactRef, StoreOptions};
    /// let reference = ArtifactRef::for_content(b"x", StoreOptions::default());
    /// assert_eq!(reference.checksum(), &reference.id().checksum());
    /// ```
    #[must_use]
    pub const fn checksum(&self) -> &Checksum {
        &self.checksum
    }

    /// The metadata given when the content was stored, sorted by key.
    ///
    /// ```
    /// use rein_artifact::{ArtifactRef, StoreOptions};
    /// let options = StoreOptions::new().with_metadata("step", "3");
    /// assert_eq!(ArtifactRef::for_content(b"x", options).metadata()["step"], "3");
    /// ```
    #[must_use]
    pub const fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }
}

impl<'de> Deserialize<'de> for ArtifactRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Unchecked {
            id,
            name,
            size,
            content_type,
            checksum,
            metadata,
        } = Unchecked::deserialize(deserializer)?;
        if id.digest() != *checksum.digest() {
            return Err(serde::de::Error::custom(format_args!(
                "inconsistent artifact reference: id {id} does not match checksum {checksum}; \
                 an artifact's id must be the SHA-256 digest its checksum carries"
            )));
        }
        Ok(Self {
            id,
            name,
            size,
            content_type,
            checksum,
            metadata,
        })
    }
}

/// The length of `bytes` as a `u64` (lossless on every platform Rust supports).
fn byte_len(bytes: &[u8]) -> u64 {
    u64::try_from(bytes.len()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn sample() -> ArtifactRef {
        ArtifactRef::for_content(
            b"abc",
            StoreOptions::new()
                .with_name("abc.txt")
                .with_content_type("text/plain")
                .with_metadata("run", "r-1"),
        )
    }

    #[test]
    fn serializes_fields_in_declaration_order() {
        let json = serde_json::to_string(&sample()).unwrap();
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(
            json,
            format!(
                r#"{{"id":"{hex}","name":"abc.txt","size":3,"content_type":"text/plain","checksum":"sha256:{hex}","metadata":{{"run":"r-1"}}}}"#
            )
        );
    }

    #[test]
    fn optional_fields_are_omitted_and_defaulted() {
        let reference = ArtifactRef::for_content(b"", StoreOptions::default());
        let json = serde_json::to_value(&reference).unwrap();
        assert_eq!(
            json.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["checksum", "content_type", "id", "size"]
        );
        let minimal = json!({"id": reference.id(), "size": 0, "checksum": reference.checksum()});
        assert_eq!(
            serde_json::from_value::<ArtifactRef>(minimal).unwrap(),
            reference
        );
    }

    /// Deserializes `json` and expects an error whose message contains `needle`.
    fn check_rejected(json: &Value, needle: &str) {
        let err = serde_json::from_value::<ArtifactRef>(json.clone()).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }

    #[test]
    fn deserialize_rejects_inconsistent_or_unknown_input() {
        let good = serde_json::to_value(sample()).unwrap();

        let mut other_checksum = good.clone();
        other_checksum["checksum"] = json!(Checksum::of(b"abd"));
        check_rejected(&other_checksum, "inconsistent artifact reference");

        let mut extra = good.clone();
        extra["path"] = json!("../../etc/passwd");
        check_rejected(&extra, "unknown field `path`");

        let mut traversal = good.clone();
        traversal["id"] = json!("../x");
        check_rejected(&traversal, "invalid artifact id \"../x\"");

        let mut bare = good.clone();
        bare["checksum"] = good["id"].clone();
        check_rejected(&bare, "does not start with \"sha256:\"");

        let mut missing = good;
        missing.as_object_mut().unwrap().remove("size");
        check_rejected(&missing, "missing field `size`");
    }

    #[test]
    fn verify_names_the_artifact() {
        let reference = sample();
        match reference.verify(b"abd") {
            Err(ArtifactError::ChecksumMismatch {
                id,
                expected,
                actual,
            }) => {
                assert_eq!(id, *reference.id());
                assert_eq!(expected, *reference.checksum());
                assert_eq!(actual, Checksum::of(b"abd"));
            }
            other => panic!("expected a checksum mismatch, got {other:?}"),
        }
    }

    #[test]
    fn verify_catches_a_damaged_size() {
        let mut json = serde_json::to_value(sample()).unwrap();
        json["size"] = json!(4);
        let damaged: ArtifactRef = serde_json::from_value(json).unwrap();
        match damaged.verify(b"abc") {
            Err(ArtifactError::Corrupt { id, reason }) => {
                assert_eq!(id, ArtifactId::of(b"abc"));
                assert_eq!(
                    reason,
                    "its reference records 4 bytes but the content has 3"
                );
            }
            other => panic!("expected corrupt, got {other:?}"),
        }
    }

    proptest! {
        #[test]
        fn for_content_is_consistent_and_round_trips(
            content in proptest::collection::vec(any::<u8>(), 0..256),
            name in proptest::option::of("\\PC{0,16}"),
            content_type in "[a-z]{1,8}/[a-z0-9.+-]{1,12}",
            metadata in proptest::collection::btree_map("\\PC{0,8}", "\\PC{0,8}", 0..4),
        ) {
            let mut options = StoreOptions::new()
                .with_content_type(content_type.clone())
                .with_metadata_entries(metadata.clone());
            if let Some(name) = &name {
                options = options.with_name(name.clone());
            }
            let reference = ArtifactRef::for_content(&content, options);
            prop_assert_eq!(reference.id(), &ArtifactId::of(&content));
            prop_assert_eq!(reference.checksum(), &Checksum::of(&content));
            prop_assert_eq!(reference.size(), content.len() as u64);
            prop_assert_eq!(reference.name(), name.as_deref());
            prop_assert_eq!(reference.content_type(), content_type.as_str());
            prop_assert_eq!(reference.metadata(), &metadata);
            prop_assert!(reference.verify(&content).is_ok());

            let json = serde_json::to_string(&reference).unwrap();
            prop_assert_eq!(serde_json::from_str::<ArtifactRef>(&json).unwrap(), reference);
        }
    }
}

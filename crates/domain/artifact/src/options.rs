//! `StoreOptions`: what a caller says about content when storing it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The name, content type and metadata to record with content that is stored.
///
/// None of it affects the [`ArtifactId`](crate::ArtifactId): that comes from the bytes alone.
/// The name is a label for people and planners, never a path; stores address content by id
/// only.
///
/// ```
/// use rein_artifact::StoreOptions;
///
/// let options = StoreOptions::default()
///     .with_name("report.md")
///     .with_content_type("text/markdown")
///     .with_metadata("tool", "summarize");
/// assert_eq!(options.name(), Some("report.md"));
/// assert_eq!(options.content_type(), "text/markdown");
/// assert_eq!(options.metadata()["tool"], "summarize");
///
/// let plain = StoreOptions::default();
/// assert_eq!(plain.name(), None);
/// assert_eq!(plain.content_type(), "application/octet-stream");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default = "default_content_type")]
    content_type: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, String>,
}

pub(crate) fn default_content_type() -> String {
    StoreOptions::DEFAULT_CONTENT_TYPE.to_owned()
}

impl StoreOptions {
    /// The content type recorded when none is given: arbitrary bytes.
    pub const DEFAULT_CONTENT_TYPE: &'static str = "application/octet-stream";

    /// No name, content type `application/octet-stream`, no metadata. Same as `default()`.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// assert_eq!(StoreOptions::new(), StoreOptions::default());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the name: a label such as `report.md`, shown to people and planners.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// assert_eq!(StoreOptions::new().with_name("out.json").name(), Some("out.json"));
    /// ```
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the content type, as a media type such as `application/json`.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// let options = StoreOptions::new().with_content_type("application/json");
    /// assert_eq!(options.content_type(), "application/json");
    /// ```
    #[must_use]
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = content_type.into();
        self
    }

    /// Adds one metadata entry, replacing any earlier value under the same key.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// let options = StoreOptions::new().with_metadata("run", "r1").with_metadata("run", "r2");
    /// assert_eq!(options.metadata().len(), 1);
    /// assert_eq!(options.metadata()["run"], "r2");
    /// ```
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Adds every entry of `entries`, replacing earlier values under the same keys.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// let options = StoreOptions::new().with_metadata_entries([("a", "1"), ("b", "2")]);
    /// assert_eq!(options.metadata().keys().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    #[must_use]
    pub fn with_metadata_entries<K, V>(mut self, entries: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        self.metadata
            .extend(entries.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The name, if one was given.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// assert_eq!(StoreOptions::new().name(), None);
    /// ```
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The content type.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// assert_eq!(StoreOptions::new().content_type(), StoreOptions::DEFAULT_CONTENT_TYPE);
    /// ```
    #[must_use]
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// The metadata, sorted by key.
    ///
    /// ```
    /// use rein_artifact::StoreOptions;
    /// assert!(StoreOptions::new().metadata().is_empty());
    /// ```
    #[must_use]
    pub const fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// Takes the parts: name, content type and metadata.
    pub(crate) fn into_parts(self) -> (Option<String>, String, BTreeMap<String, String>) {
        (self.name, self.content_type, self.metadata)
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            name: None,
            content_type: default_content_type(),
            metadata: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_serializes_to_the_content_type_only() {
        let json = serde_json::to_value(StoreOptions::default()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"content_type": "application/octet-stream"})
        );
        assert_eq!(
            serde_json::from_str::<StoreOptions>("{}").unwrap(),
            StoreOptions::default()
        );
    }

    #[test]
    fn deserialize_rejects_unknown_fields() {
        let err = serde_json::from_str::<StoreOptions>(r#"{"path": "/etc/passwd"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `path`"), "{err}");
    }

    proptest! {
        #[test]
        fn serde_round_trips(
            name in proptest::option::of("\\PC{0,20}"),
            content_type in "\\PC{0,20}",
            metadata in proptest::collection::btree_map("\\PC{0,8}", "\\PC{0,8}", 0..4),
        ) {
            let mut options = StoreOptions::new()
                .with_content_type(content_type)
                .with_metadata_entries(metadata);
            if let Some(name) = name {
                options = options.with_name(name);
            }
            let json = serde_json::to_string(&options).unwrap();
            prop_assert_eq!(serde_json::from_str::<StoreOptions>(&json).unwrap(), options);
        }
    }
}

//! `Attachment`: bytes a tool hands back beside its JSON output, stored as an artifact.

/// A file a tool returns beside its JSON output: a name, a media type and bounded bytes.
///
/// The engine moves each attachment of a [`ToolOutput`](crate::ToolOutput) into the artifact
/// store and records the link in the ledger next to the call (a `tool_attachment` entry), so
/// the output's JSON can stay small and name the attachment instead. An attachment is
/// bounded when it is built: more than [`Attachment::MAX_BYTES`] bytes is a typed error,
/// never an unbounded buffer.
///
/// ```
/// use rein_tool::{Attachment, AttachmentError, ToolOutput};
/// use serde_json::json;
///
/// let log = Attachment::new("stdout", "text/plain", b"a long log".to_vec())?;
/// let out = ToolOutput::new(json!({"stdout": "a long…", "full_output": "stdout"})).with_attachment(log)?;
/// assert_eq!(out.attachments()[0].name(), "stdout");
///
/// let huge = vec![0; Attachment::MAX_BYTES + 1];
/// assert!(matches!(Attachment::new("big", "application/octet-stream", huge), Err(AttachmentError::TooLarge { .. })));
/// # Ok::<(), AttachmentError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Attachment {
    name: String,
    media_type: String,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The bytes can be megabytes: show their size, not their content.
        f.debug_struct("Attachment")
            .field("name", &self.name)
            .field("media_type", &self.media_type)
            .field("size", &self.bytes.len())
            .finish()
    }
}

/// Why an [`Attachment`] could not be built or added to an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AttachmentError {
    /// The bytes are over the limit.
    #[error(
        "attachment `{name}` has {size} bytes, more than the {limit} an attachment may hold; \
         keep less (or write it into the workspace and return its path)"
    )]
    TooLarge {
        /// The attachment's name.
        name: String,
        /// Its size in bytes.
        size: usize,
        /// The limit, [`Attachment::MAX_BYTES`].
        limit: usize,
    },
    /// The name is empty, too long or holds a control character or a `/`.
    #[error(
        "attachment name `{name}` is not valid: use 1 to {max} characters, no `/` and no \
         control characters",
        max = Attachment::MAX_NAME_CHARS
    )]
    InvalidName {
        /// The name, clipped.
        name: String,
    },
    /// The media type is not `type/subtype`.
    #[error(
        "attachment media type `{media_type}` is not valid: use `type/subtype`, e.g. `text/plain`"
    )]
    InvalidMediaType {
        /// The media type, clipped.
        media_type: String,
    },
    /// The output already holds the most attachments it may.
    #[error("a tool output may hold at most {limit} attachments; return fewer")]
    TooMany {
        /// The limit, [`crate::ToolOutput::MAX_ATTACHMENTS`].
        limit: usize,
    },
}

impl Attachment {
    /// The most bytes one attachment may hold (16 MiB).
    pub const MAX_BYTES: usize = 16 * 1024 * 1024;
    /// The longest name, in characters.
    pub const MAX_NAME_CHARS: usize = 128;

    /// An attachment named `name` (a label, never a path) of media type `media_type`.
    ///
    /// # Errors
    /// [`AttachmentError::TooLarge`] past [`Attachment::MAX_BYTES`];
    /// [`AttachmentError::InvalidName`] or [`AttachmentError::InvalidMediaType`] for a bad
    /// label.
    pub fn new(
        name: impl Into<String>,
        media_type: impl Into<String>,
        bytes: Vec<u8>,
    ) -> Result<Self, AttachmentError> {
        let name = name.into();
        let media_type = media_type.into();
        let count = name.chars().count();
        if count == 0
            || count > Self::MAX_NAME_CHARS
            || name.chars().any(|c| c.is_control() || c == '/')
        {
            return Err(AttachmentError::InvalidName { name: clip(&name) });
        }
        let valid_type = media_type.len() <= 255
            && media_type.split_once('/').is_some_and(|(t, s)| {
                !t.is_empty()
                    && !s.is_empty()
                    && media_type.chars().all(|c| c.is_ascii_graphic() || c == ' ')
            });
        if !valid_type {
            return Err(AttachmentError::InvalidMediaType {
                media_type: clip(&media_type),
            });
        }
        if bytes.len() > Self::MAX_BYTES {
            return Err(AttachmentError::TooLarge {
                name,
                size: bytes.len(),
                limit: Self::MAX_BYTES,
            });
        }
        Ok(Self {
            name,
            media_type,
            bytes,
        })
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The media type.
    #[must_use]
    pub fn media_type(&self) -> &str {
        &self.media_type
    }

    /// The bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Takes the bytes.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

fn clip(s: &str) -> String {
    s.chars().take(Attachment::MAX_NAME_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_checked() {
        assert!(Attachment::new("", "text/plain", vec![]).is_err());
        assert!(Attachment::new("a/b", "text/plain", vec![]).is_err());
        assert!(Attachment::new("a\nb", "text/plain", vec![]).is_err());
        assert!(Attachment::new("x".repeat(129), "text/plain", vec![]).is_err());
        assert!(Attachment::new("ok", "plain", vec![]).is_err());
        assert!(Attachment::new("ok", "text/", vec![]).is_err());
        assert!(Attachment::new("ok", "image/png", vec![1, 2]).is_ok());
    }

    #[test]
    fn the_limit_is_inclusive_and_debug_hides_the_bytes() {
        let at_limit = Attachment::new(
            "max",
            "application/octet-stream",
            vec![7; Attachment::MAX_BYTES],
        )
        .unwrap();
        assert_eq!(at_limit.bytes().len(), Attachment::MAX_BYTES);
        let debug = format!("{at_limit:?}");
        assert!(
            debug.contains("size: 16777216") && !debug.contains("7, 7"),
            "{debug}"
        );
        let over = Attachment::new(
            "max",
            "application/octet-stream",
            vec![7; Attachment::MAX_BYTES + 1],
        );
        assert_eq!(
            over,
            Err(AttachmentError::TooLarge {
                name: "max".into(),
                size: Attachment::MAX_BYTES + 1,
                limit: Attachment::MAX_BYTES
            })
        );
    }
}

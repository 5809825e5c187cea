//! `ToolOutput`: what a successful tool call returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Attachment, AttachmentError};

/// The JSON a tool returned. Large outputs are moved to the artifact store by the engine;
/// the run's evidence then keeps a reference instead.
///
/// An output may carry [`Attachment`]s (bounded bytes with a name and a media type): the
/// engine stores each in the artifact store and records its link next to the call. They
/// are not part of the output's JSON (nor of its serialized form).
///
/// ```
/// use rein_tool::ToolOutput;
/// use serde_json::json;
/// let out: ToolOutput = json!({"ok": true}).into();
/// assert_eq!(out.value()["ok"], true);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolOutput {
    value: Value,
    #[serde(skip)]
    attachments: Vec<Attachment>,
}

impl ToolOutput {
    /// Wraps a JSON value.
    #[must_use]
    pub const fn new(value: Value) -> Self {
        Self {
            value,
            attachments: Vec::new(),
        }
    }

    /// The most attachments one output may carry.
    pub const MAX_ATTACHMENTS: usize = 16;

    /// Adds an attachment.
    ///
    /// # Errors
    /// [`AttachmentError::TooMany`] past [`ToolOutput::MAX_ATTACHMENTS`].
    pub fn with_attachment(mut self, attachment: Attachment) -> Result<Self, AttachmentError> {
        self.push_attachment(attachment)?;
        Ok(self)
    }

    /// Adds an attachment in place.
    ///
    /// # Errors
    /// [`AttachmentError::TooMany`] past [`ToolOutput::MAX_ATTACHMENTS`]; the output is
    /// left as it was.
    pub fn push_attachment(&mut self, attachment: Attachment) -> Result<(), AttachmentError> {
        if self.attachments.len() >= Self::MAX_ATTACHMENTS {
            return Err(AttachmentError::TooMany {
                limit: Self::MAX_ATTACHMENTS,
            });
        }
        self.attachments.push(attachment);
        Ok(())
    }

    /// The attachments, in the order they were added.
    #[must_use]
    pub fn attachments(&self) -> &[Attachment] {
        &self.attachments
    }

    /// Takes the attachments out, leaving none.
    pub fn take_attachments(&mut self) -> Vec<Attachment> {
        std::mem::take(&mut self.attachments)
    }

    /// The returned JSON.
    #[must_use]
    pub const fn value(&self) -> &Value {
        &self.value
    }

    /// Takes the returned JSON.
    #[must_use]
    pub fn into_value(self) -> Value {
        self.value
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

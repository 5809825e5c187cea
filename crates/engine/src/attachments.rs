//! Tool output attachments: each goes to the artifact store, and its link into the ledger
//! right before the attempt's `tool_result` (the result ends the step, so a crash between
//! them leaves the call in doubt rather than a result whose attachments were lost).

use rein_artifact::{ArtifactRef, StoreOptions};
use rein_ledger::EntryKind;
use rein_run::{ArtifactLink, ToolName};
use rein_tool::Attachment;

use crate::driver::Driver;
use crate::error::EngineError;

impl Driver {
    /// Stores `attachments` (already bounded by [`Attachment::MAX_BYTES`] and
    /// `ToolOutput::MAX_ATTACHMENTS`) and records one `tool_attachment` entry for each.
    pub(crate) async fn record_attachments(
        &mut self,
        tool: &ToolName,
        attempt: u32,
        attachments: Vec<Attachment>,
    ) -> Result<(), EngineError> {
        for attachment in attachments {
            let name = attachment.name().to_owned();
            let options = StoreOptions::new()
                .with_content_type(attachment.media_type())
                .with_name(name.clone())
                .with_metadata("run_id", self.rec.id().as_str())
                .with_metadata("tool", tool.as_str());
            let reference = self
                .shared
                .artifacts
                .put_boxed(attachment.into_bytes(), options)
                .await?;
            self.rec
                .record(EntryKind::ToolAttachment {
                    tool: tool.clone(),
                    attempt,
                    name,
                    link: link(&reference),
                })
                .await?;
        }
        Ok(())
    }
}

/// The ledger's link to a stored artifact.
pub(crate) fn link(reference: &ArtifactRef) -> ArtifactLink {
    ArtifactLink {
        id: reference.id().to_string(),
        checksum: reference.checksum().to_string(),
        size: reference.size(),
        content_type: reference.content_type().to_owned(),
    }
}

//! Where a tool's output goes: inline in its `tool_result` entry, or to the artifact store
//! (linked from the entry) when its JSON is larger than `EngineConfig::inline_output_limit`.

use rein_artifact::StoreOptions;
use rein_run::{ArtifactLink, Payload, ToolName};
use rein_tool::ToolOutput;
use serde_json::Value;

use crate::driver::Driver;
use crate::error::EngineError;

impl Driver {
    /// The output inline, or moved to the artifact store when it is larger than the limit.
    pub(crate) async fn payload(
        &self,
        tool: &ToolName,
        output: ToolOutput,
    ) -> Result<Payload, EngineError> {
        let limit = self.shared.config.inline_output_limit;
        if fits(output.value(), limit) {
            return Ok(Payload::Inline(output.into_value()));
        }
        let bytes = serde_json::to_vec(output.value()).unwrap_or_default();
        let options = StoreOptions::new()
            .with_content_type("application/json")
            .with_name(format!("{tool} output"))
            .with_metadata("run_id", self.rec.id().as_str());
        let reference = self.shared.artifacts.put_boxed(bytes, options).await?;
        Ok(Payload::Artifact(ArtifactLink {
            id: reference.id().to_string(),
            checksum: reference.checksum().to_string(),
            size: reference.size(),
            content_type: reference.content_type().to_owned(),
        }))
    }
}

/// Whether `value`'s compact JSON is at most `limit` bytes, without building it.
fn fits(value: &Value, limit: usize) -> bool {
    struct Counter {
        left: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(buf.len())
                .ok_or(std::io::ErrorKind::FileTooLarge)?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter { left: limit }, value).is_ok()
}

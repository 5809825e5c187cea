//! An MCP tool result's content as rein keeps it: text inline, images, audio and embedded
//! resources moved out into attachments (the engine stores them as artifacts), each block
//! replaced by a stub that names its attachment.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rein_tool::{Attachment, ToolOutput};
use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::{Value, json};

/// Splits `content` into the JSON the output shows and the attachments it names (at most
/// [`ToolOutput::MAX_ATTACHMENTS`]). A block that cannot become an attachment (too large,
/// not base64, one too many) is replaced by a stub that says so; nothing is decoded past
/// [`Attachment::MAX_BYTES`].
pub(crate) fn split(content: Vec<ContentBlock>) -> (Value, Vec<Attachment>) {
    let mut attachments = Vec::new();
    let output = &mut attachments;
    let mut shown = Vec::with_capacity(content.len());
    for (index, block) in content.into_iter().enumerate() {
        let name = format!("content-{index}");
        let stub = match block {
            ContentBlock::Image(image) => {
                let decoded = decode(&image.data);
                attach(output, "image", &name, &image.mime_type, None, decoded)
            }
            ContentBlock::Audio(audio) => {
                let decoded = decode(&audio.data);
                attach(output, "audio", &name, &audio.mime_type, None, decoded)
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => {
                    let media = mime_type.unwrap_or_else(|| "text/plain".to_owned());
                    attach(
                        output,
                        "resource",
                        &name,
                        &media,
                        Some(uri),
                        Ok(text.into_bytes()),
                    )
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let media = mime_type.unwrap_or_else(|| "application/octet-stream".to_owned());
                    attach(output, "resource", &name, &media, Some(uri), decode(&blob))
                }
                other => serde_json::to_value(&other).unwrap_or(Value::Null),
            },
            other => serde_json::to_value(&other).unwrap_or(Value::Null),
        };
        shown.push(stub);
    }
    (Value::Array(shown), attachments)
}

/// The stub of a base64 `blob` (a resource's binary contents) kept as attachment `name`.
pub(crate) fn attach_blob(
    output: &mut Vec<Attachment>,
    name: &str,
    media_type: &str,
    uri: String,
    blob: &str,
) -> Value {
    attach(
        output,
        "resource",
        name,
        media_type,
        Some(uri),
        decode(blob),
    )
}

/// Why a block's bytes were not kept.
enum Dropped {
    TooLarge(usize),
    NotBase64(String),
}

/// The bytes of base64 `data`, refused before decoding when they would exceed the limit.
fn decode(data: &str) -> Result<Vec<u8>, Dropped> {
    let estimate = base64::decoded_len_estimate(data.len());
    if estimate > Attachment::MAX_BYTES.saturating_add(3) {
        return Err(Dropped::TooLarge(estimate));
    }
    STANDARD
        .decode(data)
        .map_err(|e| Dropped::NotBase64(e.to_string()))
}

/// Adds the bytes as attachment `name` and returns the stub that names it (or says why
/// nothing was kept).
fn attach(
    output: &mut Vec<Attachment>,
    kind: &str,
    name: &str,
    media_type: &str,
    uri: Option<String>,
    bytes: Result<Vec<u8>, Dropped>,
) -> Value {
    let mut stub = json!({"type": kind, "mimeType": media_type});
    if let Some(uri) = uri {
        stub["uri"] = uri.into();
    }
    let kept = bytes
        .map_err(|dropped| match dropped {
            Dropped::TooLarge(size) => format!(
                "about {size} bytes, more than the {} an attachment may hold",
                Attachment::MAX_BYTES
            ),
            Dropped::NotBase64(why) => format!("its data is not valid base64 ({why})"),
        })
        .and_then(|bytes| {
            let size = bytes.len();
            if output.len() >= ToolOutput::MAX_ATTACHMENTS {
                return Err(format!(
                    "a tool output may hold at most {} attachments",
                    ToolOutput::MAX_ATTACHMENTS
                ));
            }
            let attachment = Attachment::new(name, media_type, bytes).map_err(|e| e.to_string())?;
            output.push(attachment);
            Ok(size)
        });
    match kept {
        Ok(size) => {
            stub["attachment"] = name.into();
            stub["size"] = size.into();
            stub["note"] =
                format!("the {kind}'s {size} bytes are in the attachment `{name}`").into();
        }
        Err(why) => stub["note"] = format!("the {kind} was dropped: {why}").into(),
    }
    stub
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmbeddedResource, ImageContent};

    fn split_one(block: ContentBlock) -> (Value, ToolOutput) {
        let (shown, attachments) = split(vec![ContentBlock::text("hi"), block]);
        let mut output = ToolOutput::new(Value::Null);
        for a in attachments {
            output.push_attachment(a).unwrap();
        }
        (shown, output)
    }

    #[test]
    fn an_image_becomes_an_attachment_its_stub_names() {
        let (shown, output) = split_one(ContentBlock::Image(ImageContent::new(
            "iVBORw0=",
            "image/png",
        )));
        assert_eq!(shown[0]["text"], "hi");
        assert_eq!(shown[1]["attachment"], "content-1");
        assert_eq!(shown[1]["size"], 5);
        assert!(shown[1].get("data").is_none());
        let a = &output.attachments()[0];
        assert_eq!((a.name(), a.media_type()), ("content-1", "image/png"));
        assert_eq!(a.bytes(), b"\x89PNG\r");
    }

    #[test]
    fn an_embedded_text_resource_becomes_an_attachment() {
        let resource = ResourceContents::TextResourceContents {
            uri: "file:///notes.md".into(),
            mime_type: Some("text/markdown".into()),
            text: "# notes".into(),
            meta: None,
        };
        let (shown, output) = split_one(ContentBlock::Resource(EmbeddedResource::new(resource)));
        assert_eq!(shown[1]["uri"], "file:///notes.md");
        assert_eq!(shown[1]["attachment"], "content-1");
        assert_eq!(output.attachments()[0].bytes(), b"# notes");
        assert_eq!(output.attachments()[0].media_type(), "text/markdown");
    }

    #[test]
    fn bad_or_oversized_data_is_dropped_with_a_note_never_decoded() {
        let (shown, output) = split_one(ContentBlock::Image(ImageContent::new(
            "not base64!",
            "image/png",
        )));
        assert!(output.attachments().is_empty());
        assert!(
            shown[1]["note"]
                .as_str()
                .unwrap()
                .contains("not valid base64")
        );
        let huge = "A".repeat((Attachment::MAX_BYTES / 3 + 2) * 4);
        let (shown, output) = split_one(ContentBlock::Image(ImageContent::new(huge, "image/png")));
        assert!(output.attachments().is_empty());
        assert!(
            shown[1]["note"].as_str().unwrap().contains("more than"),
            "{}",
            shown[1]
        );
    }
}

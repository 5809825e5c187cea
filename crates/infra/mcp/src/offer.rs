//! What `rein mcp serve` offers besides tools: prompts (static texts), resources a session
//! reads, and the progress a session reports while a call runs; and their MCP forms.

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, ListPromptsResult, ListResourcesResult, ReadResourceResult};
use serde_json::json;
use tokio::sync::mpsc;

/// A prompt offered to MCP clients: one user message holding `text`, no arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedPrompt {
    /// The prompt's name.
    pub name: String,
    /// What it is for (clients show it).
    pub description: String,
    /// Its text.
    pub text: String,
}

/// A resource each session offers, by URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedResource {
    /// Its URI, e.g. `rein://run/ledger`.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    pub description: String,
    /// Its media type, e.g. `application/json`.
    pub mime_type: String,
}

/// Where a session reports how a call goes (`"walking the run to act"`, `"calling x"`):
/// each report is passed on to the client while the call runs. Reports past
/// [`Progress::BACKLOG`] not yet sent are dropped, never queued without bound.
#[derive(Debug, Clone)]
pub struct Progress {
    to_client: Option<mpsc::Sender<String>>,
}

impl Progress {
    /// How many reports may wait to be sent.
    pub const BACKLOG: usize = 64;

    /// A progress that goes nowhere (for calls no client waits on).
    #[must_use]
    pub const fn none() -> Self {
        Self { to_client: None }
    }

    pub(crate) fn channel() -> (Self, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel(Self::BACKLOG);
        (
            Self {
                to_client: Some(tx),
            },
            rx,
        )
    }

    /// Reports `message` to the client.
    pub fn report(&self, message: impl Into<String>) {
        if let Some(tx) = &self.to_client {
            let _ = tx.try_send(message.into());
        }
    }
}

/// The `prompts/list` answer.
pub(crate) fn list_prompts(prompts: &[ServedPrompt]) -> Result<ListPromptsResult, ErrorData> {
    let listed: Vec<_> = prompts
        .iter()
        .map(|p| json!({"name": p.name, "description": p.description}))
        .collect();
    parse(json!({ "prompts": listed }))
}

/// The `prompts/get` answer for `name`: its text as one user message.
pub(crate) fn get_prompt(
    prompts: &[ServedPrompt],
    name: &str,
) -> Result<GetPromptResult, ErrorData> {
    let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        return Err(ErrorData::invalid_params(
            format!("no prompt {name:?}; the prompts are: {}", names.join(", ")),
            None,
        ));
    };
    parse(json!({
        "description": prompt.description,
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt.text}}],
    }))
}

/// The `resources/list` answer.
pub(crate) fn list_resources(
    resources: &[ServedResource],
) -> Result<ListResourcesResult, ErrorData> {
    let listed: Vec<_> = resources
        .iter()
        .map(|r| json!({"uri": r.uri, "name": r.name, "description": r.description, "mimeType": r.mime_type}))
        .collect();
    parse(json!({ "resources": listed }))
}

/// The error answering a read of a URI not offered.
pub(crate) fn no_resource(uri: &str, resources: &[ServedResource]) -> ErrorData {
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    ErrorData::resource_not_found(
        format!(
            "no resource {uri:?}; the resources are: {}",
            uris.join(", ")
        ),
        None,
    )
}

/// The `resources/read` answer: `text` as the contents of `resource`.
pub(crate) fn contents(
    resource: &ServedResource,
    text: &str,
) -> Result<ReadResourceResult, ErrorData> {
    parse(json!({
        "contents": [{"uri": resource.uri, "mimeType": resource.mime_type, "text": text}],
    }))
}

fn parse<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

//! What a server offers: its tools, and its resources and prompts imported as two more
//! read-only tools — `SERVER.read_resource` (a URI in, the resource's contents out) and
//! `SERVER.get_prompt` (a prompt's name and arguments in, its messages out). Each listing
//! follows the server's `nextCursor` for at most [`MAX_PAGES`] pages.
//!
//! Prompts become a tool, not skills: a skill is a file read when the engine is built and
//! entered by the goal's words, while an MCP prompt takes arguments and lives on a server
//! that may change it; as a tool, the planner asks for it when it needs it, and the call is
//! governed and ledgered like any other.

use std::fmt::Write as _;

use rmcp::RoleClient;
use rmcp::model::{GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use rmcp::service::{Peer, ServiceError};
use serde_json::{Value, json};

use rein_tool::{ToolError, ToolOutput};

/// The most pages rein reads of one listing (tools, resources, templates, prompts): a server
/// that hands out cursors forever would otherwise hold the handshake until its timeout.
pub const MAX_PAGES: usize = 100;

/// The server-side name of the resource tool (its key in `exclude` and `tools` overrides).
pub(crate) const READ_RESOURCE: &str = "resources/read";
/// The server-side name of the prompt tool (its key in `exclude` and `tools` overrides).
pub(crate) const GET_PROMPT: &str = "prompts/get";

/// How many resources, templates or prompts a description names before it says how many
/// more there are.
const NAMED: usize = 50;
/// The longest description text kept for one resource or prompt, in characters.
const ITEM_TEXT: usize = 200;

/// What a call of an imported tool asks the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `tools/call` of the server's tool.
    Tool,
    /// `resources/read` with the input's `uri`.
    ReadResource,
    /// `prompts/get` with the input's `name` and `arguments`.
    GetPrompt,
}

impl Kind {
    /// The kind of the tool the server lists as `remote` among `extras`.
    pub(crate) fn of_extra(remote: &str) -> Self {
        match remote {
            READ_RESOURCE => Self::ReadResource,
            GET_PROMPT => Self::GetPrompt,
            _ => Self::Tool,
        }
    }

    /// The name after `SERVER.` in rein.
    pub(crate) fn local_name(self, remote: &str) -> &str {
        match self {
            Self::Tool => remote,
            Self::ReadResource => "read_resource",
            Self::GetPrompt => "get_prompt",
        }
    }
}

/// Why a listing failed.
pub(crate) enum ListFailure {
    /// The request failed.
    Service(ServiceError),
    /// The server handed out a cursor on every one of [`MAX_PAGES`] pages.
    TooManyPages(&'static str),
}

/// Everything a server offers, listed: its tools, and the two tools standing for its
/// resources and prompts (when it declares them and lists at least one).
pub(crate) struct Listing {
    pub(crate) tools: Vec<rmcp::model::Tool>,
    pub(crate) extras: Vec<rmcp::model::Tool>,
}

/// Lists the server's tools and, when it declares them, its resources, resource templates
/// and prompts.
pub(crate) async fn list(peer: &Peer<RoleClient>) -> Result<Listing, ListFailure> {
    let capabilities = peer
        .peer_info()
        .and_then(|info| serde_json::to_value(&*info).ok())
        .map_or(Value::Null, |info| info["capabilities"].clone());
    let tools = all_pages("tools", "tools", |p| async move {
        to_json(peer.list_tools(p).await)
    })
    .await?
    .into_iter()
    .filter_map(|t| serde_json::from_value(t).ok())
    .collect();
    let mut extras = Vec::new();
    if capabilities.get("resources").is_some_and(Value::is_object) {
        let resources = all_pages("resources", "resources", |p| async move {
            to_json(peer.list_resources(p).await)
        })
        .await?;
        // Templates are optional in a server: one that fails to list them has none.
        let templates = all_pages("resource templates", "resourceTemplates", |p| async move {
            to_json(peer.list_resource_templates(p).await)
        })
        .await
        .or_else(|e| match e {
            ListFailure::Service(_) => Ok(Vec::new()),
            pages @ ListFailure::TooManyPages(_) => Err(pages),
        })?;
        if !(resources.is_empty() && templates.is_empty()) {
            extras.push(resource_tool(&resources, &templates));
        }
    }
    if capabilities.get("prompts").is_some_and(Value::is_object) {
        let prompts = all_pages("prompts", "prompts", |p| async move {
            to_json(peer.list_prompts(p).await)
        })
        .await?;
        if !prompts.is_empty() {
            extras.push(prompt_tool(&prompts));
        }
    }
    Ok(Listing { tools, extras })
}

fn to_json<T: serde::Serialize>(page: Result<T, ServiceError>) -> Result<Value, ServiceError> {
    page.map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
}

/// Every item of a paginated listing (`key` names the items' array in a page), following
/// `nextCursor` for at most [`MAX_PAGES`] pages.
async fn all_pages<F, Fut>(
    what: &'static str,
    key: &str,
    mut page: F,
) -> Result<Vec<Value>, ListFailure>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<Value, ServiceError>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let mut listed = page(params).await.map_err(ListFailure::Service)?;
        if let Some(Value::Array(page_items)) = listed.get_mut(key).map(Value::take) {
            items.extend(page_items);
        }
        match listed.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(items),
        }
    }
    Err(ListFailure::TooManyPages(what))
}

/// `text` cut to [`ITEM_TEXT`] characters, on one line.
fn short(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(ITEM_TEXT) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Appends one line per item (at most [`NAMED`]), and how many more there are.
fn name_items(out: &mut String, items: &[Value], line: impl Fn(&Value) -> String) {
    for item in items.iter().take(NAMED) {
        let _ = writeln!(out, "- {}", line(item));
    }
    if items.len() > NAMED {
        let _ = writeln!(out, "- … and {} more", items.len() - NAMED);
    }
}

fn text_of<'a>(item: &'a Value, key: &str) -> &'a str {
    item.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The hints of both tools: they read, change nothing, and read the same twice.
fn read_hints() -> Value {
    json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
}

fn resource_tool(resources: &[Value], templates: &[Value]) -> rmcp::model::Tool {
    let mut description = String::from(
        "Reads a resource of this MCP server by its URI and returns its contents (text inline, binary as attachments).\n",
    );
    if !resources.is_empty() {
        description.push_str("Resources:\n");
        name_items(&mut description, resources, |r| {
            let about = short(text_of(r, "description"));
            let name = text_of(r, "name");
            let uri = text_of(r, "uri");
            if about.is_empty() {
                format!("{uri} ({name})")
            } else {
                format!("{uri} ({name}): {about}")
            }
        });
    }
    if !templates.is_empty() {
        description.push_str("URI templates (fill in the {placeholders}):\n");
        name_items(&mut description, templates, |t| {
            let about = short(text_of(t, "description"));
            format!(
                "{} ({}): {about}",
                text_of(t, "uriTemplate"),
                text_of(t, "name")
            )
        });
    }
    let tool = json!({
        "name": READ_RESOURCE,
        "description": description.trim_end(),
        "inputSchema": {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
            "required": ["uri"],
            "additionalProperties": false,
        },
        "annotations": read_hints(),
    });
    serde_json::from_value(tool).unwrap_or_else(|_| unreachable_tool())
}

fn prompt_tool(prompts: &[Value]) -> rmcp::model::Tool {
    let mut description = String::from(
        "Gets a prompt of this MCP server, filled in with its arguments (strings), and returns its messages.\nPrompts:\n",
    );
    name_items(&mut description, prompts, |p| {
        let arguments: Vec<String> = p
            .get("arguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| {
                let required = if a["required"] == true { "" } else { "?" };
                format!("{}{required}", text_of(a, "name"))
            })
            .collect();
        let about = short(text_of(p, "description"));
        format!("{}({}): {about}", text_of(p, "name"), arguments.join(", "))
    });
    let names: Vec<&str> = prompts.iter().map(|p| text_of(p, "name")).collect();
    let tool = json!({
        "name": GET_PROMPT,
        "description": description.trim_end(),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": names, "description": "the prompt's name"},
                "arguments": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "the prompt's arguments by name (a `?` after a name above: optional)"
                },
            },
            "required": ["name"],
            "additionalProperties": false,
        },
        "annotations": read_hints(),
    });
    serde_json::from_value(tool).unwrap_or_else(|_| unreachable_tool())
}

/// A tool that cannot fail to parse (the JSON above always does; this keeps a panic out).
fn unreachable_tool() -> rmcp::model::Tool {
    rmcp::model::Tool::new(
        "unavailable",
        "unavailable",
        std::sync::Arc::new(serde_json::Map::new()),
    )
}

/// The string `field` of `input`, or an invalid-input error naming it.
fn string_field<'a>(input: &'a Value, field: &str, tool: &str) -> Result<&'a str, ToolError> {
    input.get(field).and_then(Value::as_str).ok_or_else(|| {
        ToolError::invalid_input(format!(
            "{tool} takes {{\"{field}\": \"…\"}}: `{field}` is missing or not a string"
        ))
    })
}

/// The `resources/read` request for a `read_resource` call.
pub(crate) fn read_request(input: &Value) -> Result<ReadResourceRequestParams, ToolError> {
    let uri = string_field(input, "uri", "read_resource")?;
    serde_json::from_value(json!({ "uri": uri }))
        .map_err(|e| ToolError::invalid_input(format!("not a resource read: {e}")))
}

/// The `prompts/get` request for a `get_prompt` call.
pub(crate) fn prompt_request(input: &Value) -> Result<GetPromptRequestParams, ToolError> {
    let name = string_field(input, "name", "get_prompt")?;
    let mut request = json!({ "name": name });
    if let Some(arguments) = input.get("arguments").filter(|a| !a.is_null()) {
        let strings = arguments
            .as_object()
            .is_some_and(|a| a.values().all(Value::is_string));
        if !strings {
            return Err(ToolError::invalid_input(
                "get_prompt's `arguments` is an object of strings, e.g. {\"topic\": \"rust\"}",
            ));
        }
        request["arguments"] = arguments.clone();
    }
    serde_json::from_value(request)
        .map_err(|e| ToolError::invalid_input(format!("not a prompt request: {e}")))
}

/// A `resources/read` result as a tool output: text contents inline, binary contents as
/// attachments (their stubs name them).
pub(crate) fn read_output(result: &impl serde::Serialize) -> ToolOutput {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    let mut attachments = Vec::new();
    let contents: Vec<Value> = result["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, c)| {
            let uri = text_of(c, "uri").to_owned();
            if let Some(text) = c.get("text").and_then(Value::as_str) {
                let mut shown = json!({"uri": uri, "text": text});
                if let Some(media) = c.get("mimeType") {
                    shown["mimeType"] = media.clone();
                }
                return shown;
            }
            let media = c
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("application/octet-stream");
            crate::content::attach_blob(
                &mut attachments,
                &format!("contents-{index}"),
                media,
                uri,
                text_of(c, "blob"),
            )
        })
        .collect();
    let mut output = ToolOutput::new(json!({ "contents": contents }));
    for attachment in attachments {
        // `attach_blob` keeps at most the output's limit.
        let _ = output.push_attachment(attachment);
    }
    output
}

/// A `prompts/get` result as a tool output: its description and messages.
pub(crate) fn prompt_output(result: &impl serde::Serialize) -> ToolOutput {
    let result = serde_json::to_value(result).unwrap_or(Value::Null);
    let mut out = json!({ "messages": result.get("messages").cloned().unwrap_or(json!([])) });
    if let Some(description) = result.get("description") {
        out["description"] = description.clone();
    }
    ToolOutput::new(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_arguments_must_be_strings() {
        assert!(prompt_request(&json!({"name": "p", "arguments": {"n": 1}})).is_err());
        assert!(prompt_request(&json!({"arguments": {}})).is_err());
        let ok = prompt_request(&json!({"name": "p", "arguments": {"n": "1"}})).unwrap();
        assert_eq!(ok.name, "p");
        assert!(read_request(&json!({"uri": 3})).is_err());
    }

    #[test]
    fn a_long_listing_is_cut_in_the_description() {
        let many: Vec<Value> = (0..60)
            .map(|i| json!({"uri": format!("test://{i}"), "name": format!("r{i}")}))
            .collect();
        let tool = resource_tool(&many, &[]);
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(description.contains("test://49 (r49)"), "{description}");
        assert!(!description.contains("test://50 "), "{description}");
        assert!(description.contains("and 10 more"), "{description}");
    }
}

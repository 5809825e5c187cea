//! The tool table of an imported server: what rein makes of each tool a server lists —
//! its rein name (mapped when the server's name is not one), its schema checked, the hints
//! the server sent narrowed by the operator's overrides, and the annotations derived.

use std::collections::BTreeMap;

use rein_tool::{Annotations, ToolName, ToolSpec};
use serde_json::Value;

use crate::annotations::Hints;
use crate::catalog::Kind;
use crate::{McpError, ServerConfig, names};

/// One server tool as rein imported it: its name on the server and in rein, whether the
/// name was mapped, the hints the server sent, and the annotations rein derived.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTool {
    remote: String,
    kind: Kind,
    mapped: bool,
    hints: Hints,
    spec: ToolSpec,
}

impl ImportedTool {
    /// The tool's name on the server.
    #[must_use]
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The tool's name in rein (`SERVER.TOOL`).
    #[must_use]
    pub const fn name(&self) -> &ToolName {
        self.spec.name()
    }

    /// Whether the rein name differs from `SERVER.` + the server's name.
    #[must_use]
    pub const fn was_mapped(&self) -> bool {
        self.mapped
    }

    /// The hints after the operator's overrides (`None`: the server did not send one).
    #[must_use]
    pub const fn hints(&self) -> &Hints {
        &self.hints
    }

    /// The annotations rein derived.
    #[must_use]
    pub const fn annotations(&self) -> &Annotations {
        self.spec.annotations()
    }

    /// The rein spec of the tool.
    #[must_use]
    pub const fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// What a call asks the server.
    pub(crate) const fn kind(&self) -> Kind {
        self.kind
    }
}

/// Builds the tool table from a listing (the server's tools, then the tools standing for its
/// resources and prompts): names mapped, collisions refused, schemas checked, overrides
/// applied (narrow-only unless marked), excluded tools left out.
pub(crate) fn build_table(
    config: &ServerConfig,
    listing: &crate::catalog::Listing,
) -> Result<Vec<ImportedTool>, McpError> {
    let server = config.name();
    let listed: Vec<(&rmcp::model::Tool, Kind)> = listing
        .tools
        .iter()
        .map(|t| (t, Kind::Tool))
        .chain(
            listing
                .extras
                .iter()
                .map(|t| (t, Kind::of_extra(t.name.as_ref()))),
        )
        .collect();
    let available = || {
        listed
            .iter()
            .map(|(t, _)| t.name.as_ref())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Every tool the configuration names must exist: a typo would silently not apply.
    let named = config
        .excluded()
        .iter()
        .map(String::as_str)
        .chain(config.overridden());
    for tool in named {
        if !listed.iter().any(|(t, _)| t.name == tool) {
            return Err(McpError::UnknownTool {
                server: server.clone(),
                tool: tool.to_owned(),
                available: available(),
            });
        }
    }
    let mut seen: BTreeMap<ToolName, String> = BTreeMap::new();
    let mut table = Vec::with_capacity(listed.len());
    for (tool, kind) in listed {
        let remote = tool.name.as_ref();
        if config.excludes(remote) {
            continue;
        }
        let (name, mapped) =
            names::rein_name(server, kind.local_name(remote)).map_err(|source| McpError::Name {
                server: server.clone(),
                source,
            })?;
        if let Some(first) = seen.insert(name.clone(), remote.to_owned()) {
            return Err(McpError::Collision {
                server: server.clone(),
                first,
                second: remote.to_owned(),
                name: name.to_string(),
            });
        }
        let schema = Value::Object((*tool.input_schema).clone());
        check_schema(&schema).map_err(|reason| McpError::InvalidSchema {
            server: server.clone(),
            tool: remote.to_owned(),
            reason,
        })?;
        let sent = tool
            .annotations
            .as_ref()
            .map_or_else(Hints::default, |a| Hints {
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            });
        let widening = |tool: &str| {
            let tool = tool.to_owned();
            move |source| McpError::Widening {
                server: server.clone(),
                tool,
                source,
            }
        };
        let hints = config.annotations().apply(sent).map_err(widening("*"))?;
        let hints = match config.tool_annotations(remote) {
            Some(o) => o.apply(hints).map_err(widening(remote))?,
            None => hints,
        };
        let mut description = tool.description.as_deref().unwrap_or_default().to_owned();
        if let Some(title) = tool
            .title
            .as_deref()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.as_deref()))
            && !description.starts_with(title)
        {
            description = if description.is_empty() {
                title.to_owned()
            } else {
                format!("{title}: {description}")
            };
        }
        let mut spec = ToolSpec::new(name, description)
            .with_input_schema(schema)
            .with_annotations(hints.annotations());
        if let Some(output) = &tool.output_schema {
            spec = spec.with_output_schema(Value::Object((**output).clone()));
        }
        table.push(ImportedTool {
            remote: remote.to_owned(),
            kind,
            mapped: mapped || kind != Kind::Tool,
            hints,
            spec,
        });
    }
    Ok(table)
}

/// MCP requires an input schema for an object: `"type": "object"`, and `properties` (if
/// any) an object of schemas. The engine compiles the full schema when it is built.
fn check_schema(schema: &Value) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(format!("`type` is {other}, not \"object\"")),
        None => return Err("it has no `type`; MCP requires \"object\"".to_owned()),
    }
    if let Some(props) = schema.get("properties") {
        let Some(props) = props.as_object() else {
            return Err("`properties` is not an object".to_owned());
        };
        if let Some((name, _)) = props
            .iter()
            .find(|(_, s)| !(s.is_object() || s.is_boolean()))
        {
            return Err(format!("property {name:?} is not a schema"));
        }
    }
    Ok(())
}

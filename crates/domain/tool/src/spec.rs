//! `ToolSpec`: how a tool presents itself to planners and to the engine's policies.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{Annotations, ToolName};

/// A tool's name, description, input and output JSON Schema, and [`Annotations`].
///
/// Planners see the specs of the tools allowed in the current state; the engine validates
/// every proposed input against `input_schema` (compiled once per tool) before the call.
///
/// ```
/// use rein_tool::{Annotations, ToolSpec};
/// use serde_json::json;
///
/// let spec = ToolSpec::new("search".parse()?, "Searches the index")
///     .with_input_schema(json!({
///         "type": "object",
///         "properties": {"query": {"type": "string"}},
///         "required": ["query"]
///     }))
///     .with_annotations(Annotations::read_only());
/// assert_eq!(spec.description(), "Searches the index");
/// assert!(spec.annotations().is_read_only());
/// # Ok::<(), rein_tool::ToolNameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    name: ToolName,
    #[serde(default)]
    description: String,
    #[serde(default = "any_object")]
    input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output_schema: Option<Value>,
    #[serde(default)]
    annotations: Annotations,
}

fn any_object() -> Value {
    json!({"type": "object"})
}

impl ToolSpec {
    /// A spec accepting any JSON object as input, with default (side-effecting) annotations.
    #[must_use]
    pub fn new(name: ToolName, description: impl Into<String>) -> Self {
        Self {
            name,
            description: description.into(),
            input_schema: any_object(),
            output_schema: None,
            annotations: Annotations::default(),
        }
    }

    /// Sets the JSON Schema that inputs must satisfy.
    #[must_use]
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Sets the JSON Schema that outputs are documented to satisfy. `null` means no schema
    /// (as it does when the spec is read back from JSON).
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = (!schema.is_null()).then_some(schema);
        self
    }

    /// Sets the annotations.
    #[must_use]
    pub const fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The tool's name.
    #[must_use]
    pub const fn name(&self) -> &ToolName {
        &self.name
    }

    /// What the tool does, for planners.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The JSON Schema of the input.
    #[must_use]
    pub const fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The JSON Schema of the output, when documented.
    #[must_use]
    pub const fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// The tool's annotations.
    #[must_use]
    pub const fn annotations(&self) -> &Annotations {
        &self.annotations
    }
}

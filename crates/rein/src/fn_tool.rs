//! `FnTool`: a tool made from a closure, with `FnTool::builder`.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rein_tool::{Annotations, BoxFuture, ToolError, ToolName, ToolNameError, ToolOutput, ToolSpec};
use serde_json::Value;

pub(crate) type Handler =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// A tool made from an async closure: the closure implementation of the
/// [`rein::tool::Tool`](crate::tool::Tool) trait. Build one with [`FnTool::builder`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rein::prelude::*;
///
/// let add = FnTool::builder("add")
///     .description("Adds two integers")
///     .annotations(Annotations::read_only())
///     .input_schema(json!({
///         "type": "object",
///         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///         "required": ["a", "b"]
///     }))
///     .handler(|input: Value| async move {
///         let (a, b) = (input["a"].as_i64().unwrap_or(0), input["b"].as_i64().unwrap_or(0));
///         Ok(json!({ "sum": a + b }))
///     })
///     .build()?;
/// assert_eq!(add.spec().name().as_str(), "add");
/// # Ok(()) }
/// ```
///
/// A tool over typed input and output, its schemas derived from the types, is
/// [`FnTool::typed`] (or [`FnToolBuilder::typed_handler`]). To write a tool as a type
/// instead, implement the [`rein::tool::Tool`](crate::tool::Tool) trait with a plain
/// `async fn`.
#[derive(Clone)]
pub struct FnTool {
    spec: ToolSpec,
    handler: Handler,
}

impl FnTool {
    /// Starts building a tool named `name` (1-64 ASCII letters, digits, `_`, `-`, `.`).
    pub fn builder(name: impl Into<String>) -> FnToolBuilder {
        FnToolBuilder {
            name: name.into(),
            description: String::new(),
            annotations: Annotations::default(),
            input_schema: None,
            output_schema: None,
            derived: None,
            handler: None,
        }
    }

    /// The tool's spec.
    #[must_use]
    pub const fn spec(&self) -> &ToolSpec {
        &self.spec
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl rein_tool::Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        (self.handler)(input).await.map(ToolOutput::new)
    }
}

/// Builds a [`FnTool`] from a name, a description, annotations, schemas and a handler.
#[must_use]
pub struct FnToolBuilder {
    name: String,
    description: String,
    annotations: Annotations,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    /// The schemas a typed handler derived (input, output): used where none was given.
    pub(crate) derived: Option<(Value, Option<Value>)>,
    pub(crate) handler: Option<Handler>,
}

impl fmt::Debug for FnToolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnToolBuilder")
            .field("name", &self.name)
            .field("annotations", &self.annotations)
            .field("has_handler", &self.handler.is_some())
            .finish_non_exhaustive()
    }
}

/// Why a [`FnToolBuilder`] could not build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolBuildError {
    /// The name is not a valid tool name.
    #[error(transparent)]
    InvalidName(#[from] ToolNameError),
    /// No handler was given.
    #[error("tool `{0}` has no handler; call .handler(|input| async move {{ … }}) before .build()")]
    NoHandler(String),
}

impl FnToolBuilder {
    /// What the tool does, for planners.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// What the tool does to the world (default: side-effecting, not idempotent).
    pub const fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The JSON Schema inputs must satisfy (default: any object, or the schema a
    /// [typed handler](Self::typed_handler) derives). The engine compiles it once and checks
    /// every input before the call.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// The JSON Schema of the output, for planners (default: none, or the schema a
    /// [typed handler](Self::typed_handler) derives).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The async function that runs the tool, over raw JSON (for typed input and output,
    /// [`typed_handler`](Self::typed_handler)).
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |input| Box::pin(handler(input))));
        self
    }

    /// Builds the tool.
    ///
    /// # Errors
    /// [`ToolBuildError`] for an invalid name or a missing handler.
    pub fn build(self) -> Result<FnTool, ToolBuildError> {
        let name = ToolName::new(self.name)?;
        let handler = self
            .handler
            .ok_or_else(|| ToolBuildError::NoHandler(name.to_string()))?;
        let mut spec = ToolSpec::new(name, self.description).with_annotations(self.annotations);
        // A schema given explicitly wins over the one derived from a typed handler's types.
        let (derived_input, derived_output) = self.derived.unzip();
        if let Some(schema) = self.input_schema.or(derived_input) {
            spec = spec.with_input_schema(schema);
        }
        if let Some(schema) = self.output_schema.or(derived_output.flatten()) {
            spec = spec.with_output_schema(schema);
        }
        Ok(FnTool { spec, handler })
    }
}

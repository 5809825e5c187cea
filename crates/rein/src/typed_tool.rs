//! Typed tools: a [`FnTool`] from an `async fn` over a `Deserialize + JsonSchema` input and a
//! `Serialize + JsonSchema` output, its schemas derived from the types.

use std::future::Future;
use std::sync::Arc;

use rein_tool::{BoxFuture, ToolError};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::fn_tool::{FnTool, FnToolBuilder, ToolBuildError};

/// The most characters of a decoding error a refusal repeats: serde's messages quote what the
/// planner sent, and a megabyte sent must not come back as a megabyte in the ledger.
const MAX_ERROR_CHARS: usize = 300;

impl FnTool {
    /// A tool named `name` from an async function over typed input and output: the input's
    /// JSON Schema is derived from `I` (and the engine checks every input against it before
    /// the call), the output's from `O`. Input that satisfies the schema but still does not
    /// deserialize into `I` (a `try_from` that refuses it, say) never reaches the function:
    /// the call ends with [`ToolError::InvalidInput`], which the engine records and, when it
    /// hands tool errors back, shows the planner.
    ///
    /// The tool has the default annotations (side-effecting, not idempotent: eligible only
    /// in `act`) and no description; [`FnToolBuilder::typed_handler`] sets both.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use rein::prelude::*;
    /// use rein::schemars::{self, JsonSchema};
    /// use serde::{Deserialize, Serialize};
    ///
    /// /// A support ticket to score.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Ticket {
    ///     /// What the customer wrote.
    ///     title: String,
    ///     /// How bad it is, 1 to 5.
    ///     severity: u8,
    /// }
    ///
    /// #[derive(Serialize, JsonSchema)]
    /// struct Score {
    ///     priority: u8,
    /// }
    ///
    /// let score = FnTool::typed("triage.score", |ticket: Ticket| async move {
    ///     let urgent = ticket.title.contains("outage");
    ///     Ok(Score { priority: if urgent { 1 } else { 6 - ticket.severity.clamp(1, 5) } })
    /// })?;
    /// let schema = score.spec().input_schema();
    /// assert_eq!(schema["type"], "object");
    /// assert_eq!(schema["required"], json!(["title", "severity"]));
    /// assert_eq!(score.spec().output_schema().unwrap()["properties"]["priority"]["type"], "integer");
    /// # Ok(()) }
    /// ```
    ///
    /// The input type must describe itself: a type without `JsonSchema` is refused at
    /// compile time, so no tool runs with a schema that says nothing.
    ///
    /// ```compile_fail
    /// use rein::prelude::*;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize)] // no JsonSchema
    /// struct Ticket { title: String }
    ///
    /// let tool = FnTool::typed("triage.score", |ticket: Ticket| async move { Ok(ticket.title) });
    /// ```
    ///
    /// # Errors
    /// [`ToolBuildError::InvalidName`] when `name` is not a valid tool name.
    pub fn typed<I, O, F, Fut>(name: impl Into<String>, handler: F) -> Result<Self, ToolBuildError>
    where
        I: DeserializeOwned + JsonSchema + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        Self::builder(name).typed_handler(handler).build()
    }
}

impl FnToolBuilder {
    /// The async function that runs the tool, over typed input and output (see
    /// [`FnTool::typed`]): the input schema is derived from `I` and the output schema from
    /// `O`, unless [`input_schema`](Self::input_schema) or
    /// [`output_schema`](Self::output_schema) give one.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use rein::prelude::*;
    /// use rein::schemars::{self, JsonSchema};
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Lookup {
    ///     /// The customer's id.
    ///     customer: u64,
    /// }
    ///
    /// let lookup = FnTool::builder("crm.lookup")
    ///     .description("Looks a customer up by id")
    ///     .annotations(Annotations::read_only())
    ///     .typed_handler(|q: Lookup| async move { Ok(json!({"customer": q.customer, "tier": "gold"})) })
    ///     .build()?;
    ///
    /// let engine = Engine::builder()
    ///     .tool(lookup)
    ///     .planner(ScriptedPlanner::new([
    ///         ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
    ///         ScriptStep::expect(State::Explore, Decision::call_tool("crm.lookup", json!({"customer": 7}), "who")),
    ///         ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "known")),
    ///         ScriptStep::expect(State::Decide, Decision::finish("looked up", json!(null))),
    ///     ]))
    ///     .build()?;
    /// let run = engine.run("look customer 7 up").await?;
    /// assert_eq!(run.status(), RunStatus::Completed);
    /// # Ok(()) }
    /// ```
    pub fn typed_handler<I, O, F, Fut>(mut self, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let output = Some(schema_of::<O>()).filter(|s| !says_nothing(s));
        self.derived = Some((schema_of::<I>(), output));
        self.handler = Some(Arc::new(
            move |input: Value| -> BoxFuture<'static, Result<Value, ToolError>> {
                match decode::<I>(input) {
                    Ok(input) => {
                        let output = handler(input);
                        Box::pin(async move { encode(&output.await?) })
                    }
                    Err(refused) => Box::pin(std::future::ready(Err(refused))),
                }
            },
        ));
        self
    }
}

/// The JSON Schema of `T`, without the `$schema` and `title` noise a planner does not need.
fn schema_of<T: JsonSchema>() -> Value {
    let mut value = schemars::schema_for!(T).to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    value
}

/// Whether a schema allows anything (the schema of `Value`): not worth showing a planner.
fn says_nothing(schema: &Value) -> bool {
    match schema {
        Value::Bool(true) => true,
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// `input` as the tool's input type, or the refusal that says why not.
fn decode<I: DeserializeOwned>(input: Value) -> Result<I, ToolError> {
    serde_json::from_value(input).map_err(|e| {
        let mut message = format!("the input does not fit the tool's input type: {e}");
        if let Some((end, _)) = message.char_indices().nth(MAX_ERROR_CHARS) {
            message.truncate(end);
            message.push('…');
        }
        ToolError::invalid_input(message)
    })
}

/// The tool's output as JSON; an output serde cannot write (a map with non-string keys) is
/// the tool's failure, not the engine's.
fn encode<O: Serialize>(output: &O) -> Result<Value, ToolError> {
    serde_json::to_value(output)
        .map_err(|e| ToolError::failed(format!("the tool's output cannot be written as JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_decoding_error_is_cut() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        enum Mood {
            Calm,
        }
        let long = "x".repeat(10_000);
        let Err(ToolError::InvalidInput { message }) = decode::<Mood>(Value::String(long)) else {
            panic!("a string that is no variant must be refused");
        };
        assert!(message.chars().count() <= MAX_ERROR_CHARS + 1, "{message}");
        assert!(message.starts_with("the input does not fit"), "{message}");
    }

    #[test]
    fn an_output_json_cannot_hold_is_a_tool_failure() {
        let keyed: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let error = encode(&keyed).unwrap_err();
        assert!(
            matches!(
                &error,
                ToolError::Failed {
                    retryable: false,
                    ..
                }
            ),
            "{error:?}"
        );
    }
}

//! `ToolOutput`: what a successful tool call returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The JSON a tool returned. Large outputs are moved to the artifact store by the engine;
/// the run's evidence then keeps a reference instead.
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
}

impl ToolOutput {
    /// Wraps a JSON value.
    #[must_use]
    pub const fn new(value: Value) -> Self {
        Self { value }
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

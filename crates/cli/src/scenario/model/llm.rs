//! The `llm` planner of a scenario file: where the model is and how the planner talks to it.

use rein::llm::{LlmConfig, ProviderConfig};
use serde::{Deserialize, Serialize};

/// A model planner: where the model is, and how the planner talks to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LlmDef {
    /// The server, the model, the key's variable, timeouts and retries.
    pub(crate) provider: ProviderConfig,
    /// Models asked in order when a call to the one before failed after its retries in a
    /// way another model may answer (429, 5xx, overloaded, unreachable); each is written
    /// like `provider`, with its own key variable and headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) fallbacks: Vec<ProviderConfig>,
    /// Prompt, corrections, limits and prices (all optional).
    #[serde(default)]
    pub(crate) planner: LlmConfig,
}

impl LlmDef {
    /// The primary provider, then the fallbacks, in the order they are asked.
    pub(crate) fn providers(&self) -> impl Iterator<Item = &ProviderConfig> {
        std::iter::once(&self.provider).chain(&self.fallbacks)
    }

    /// [`LlmDef::providers`], to change.
    pub(crate) fn providers_mut(&mut self) -> impl Iterator<Item = &mut ProviderConfig> {
        std::iter::once(&mut self.provider).chain(&mut self.fallbacks)
    }
}

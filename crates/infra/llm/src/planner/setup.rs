//! The LLM planner's setters: the system prompt and the model's prices, without spelling
//! out an [`LlmConfig`](super::LlmConfig).

use super::{LlmPlanner, Prices};

impl LlmPlanner {
    /// The same planner with another system prompt (default:
    /// [`DEFAULT_SYSTEM_PROMPT`](crate::DEFAULT_SYSTEM_PROMPT)).
    ///
    /// ```no_run
    /// use rein_llm::{HttpProvider, LlmConfig, LlmPlanner, Prices};
    /// let planner = LlmPlanner::new(HttpProvider::from_env()?, LlmConfig::default())
    ///     .with_system_prompt("You triage support tickets. Be brief.")
    ///     .with_prices(Prices { input_per_million: 150_000, output_per_million: 600_000 });
    /// assert_eq!(planner.config().prompt.system, "You triage support tickets. Be brief.");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_system_prompt(mut self, system: impl Into<String>) -> Self {
        self.config.prompt.system = system.into();
        self
    }

    /// The same planner charging the `cost` budget at `prices` (default: calls cost 0).
    #[must_use]
    pub const fn with_prices(mut self, prices: Prices) -> Self {
        self.config.prices = Some(prices);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Api, HttpProvider, LlmConfig, ProviderConfig};

    #[test]
    fn setters_change_only_what_they_name() {
        let provider = HttpProvider::with_key(
            ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m"),
            None,
        )
        .unwrap();
        let prices = Prices {
            input_per_million: 1,
            output_per_million: 2,
        };
        let planner = LlmPlanner::new(provider, LlmConfig::default())
            .with_system_prompt("be brief")
            .with_prices(prices);
        let expected = LlmConfig {
            prices: Some(prices),
            prompt: crate::PromptConfig {
                system: "be brief".into(),
                ..crate::PromptConfig::default()
            },
            ..LlmConfig::default()
        };
        assert_eq!(planner.config(), &expected);
    }
}

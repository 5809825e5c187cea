//! A provider from the conventional environment variables (`OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, their `_BASE_URL`s, `REIN_LLM_MODEL`), with a typed error naming
//! the variable that is missing or wrong. The key is read, handed to the HTTP client as a
//! sensitive header, and never kept in a configuration, an error or `Debug`.

use crate::config::{Api, ProviderConfig};
use crate::error::LlmError;
use crate::http::HttpProvider;

/// The variable naming the model (required: a default model would go stale).
const MODEL_VAR: &str = "REIN_LLM_MODEL";
/// The variable choosing the protocol (`openai` or `anthropic`) when the environment has
/// keys for both.
const API_VAR: &str = "REIN_LLM_API";

/// Where each protocol's variables and default server are.
struct Conventions {
    api: Api,
    key: &'static str,
    base_url: &'static str,
    default_base_url: &'static str,
}

const OPENAI: Conventions = Conventions {
    api: Api::OpenAi,
    key: "OPENAI_API_KEY",
    base_url: "OPENAI_BASE_URL",
    default_base_url: "https://api.openai.com/v1",
};

const ANTHROPIC: Conventions = Conventions {
    api: Api::Anthropic,
    key: "ANTHROPIC_API_KEY",
    base_url: "ANTHROPIC_BASE_URL",
    default_base_url: "https://api.anthropic.com/v1",
};

/// Why the environment does not describe a usable provider. No variant holds a key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// Neither protocol's variables are set.
    #[error(
        "no model provider in the environment: set OPENAI_API_KEY or ANTHROPIC_API_KEY \
         (or OPENAI_BASE_URL / ANTHROPIC_BASE_URL for a local server without a key)"
    )]
    NoProvider,
    /// A variable the chosen provider needs is not set (or is empty).
    #[error("the environment variable `{var}` is not set: {hint}")]
    Missing {
        /// The variable.
        var: &'static str,
        /// What to put in it.
        hint: &'static str,
    },
    /// Both protocols' keys are set and `REIN_LLM_API` does not say which to use.
    #[error(
        "both OPENAI_API_KEY and ANTHROPIC_API_KEY are set: set REIN_LLM_API to `openai` or \
         `anthropic` to choose"
    )]
    Ambiguous,
    /// A variable holds a value that cannot work.
    #[error("the environment variable `{var}` is {value:?}: {hint}")]
    Invalid {
        /// The variable.
        var: &'static str,
        /// What it holds (never a key).
        value: String,
        /// What it should hold.
        hint: &'static str,
    },
    /// The provider cannot be built from what the variables say (an unusable URL, a key
    /// holding characters a header cannot carry).
    #[error(transparent)]
    Provider(#[from] LlmError),
}

impl ProviderConfig {
    /// The configuration the process environment describes; see
    /// [`from_env_with`](Self::from_env_with).
    ///
    /// # Errors
    /// [`EnvError`] naming the variable that is missing or wrong.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_env_with(|name| std::env::var(name).ok())
    }

    /// The configuration the variables `lookup` returns describe:
    ///
    /// - the protocol: OpenAI-compatible when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set,
    ///   Anthropic when `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is (with both keys set,
    ///   `REIN_LLM_API` = `openai` | `anthropic` chooses);
    /// - the server: `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`, by default
    ///   `https://api.openai.com/v1` / `https://api.anthropic.com/v1`;
    /// - the model: `REIN_LLM_MODEL` (required);
    /// - the key: the configuration names its variable (`api_key_env`), never holds it.
    ///
    /// An empty variable counts as unset.
    ///
    /// ```
    /// use rein_llm::{Api, ProviderConfig};
    /// let env = |name: &str| match name {
    ///     "ANTHROPIC_API_KEY" => Some("sk-ant-secret".to_owned()),
    ///     "REIN_LLM_MODEL" => Some("claude-sonnet-4-5".to_owned()),
    ///     _ => None,
    /// };
    /// let config = ProviderConfig::from_env_with(env)?;
    /// assert_eq!(config.api, Api::Anthropic);
    /// assert_eq!(config.base_url, "https://api.anthropic.com/v1");
    /// assert_eq!(config.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
    /// assert!(!format!("{config:?}").contains("secret"));
    /// # Ok::<(), rein_llm::EnvError>(())
    /// ```
    ///
    /// # Errors
    /// [`EnvError`] naming the variable that is missing or wrong.
    pub fn from_env_with(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let set = |c: &Conventions| (get(c.key).is_some(), get(c.base_url).is_some());
        let conventions = match get(API_VAR).as_deref().map(str::trim) {
            Some("openai" | "open_ai") => &OPENAI,
            Some("anthropic") => &ANTHROPIC,
            Some(other) => {
                return Err(EnvError::Invalid {
                    var: API_VAR,
                    value: other.chars().take(64).collect(),
                    hint: "use `openai` or `anthropic`",
                });
            }
            None => match (set(&OPENAI), set(&ANTHROPIC)) {
                ((true, _), (true, _)) => return Err(EnvError::Ambiguous),
                ((true, _), _) => &OPENAI,
                (_, (true, _)) => &ANTHROPIC,
                ((_, true), (_, true)) => return Err(EnvError::Ambiguous),
                ((_, true), _) => &OPENAI,
                (_, (_, true)) => &ANTHROPIC,
                _ => return Err(EnvError::NoProvider),
            },
        };
        let model = get(MODEL_VAR).ok_or(EnvError::Missing {
            var: MODEL_VAR,
            hint: "export the model's name (e.g. gpt-4o-mini, claude-sonnet-4-5, or your local server's)",
        })?;
        let base_url =
            get(conventions.base_url).unwrap_or_else(|| conventions.default_base_url.to_owned());
        let mut config = ProviderConfig::new(conventions.api, base_url.trim(), model.trim());
        if get(conventions.key).is_some() {
            config = config.with_api_key_env(conventions.key);
        } else if get(conventions.base_url).is_none() {
            // The provider's own server needs a key; only a server named by URL may do without.
            return Err(EnvError::Missing {
                var: conventions.key,
                hint: "export the provider's API key, or its _BASE_URL for a local server",
            });
        }
        Ok(config)
    }
}

impl HttpProvider {
    /// A provider for the model the process environment describes (see
    /// [`ProviderConfig::from_env_with`] for the variables).
    ///
    /// ```no_run
    /// use rein_llm::{HttpProvider, LlmConfig, LlmPlanner};
    /// // OPENAI_API_KEY=… REIN_LLM_MODEL=gpt-4o-mini
    /// let planner = LlmPlanner::new(HttpProvider::from_env()?, LlmConfig::default());
    /// # Ok::<(), rein_llm::EnvError>(())
    /// ```
    ///
    /// # Errors
    /// [`EnvError`] naming the variable that is missing or wrong.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_env_with(|name| std::env::var(name).ok())
    }

    /// A provider for the model the variables `lookup` returns describe (see
    /// [`ProviderConfig::from_env_with`]); the key is read through `lookup` too, so tests
    /// and secret stores need not touch the process environment.
    ///
    /// ```
    /// use rein_llm::{EnvError, HttpProvider, Provider};
    /// let env = |name: &str| match name {
    ///     "OPENAI_API_KEY" => Some("sk-secret".to_owned()),
    ///     "REIN_LLM_MODEL" => Some("gpt-4o-mini".to_owned()),
    ///     _ => None,
    /// };
    /// let provider = HttpProvider::from_env_with(env)?;
    /// assert_eq!((provider.name(), provider.model()), ("openai", "gpt-4o-mini"));
    /// assert!(!format!("{provider:?}").contains("sk-secret"));
    ///
    /// let no_model = HttpProvider::from_env_with(|name| env(name).filter(|_| name != "REIN_LLM_MODEL"));
    /// assert!(matches!(no_model, Err(EnvError::Missing { var: "REIN_LLM_MODEL", .. })));
    /// # Ok::<(), EnvError>(())
    /// ```
    ///
    /// # Errors
    /// [`EnvError`] naming the variable that is missing or wrong.
    pub fn from_env_with(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let config = ProviderConfig::from_env_with(&lookup)?;
        let key = config
            .api_key_env
            .as_deref()
            .and_then(lookup)
            .map(|key| key.trim().to_owned());
        Ok(Self::with_key(config, key.as_deref())?)
    }
}

//! The `"planner": {"llm": {...}}` form of scenario files: a model behind an
//! OpenAI-compatible or Anthropic server drives the run.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rein::EngineBuilder;
use rein::llm::{
    FallbackProvider, HeaderSource, HttpProvider, LlmPlanner, NameMap, ProviderConfig,
    StreamProgress,
};
use rein::{ToolName, json};

use super::model::{LlmDef, ToolDef};

/// The names of the scenario's tools (built-in and fixtures), valid ones only.
fn tool_names(tools: &[ToolDef]) -> Vec<ToolName> {
    tools
        .iter()
        .filter_map(|def| {
            let name = def
                .builtin
                .map(|b| b.name().to_owned())
                .or_else(|| def.fixture.clone())?;
            ToolName::new(name).ok()
        })
        .collect()
}

/// The provider configuration of `def`. A stored copy left header values out: `rein
/// resume` puts them back before it calls a model, and `inspect` rebuilds request bodies,
/// which carry no header, so an empty value stands in for each.
pub(crate) fn provider_config(config: &ProviderConfig) -> ProviderConfig {
    let mut config = config.clone();
    for (_, value) in &mut config.extra_headers {
        if matches!(value, HeaderSource::Redacted { .. }) {
            *value = HeaderSource::from("");
        }
    }
    config
}

/// What is wrong with `def` for these tools: an unusable provider configuration, a key
/// variable that is not set, tool names that collide as function names.
pub(crate) fn check(def: &LlmDef, tools: &[ToolDef]) -> Result<(), (&'static str, String)> {
    HttpProvider::new(provider_config(&def.provider)).map_err(|e| ("provider", e.to_string()))?;
    for (i, fallback) in def.fallbacks.iter().enumerate() {
        HttpProvider::new(provider_config(fallback))
            .map_err(|e| ("fallbacks", format!("fallback {}: {e}", i + 1)))?;
    }
    NameMap::new(&tool_names(tools))
        .map(|_| ())
        .map_err(|e| ("planner", e.to_string()))
}

/// `builder` with the model planner of `def` (checked before: a failure here leaves the
/// builder without a planner, which the engine refuses to build).
pub(crate) fn with_planner(builder: EngineBuilder, def: &LlmDef) -> EngineBuilder {
    let http = |config: &ProviderConfig| {
        let mut provider = HttpProvider::new(provider_config(config)).ok()?;
        if let Some(context) = crate::telemetry::context() {
            provider = provider.with_trace_context(context);
        }
        Some(if config.stream && std::io::stderr().is_terminal() {
            provider.with_progress(Arc::new(show_progress))
        } else {
            provider
        })
    };
    let Some(primary) = http(&def.provider) else {
        return builder;
    };
    // The engine names its tools in every plan request; names that collide as function
    // names were refused by `check`.
    if def.fallbacks.is_empty() {
        return builder.planner(LlmPlanner::new(primary, def.planner.clone()));
    }
    let mut chain = FallbackProvider::new(primary);
    for fallback in &def.fallbacks {
        let Some(provider) = http(fallback) else {
            return builder;
        };
        chain = chain.with_fallback(provider);
    }
    builder.planner(LlmPlanner::new(chain, def.planner.clone()))
}

/// Set while `rein run` shows the model's replies themselves as they stream in: the
/// token count below would only write over them.
static REPLIES_SHOWN: AtomicBool = AtomicBool::new(false);

/// Says that the model's replies are shown as they stream in (`rein run` on a terminal),
/// so the streaming token count on stderr stays quiet.
pub(crate) fn replies_shown() {
    REPLIES_SHOWN.store(true, Ordering::Relaxed);
}

/// One line of streaming progress on the terminal: about how many tokens so far, and how
/// fast (a token taken as four bytes).
fn show_progress(p: StreamProgress) {
    if REPLIES_SHOWN.load(Ordering::Relaxed) {
        return;
    }
    let tokens = p.bytes.div_ceil(4);
    let secs = p.elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        tokens as f64 / secs
    } else {
        0.0
    };
    eprint!("\r  model: ~{tokens} tokens, {rate:.0} tokens/s   ");
}

/// The schema's example of an LLM planner, for error messages.
pub(crate) fn example() -> String {
    json!({"llm": {"provider": {"api": "open_ai", "base_url": "http://127.0.0.1:8080/v1", "model": "local"}}})
        .to_string()
}

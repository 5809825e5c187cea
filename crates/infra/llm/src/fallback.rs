//! `FallbackProvider`: an ordered list of models, the next one asked when a call to the
//! previous one failed, after its own retries, in a way another model may not.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rein_run::{BoxFuture, Digest, ModelDelta};
use tokio::time::Instant;

use crate::chat::ChatRequest;
use crate::error::LlmError;
use crate::provider::{AttemptHook, Completion, DynProvider, NoHook, Provider};

/// A primary provider and its fallbacks, tried in order. A call goes to the next one only
/// when the previous one failed with an error another model may answer
/// ([`LlmError::another_model_may_answer`]: rate limited, a server failure or overload, a
/// connection failure, a timeout, an open circuit); an error the request caused (a 400, a
/// refused key, a prompt too long) ends the call, as it would without fallbacks.
///
/// Every attempt is announced to the hook with the provider and model it is sent to
/// ([`AttemptHook::sending_to`]), numbered on from the previous provider's attempts, so
/// the record names the model each request body went to, and the one that answered.
///
/// ```no_run
/// use rein_llm::{Api, FallbackProvider, HttpProvider, ProviderConfig};
/// let primary = HttpProvider::new(ProviderConfig::new(Api::Anthropic, "https://api.anthropic.com/v1", "big"))?;
/// let spare = HttpProvider::new(ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:8080/v1", "local"))?;
/// let provider = FallbackProvider::new(primary).with_fallback(spare);
/// # Ok::<(), rein_llm::LlmError>(())
/// ```
#[derive(Clone)]
pub struct FallbackProvider {
    /// The primary first; never empty.
    chain: Vec<Arc<dyn DynProvider>>,
}

impl std::fmt::Debug for FallbackProvider {
    /// Names and models only: a provider's own `Debug` may be richer, never safer.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.chain.iter().map(|p| (p.name(), p.model())))
            .finish()
    }
}

impl FallbackProvider {
    /// `primary` alone, until fallbacks are added.
    #[must_use]
    pub fn new(primary: impl Provider) -> Self {
        Self {
            chain: vec![Arc::new(primary)],
        }
    }

    /// The same, with `fallback` tried after the ones before it.
    #[must_use]
    pub fn with_fallback(mut self, fallback: impl Provider) -> Self {
        self.chain.push(Arc::new(fallback));
        self
    }
}

impl Provider for FallbackProvider {
    /// The primary's name.
    fn name(&self) -> &str {
        self.chain[0].name()
    }

    /// The primary's model.
    fn model(&self) -> &str {
        self.chain[0].model()
    }

    /// The largest of all: the worst case of a call, whichever model answers it.
    fn max_output_tokens(&self) -> u32 {
        self.chain
            .iter()
            .map(|p| p.max_output_tokens())
            .max()
            .unwrap_or(0)
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.complete_with(request, &NoHook).await
    }

    /// The primary's body's hash.
    fn request_hash(&self, request: &ChatRequest) -> Digest {
        self.chain[0].request_hash_dyn(request)
    }

    async fn complete_with(
        &self,
        request: &ChatRequest,
        hook: &dyn AttemptHook,
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let mut offset = 0u32;
        let mut last_error = None;
        for provider in &self.chain {
            hook.sending_to(provider.name(), provider.model());
            let numbered = Numbered {
                hook,
                offset,
                last: AtomicU32::new(0),
            };
            let outcome = provider.complete_with_boxed(request, &numbered).await;
            offset = offset.saturating_add(numbered.last.load(Ordering::Relaxed));
            match outcome {
                Ok(completion) => {
                    return Ok(Completion {
                        latency: started.elapsed(),
                        ..completion
                    });
                }
                Err(e) if e.another_model_may_answer() => last_error = Some(e),
                Err(e) => return Err(e),
            }
        }
        // The chain is never empty, so a provider failed.
        Err(last_error.unwrap_or_else(|| LlmError::Config("no model to call".into())))
    }
}

/// The caller's hook, with one provider's attempts numbered on from the ones before it.
struct Numbered<'a> {
    hook: &'a dyn AttemptHook,
    offset: u32,
    /// The provider's number of its last attempt announced.
    last: AtomicU32,
}

impl AttemptHook for Numbered<'_> {
    fn before(&self, attempt: u32, request_hash: Digest) -> BoxFuture<'_, Result<(), LlmError>> {
        self.last.fetch_max(attempt, Ordering::Relaxed);
        self.hook
            .before(self.offset.saturating_add(attempt), request_hash)
    }

    fn failed<'a>(&'a self, attempt: u32, error: &'a LlmError) -> BoxFuture<'a, ()> {
        self.hook.failed(self.offset.saturating_add(attempt), error)
    }

    fn sending_to(&self, provider: &str, model: &str) {
        self.hook.sending_to(provider, model);
    }

    fn streams(&self) -> bool {
        self.hook.streams()
    }

    fn delta(&self, delta: ModelDelta) {
        self.hook.delta(delta);
    }
}

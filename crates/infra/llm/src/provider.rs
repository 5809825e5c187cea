//! The `Provider` port: one model call from a [`ChatRequest`] to a [`Completion`], and its
//! object-safe twin.

use std::future::Future;
use std::time::Duration;

use rein_run::{BoxFuture, Digest, ModelDelta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat::{ChatRequest, ChatResponse};
use crate::error::LlmError;

/// A completed model call: the reply and what the ledger needs to know about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The reply.
    pub response: ChatResponse,
    /// The SHA-256 of the exact request body sent (the last attempt's).
    pub request_hash: Digest,
    /// Wall time from the first attempt to the end of the reply, retries included.
    #[serde(with = "millis")]
    pub latency: Duration,
}

/// Told about every attempt of a model call, retries included: before it is sent (and it is
/// not sent until `before` resolves), and after it when it failed. The LLM planner's hook
/// puts each attempt on the engine's record before it goes out.
pub trait AttemptHook: Send + Sync {
    /// Attempt `attempt` (from 1) of a call whose request body hashes to `request_hash` is
    /// about to be sent.
    ///
    /// # Errors
    /// [`LlmError::AttemptRefused`] when it must not be sent; the call then ends with it.
    fn before(&self, attempt: u32, request_hash: Digest) -> BoxFuture<'_, Result<(), LlmError>>;
    /// Attempt `attempt` failed with `error` (it may be retried).
    fn failed<'a>(&'a self, attempt: u32, error: &'a LlmError) -> BoxFuture<'a, ()>;
    /// The attempts announced next are sent to `provider`'s `model` (a
    /// [`FallbackProvider`](crate::FallbackProvider) says so before each model it asks).
    /// Without it they go to the provider's own [`Provider::model`]. The default ignores it.
    fn sending_to(&self, provider: &str, model: &str) {
        let _ = (provider, model);
    }
    /// Whether anybody watches the reply of the attempt in flight stream in: a streaming
    /// provider builds [`ModelDelta`]s only then. The default: nobody.
    fn streams(&self) -> bool {
        false
    }
    /// A piece of the reply of the attempt in flight, as it streams in, in order (an
    /// attempt that fails after some pieces is followed by the next attempt's, from the
    /// start). MUST NOT block. The default drops it.
    fn delta(&self, delta: ModelDelta) {
        let _ = delta;
    }
}

/// Something that answers chat requests: an HTTP client for a real server, a recorder, a
/// replayer, a test double.
///
/// # Contract
/// - `complete` MUST NOT panic on anything a server sends: every problem is an [`LlmError`].
/// - `complete` MUST keep secrets (API keys) out of its errors and of `Debug`.
/// - `complete` MAY retry transient failures itself; the [`Completion`] describes the call
///   that succeeded.
pub trait Provider: Send + Sync + 'static {
    /// The provider's name for the ledger (`openai`, `anthropic`, `replay`, …).
    fn name(&self) -> &str;
    /// The model's name.
    fn model(&self) -> &str;
    /// The most tokens one reply may generate (the worst case a call can spend on output).
    fn max_output_tokens(&self) -> u32;
    /// Sends `request` and returns the model's reply.
    fn complete(
        &self,
        request: &ChatRequest,
    ) -> impl Future<Output = Result<Completion, LlmError>> + Send;

    /// The SHA-256 of the body `request` is sent as. The default hashes the request's JSON;
    /// a provider that sends another body MUST override it.
    fn request_hash(&self, request: &ChatRequest) -> Digest {
        Digest::of_json(&serde_json::to_value(request).unwrap_or(Value::Null))
    }

    /// [`Provider::complete`], telling `hook` before every attempt and after each failed
    /// one. The default makes one attempt; a provider that retries MUST override it so
    /// every retry is announced.
    fn complete_with(
        &self,
        request: &ChatRequest,
        hook: &dyn AttemptHook,
    ) -> impl Future<Output = Result<Completion, LlmError>> + Send {
        async move {
            hook.before(1, self.request_hash(request)).await?;
            let outcome = self.complete(request).await;
            if let Err(e) = &outcome {
                hook.failed(1, e).await;
            }
            outcome
        }
    }
}

/// The object-safe twin of [`Provider`], implemented for every provider.
pub trait DynProvider: Send + Sync + 'static {
    /// See [`Provider::name`].
    fn name(&self) -> &str;
    /// See [`Provider::model`].
    fn model(&self) -> &str;
    /// See [`Provider::max_output_tokens`].
    fn max_output_tokens(&self) -> u32;
    /// [`Provider::complete`], boxed.
    fn complete_boxed<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;
    /// See [`Provider::request_hash`].
    fn request_hash_dyn(&self, request: &ChatRequest) -> Digest;
    /// [`Provider::complete_with`], boxed.
    fn complete_with_boxed<'a>(
        &'a self,
        request: &'a ChatRequest,
        hook: &'a dyn AttemptHook,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;
}

impl<P: Provider> DynProvider for P {
    fn name(&self) -> &str {
        Provider::name(self)
    }
    fn model(&self) -> &str {
        Provider::model(self)
    }
    fn max_output_tokens(&self) -> u32 {
        Provider::max_output_tokens(self)
    }
    fn complete_boxed<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete(request))
    }
    fn request_hash_dyn(&self, request: &ChatRequest) -> Digest {
        Provider::request_hash(self, request)
    }
    fn complete_with_boxed<'a>(
        &'a self,
        request: &'a ChatRequest,
        hook: &'a dyn AttemptHook,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete_with(request, hook))
    }
}

/// The hook of a plain `complete`: lets every attempt go.
pub(crate) struct NoHook;

impl AttemptHook for NoHook {
    fn before(&self, _: u32, _: Digest) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(std::future::ready(Ok(())))
    }
    fn failed<'a>(&'a self, _: u32, _: &'a LlmError) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// Durations as whole milliseconds in JSON.
pub(crate) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

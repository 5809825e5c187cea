//! `ExecutionStack`, built once per engine, and the `ToolStack` it builds once per tool.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use rein_tool::{BoxFuture, SharedTool, ToolError, ToolName, ToolOutput};
use tower::retry::Retry;
use tower::util::{BoxCloneSyncService, BoxCloneSyncServiceLayer, Either};
use tower::{Layer, Service, ServiceBuilder, ServiceExt as _};

use crate::layer::{
    Attempt, AttemptLayer, Breaker, BreakerLayer, BulkheadService, CatchPanic, CatchPanicLayer,
    Circuit, CircuitState, Failure, IdempotentRetry, Timeout, TimeoutLayer, bulkhead,
};
use crate::{ResilienceConfig, ToolCall, ToolPolicy};

/// The service user layers wrap: the tool, or the user layers inside this one.
pub type ToolService = BoxCloneSyncService<ToolCall, ToolOutput, ToolError>;

/// Builds a [`ToolStack`] per tool from one [`ResilienceConfig`] and the user's layers.
///
/// Build the `ExecutionStack` once per engine and a `ToolStack` once per tool, not per run:
/// a tool's circuit breaker and bulkhead live in its `ToolStack` and are shared by every
/// clone of it.
///
/// ```
/// use std::sync::Arc;
/// use rein_resilience::{ExecutionStack, ResilienceConfig};
/// use rein_tool::{Annotations, SharedTool, Tool, ToolError, ToolOutput, ToolSpec};
/// use serde_json::Value;
///
/// struct Echo(ToolSpec);
/// impl Tool for Echo {
///     fn spec(&self) -> &ToolSpec { &self.0 }
///     async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> { Ok(input.into()) }
/// }
///
/// let stack = ExecutionStack::new(ResilienceConfig::default());
/// let echo: SharedTool =
///     Arc::new(Echo(ToolSpec::new("echo".parse()?, "").with_annotations(Annotations::read_only())));
/// let echo_stack = stack.build(echo);
/// assert_eq!(echo_stack.tool().as_str(), "echo");
/// assert!(echo_stack.policy().retry.is_some());
/// # Ok::<(), rein_tool::ToolNameError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ExecutionStack {
    config: ResilienceConfig,
    layers: Vec<UserLayer>,
}

/// One tool's execution stack: call it as often as needed, from any task; clones share the
/// tool's circuit breaker and bulkhead. Built by [`ExecutionStack::build`].
#[derive(Clone)]
pub struct ToolStack {
    service: StackService,
    shared: Arc<StackShared>,
}

type UserLayer = BoxCloneSyncServiceLayer<ToolService, ToolCall, ToolOutput, ToolError>;

/// The layers that run once per attempt, around the tool or the user layers around it.
type AttemptService = Breaker<Attempt<Timeout<CatchPanic<Either<ToolFn, ToolService>>>>>;

/// The whole stack; the retry layer is there only for idempotent tools.
type StackService = BulkheadService<Either<Retry<IdempotentRetry, AttemptService>, AttemptService>>;

/// What every clone of a [`ToolStack`] shares.
#[derive(Debug)]
struct StackShared {
    tool: ToolName,
    policy: ToolPolicy,
    circuit: Circuit,
}

impl ExecutionStack {
    /// A stack following `config`, with no user layers.
    pub const fn new(config: ResilienceConfig) -> Self {
        Self {
            config,
            layers: Vec::new(),
        }
    }

    /// Adds a user layer around every tool, inside the stack's policy layers: an attempt
    /// reaches it only once the bulkhead, the circuit breaker and the caller's observer have
    /// let it through, the attempt's timeout covers it, and its panics are caught like the
    /// tool's. So it can neither bypass the policies nor escape them. It sees every attempt
    /// ([`ToolCall::attempt`]). The first layer added is the outermost.
    ///
    /// The layer's service must keep [`ToolError`] as its error; map foreign errors (tower's
    /// `BoxError`) to a `ToolError` inside it.
    ///
    /// ```
    /// use rein_resilience::{ExecutionStack, ResilienceConfig, ToolCall};
    /// use tower::ServiceBuilder;
    ///
    /// // Logs every attempt before it reaches the tool.
    /// let stack = ExecutionStack::new(ResilienceConfig::default()).with_layer(
    ///     ServiceBuilder::new().map_request(|call: ToolCall| {
    ///         tracing::info!(attempt = call.attempt(), "calling tool");
    ///         call
    ///     }),
    /// );
    /// # let _ = stack;
    /// ```
    pub fn with_layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<ToolService> + Send + Sync + 'static,
        L::Service: Service<ToolCall, Response = ToolOutput, Error = ToolError>
            + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as Service<ToolCall>>::Future: Send + 'static,
    {
        self.layers.push(BoxCloneSyncServiceLayer::new(layer));
        self
    }

    /// The configuration stacks are built from.
    #[must_use]
    pub const fn config(&self) -> &ResilienceConfig {
        &self.config
    }

    /// Builds the stack for `tool` under [`ResilienceConfig::policy_for`] its spec, with a
    /// new circuit breaker and bulkhead of its own.
    pub fn build(&self, tool: SharedTool) -> ToolStack {
        let name = tool.spec().name().clone();
        let policy = self.config.policy_for(tool.spec());
        let circuit = Circuit::new(name.clone(), policy.breaker);

        let inner = if self.layers.is_empty() {
            Either::Left(ToolFn(tool))
        } else {
            let tool = ToolService::new(ToolFn(tool));
            Either::Right(
                self.layers
                    .iter()
                    .rev()
                    .fold(tool, |inner, layer| layer.layer(inner)),
            )
        };
        let per_attempt = ServiceBuilder::new()
            .layer(BreakerLayer::new(circuit.clone()))
            .layer(AttemptLayer::new(name.clone()))
            .layer(TimeoutLayer::new(policy.timeout))
            .layer(CatchPanicLayer)
            .service(inner);
        let retrying = match policy.retry {
            Some(retry) => Either::Left(Retry::new(IdempotentRetry::new(retry), per_attempt)),
            None => Either::Right(per_attempt),
        };
        let service = bulkhead(retrying, policy.bulkhead, &name);

        ToolStack {
            service,
            shared: Arc::new(StackShared {
                tool: name,
                policy,
                circuit,
            }),
        }
    }
}

impl ToolStack {
    /// Runs `call` through the stack: bulkhead, then up to the policy's attempts, each
    /// admitted by the circuit breaker and the call's observer, bounded by the timeout,
    /// panics caught.
    ///
    /// The future owns everything it needs (it does not borrow the stack) and runs the tool
    /// inside itself, never on a spawned task: dropping it cancels the tool. It must be
    /// polled within a Tokio runtime with its time driver enabled.
    ///
    /// # Errors
    /// The tool's own [`ToolError`] (after the last attempt, if retried), or one the stack
    /// made: [`ToolError::TimedOut`], [`ToolError::Panicked`], [`ToolError::CircuitOpen`],
    /// [`ToolError::Overloaded`], or the error the observer vetoed an attempt with.
    pub fn call(
        &self,
        call: ToolCall,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
        let service = self.service.clone();
        async move {
            service
                .oneshot(call)
                .await
                .map_err(Failure::into_tool_error)
        }
    }

    /// The tool this stack calls.
    #[must_use]
    pub fn tool(&self) -> &ToolName {
        &self.shared.tool
    }

    /// The policy this stack was built with.
    #[must_use]
    pub fn policy(&self) -> &ToolPolicy {
        &self.shared.policy
    }

    /// The state of the tool's circuit breaker, as last observed.
    #[must_use]
    pub fn circuit_state(&self) -> CircuitState {
        self.shared.circuit.state()
    }
}

impl fmt::Debug for ToolStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolStack")
            .field("tool", &self.shared.tool)
            .field("policy", &self.shared.policy)
            .field("circuit", &self.circuit_state())
            .finish_non_exhaustive()
    }
}

/// The innermost service: the tool itself, whose future lives inside the stack's future.
#[derive(Clone)]
struct ToolFn(SharedTool);

impl Service<ToolCall> for ToolFn {
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = BoxFuture<'static, Result<ToolOutput, ToolError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        Arc::clone(&self.0).call_owned(call.into_input())
    }
}

impl fmt::Debug for ToolFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolFn").field(self.0.spec().name()).finish()
    }
}

//! `ExecutionStack`, built once per engine, and the `ToolStack` it builds once per tool.

use std::fmt;
use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::task::{Context, Poll};

use rein_tool::{BoxFuture, SharedTool, ToolError, ToolName, ToolOutput};
use serde_json::Value;
use tower::util::{BoxCloneSyncService, BoxCloneSyncServiceLayer};
use tower::{Layer, Service};

use crate::layer::{
    Circuit, CircuitState, Failure, Permits, Report, admit, backoff, catch_panic, timeout,
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
    core: Arc<Core>,
}

type UserLayer = BoxCloneSyncServiceLayer<ToolService, ToolCall, ToolOutput, ToolError>;

/// What every clone of a [`ToolStack`] shares: all a call needs. A call holds one share of
/// it and runs every step in its own future, so a step with nothing to do costs a branch.
struct Core {
    tool: ToolName,
    policy: ToolPolicy,
    circuit: Circuit,
    permits: Permits,
    target: Target,
}

/// What an attempt calls once the policy steps have let it through.
enum Target {
    /// The tool itself.
    Tool(SharedTool),
    /// The user layers, around the tool.
    Layers(ToolService),
}

/// [`Target`] for one call: the user layers' service is the call's own clone, since a tower
/// service is readied and called through `&mut`.
enum CallTarget<'a> {
    Tool(&'a SharedTool),
    Layers(ToolService),
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
        let target = if self.layers.is_empty() {
            Target::Tool(tool)
        } else {
            let tool = ToolService::new(ToolFn(tool));
            Target::Layers(
                self.layers
                    .iter()
                    .rev()
                    .fold(tool, |inner, layer| layer.layer(inner)),
            )
        };
        ToolStack {
            core: Arc::new(Core {
                circuit: Circuit::new(name.clone(), policy.breaker),
                permits: Permits::new(policy.bulkhead),
                tool: name,
                policy,
                target,
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
        let core = Arc::clone(&self.core);
        async move { core.run(call).await }
    }

    /// The tool this stack calls.
    #[must_use]
    pub fn tool(&self) -> &ToolName {
        &self.core.tool
    }

    /// The policy this stack was built with.
    #[must_use]
    pub fn policy(&self) -> &ToolPolicy {
        &self.core.policy
    }

    /// The state of the tool's circuit breaker, as last observed.
    #[must_use]
    pub fn circuit_state(&self) -> CircuitState {
        self.core.circuit.state()
    }
}

impl fmt::Debug for ToolStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolStack")
            .field("tool", &self.core.tool)
            .field("policy", &self.core.policy)
            .field("circuit", &self.circuit_state())
            .finish_non_exhaustive()
    }
}

impl Core {
    /// The whole call: a permit from the bulkhead, then attempts until one is not retried.
    async fn run(&self, mut call: ToolCall) -> Result<ToolOutput, ToolError> {
        let _permit = self.permits.enter(&self.tool).await?;
        let max_attempts = self
            .policy
            .retry
            .map_or(1, |retry| retry.max_attempts.get().min(call.max_attempts));
        let mut target = match &self.target {
            Target::Tool(tool) => CallTarget::Tool(tool),
            Target::Layers(service) => CallTarget::Layers(service.clone()),
        };
        loop {
            let attempt = call.attempt;
            // A copy of the input stays behind only while a retry may still need it and the
            // observer will not hand it over; the last attempt gets the input itself.
            let (this, retry) = if attempt >= max_attempts {
                (call, None)
            } else if call.retry_inputs_from_observer {
                let rest = ToolCall {
                    input: Value::Null,
                    observer: call.observer.clone(),
                    ..call
                };
                (call, Some(rest))
            } else {
                (call.clone(), Some(call))
            };
            let result = self.attempt(&mut target, this).await;
            let delay = match (retry, &self.policy.retry) {
                (Some(retry), Some(config)) => {
                    backoff(config, attempt, max_attempts, &result).map(|delay| (retry, delay))
                }
                _ => None,
            };
            let Some((retry, delay)) = delay else {
                return result.map_err(Failure::into_tool_error);
            };
            // Boxed: only a call that retries carries a timer in its future.
            Box::pin(tokio::time::sleep(delay)).await;
            call = ToolCall {
                attempt: attempt + 1,
                ..retry
            };
        }
    }

    /// One attempt: the user layers ready, the breaker's and the observer's admission, then
    /// the tool under the timeout with its panics caught, and the outcome reported to both.
    async fn attempt(
        &self,
        target: &mut CallTarget<'_>,
        call: ToolCall,
    ) -> Result<ToolOutput, Failure> {
        if let CallTarget::Layers(service) = target {
            // User layers that cannot get ready end the call: no retry, no breaker count.
            poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(Failure::Vetoed)?;
        }
        let in_flight = self.circuit.enter().map_err(Failure::Tool)?;
        let mut call = call;
        let mut report = match call.observer.clone() {
            None => None,
            Some(observer) => {
                let admitted = match admit(observer.as_ref(), &self.tool, call.attempt).await {
                    Ok(Some(input)) => {
                        call.input = input;
                        Ok(())
                    }
                    Ok(None) if call.retry_inputs_from_observer && call.attempt > 1 => {
                        Err(self.no_retry_input(call.attempt))
                    }
                    Ok(None) => Ok(()),
                    Err(error) => Err(error),
                };
                if let Err(error) = admitted {
                    let vetoed = Err(Failure::Vetoed(error));
                    in_flight.finish(&vetoed);
                    return vetoed;
                }
                Some(Report::start(observer, &self.tool, call.attempt))
            }
        };
        let outcome = timeout(catch_panic(|| target.call(call)), self.policy.timeout).await;
        if let Some(report) = &mut report {
            report.send(&outcome);
        }
        let result = outcome.map_err(Failure::Tool);
        in_flight.finish(&result);
        result
    }
}

impl Core {
    /// The veto of a retry admitted without the input its call's observer was to hand over.
    fn no_retry_input(&self, attempt: u32) -> ToolError {
        tracing::debug!(tool = %self.tool, attempt, "retry admitted without its input");
        ToolError::failed(format!(
            "retry {attempt} of `{}` was admitted without its input: a call made with \
             `ToolCall::with_retry_inputs` needs every retry admitted with \
             `Admission::allow_with_input` or `Admission::wait_with_input`",
            self.tool
        ))
    }
}

impl CallTarget<'_> {
    /// Starts `call` on the tool, or on the user layers (readied first).
    fn call(&mut self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        match self {
            Self::Tool(tool) => tool.call_boxed(call.into_input()),
            Self::Layers(service) => service.call(call),
        }
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

//! Hooks: operator code asked at fixed points of a run, whose verdict can only narrow what
//! the run's policy allows — allow, deny with a reason, or narrow (hold this call for
//! approval, lower a budget's limit). A hook never widens and never rewrites a tool's input
//! or a model's reply: a planner proposes, a hook only narrows.
//!
//! A hook is any [`Hook`] (a plain `async fn check`), or a closure: a check that only looks
//! at the payload through [`HookSpec::from_check`] (asked without a future or a timer, the
//! cheapest hook there is), one that must wait on something through [`HookSpec::from_fn`];
//! a [`HookSpec`] says where it is asked ([`HookPoint`]s, and at the
//! tool points which tools, as a [`ToolGlob`]) and how long it may take. Register it with
//! [`EngineBuilder::hook`](crate::EngineBuilder::hook). The hooks of a point are asked one
//! after another **in registration order**, on the run's own task (a slow hook slows only
//! its own run), and every verdict is combined by the engine's gate: a deny wins, every
//! narrowing applies.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rein_engine::Engine;
//! use rein_engine::hook::{HookPoint, HookSpec, Narrowing, HookVerdict};
//! use rein_planner::{ScriptStep, ScriptedPlanner};
//! use rein_run::{Decision, RunStatus, State};
//! use serde_json::json;
//!
//! let no_deletes = HookSpec::from_check("no-deletes", [HookPoint::BeforeTool], |call| {
//!     match call.tool.as_ref().map(|t| t.as_str()) {
//!         Some("rm") => HookVerdict::deny("deleting is not allowed here"),
//!         Some("write") => HookVerdict::Narrow(Narrowing::require_approval("writes need a person")),
//!         _ => HookVerdict::Allow,
//!     }
//! })
//! .tools("*".parse()?);
//! let engine = Engine::builder()
//!     .hook(no_deletes)
//!     .planner(ScriptedPlanner::new([
//!         ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
//!         ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "known")),
//!         ScriptStep::expect(State::Decide, Decision::finish("nothing to tidy", json!(0))),
//!     ]))
//!     .build()?;
//! assert_eq!(engine.run("Tidy up").await?.status(), RunStatus::Completed);
//! # Ok(()) }
//! ```
//!
//! # What each point's verdict does
//!
//! | point | deny | require approval | lower a budget |
//! |---|---|---|---|
//! | `run_start` | the run fails (`policy_violation`) | the run fails: nothing to approve | the run's limit is lowered |
//! | `before_model` | the step is refused, like a refused decision (handed back or fatal by `on_violation`) | refused likewise: a model call cannot be approved | lowered before the planner is asked |
//! | `before_tool` | the call is refused and handed back to the planner like any refusal (in a batch: the batch, whole) | the call waits for the approver as if the policy named it | lowered before the call is charged |
//! | `child_start` | the delegation is refused like any refused delegation | refused likewise | lowered before the child's budget is carved |
//! | `after_model`, `after_tool`, `child_end`, `pause`, `run_end` | ignored: these only observe | ignored | ignored |
//!
//! A hook at a `before_*`, `run_start` or `child_start` point **fails closed**: one that
//! returns an error, panics, takes longer than its timeout (default
//! [`DEFAULT_HOOK_TIMEOUT`]) or asks for something the gate cannot grant denies, and the
//! reason says so. Every verdict other than allow is recorded, before the engine acts on
//! it, in one `hook_verdicts` ledger entry naming each hook (its name, and for a command
//! hook the SHA-256 of its command line and of its script); a resume that finds the entry
//! acts on it without asking the hooks again.
//!
//! # Why a hook cannot widen
//!
//! [`HookVerdict`] has no way to say "allow more": [`Narrowing`] can only be built by
//! [`Narrowing::require_approval`] and [`Narrowing::budget`], and the gate takes a budget
//! limit as the lower of the hook's and the policy's. A hook that asks for a higher limit
//! than the run has narrows nothing.

mod glob;
mod payload;
mod table;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rein_run::{BoxFuture, BudgetName, ToolName};

pub use glob::{GlobError, ToolGlob};
pub use payload::HookPayload;
pub use rein_ledger::{HookOutcome, HookPoint, HookRuling};
pub use rein_policy::HookRef;
pub(crate) use table::HookTable;

/// How long a hook may take when its [`HookSpec`] does not say: 5 seconds.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// What a hook answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HookVerdict {
    /// Go on, as the policy says.
    Allow,
    /// Refuse, for `reason` (see the table in the [module docs](self) for what a deny does
    /// at each point).
    Deny {
        /// Why, as the ledger records it and the planner is told.
        reason: String,
    },
    /// Go on, under a stricter rule.
    Narrow(Narrowing),
}

impl HookVerdict {
    /// A deny, for `reason`.
    #[must_use]
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }
}

/// What a hook may ask beyond allow and deny: hold this call for approval, or lower a
/// budget's limit. Nothing here can widen what the run may do.
///
/// ```
/// use rein_engine::hook::{Narrowing, HookVerdict};
/// use rein_run::BudgetName;
/// let fewer_calls = HookVerdict::Narrow(Narrowing::budget(BudgetName::TOOL_CALLS, 3, "slow down"));
/// let ask = HookVerdict::Narrow(Narrowing::require_approval("production"));
/// # let _ = (fewer_calls, ask);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowing {
    outcome: HookOutcome,
    reason: String,
}

impl Narrowing {
    /// Hold this tool call for approval, whatever the approval policy says of it.
    #[must_use]
    pub fn require_approval(reason: impl Into<String>) -> Self {
        Self {
            outcome: HookOutcome::RequireApproval,
            reason: reason.into(),
        }
    }

    /// Lower the run's limit of budget `name` to `limit` (a limit at or above the run's
    /// narrows nothing).
    #[must_use]
    pub fn budget(name: BudgetName, limit: u64, reason: impl Into<String>) -> Self {
        Self {
            outcome: HookOutcome::Budget { name, limit },
            reason: reason.into(),
        }
    }

    /// What it asks for, as the ledger records it.
    #[must_use]
    pub const fn outcome(&self) -> &HookOutcome {
        &self.outcome
    }

    /// Why.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// A hook's own failure to answer. Before-hooks fail closed: the engine takes it as a deny
/// and records why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    message: String,
}

impl HookError {
    /// An error saying `message`.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// A hook: asked at the points its [`HookSpec`] names, it answers a [`HookVerdict`].
///
/// Write a plain `async fn`:
///
/// ```
/// use rein_engine::hook::{Hook, HookError, HookPayload, HookVerdict};
///
/// struct BusinessHours;
///
/// impl Hook for BusinessHours {
///     async fn check(&self, call: &HookPayload) -> Result<HookVerdict, HookError> {
///         Ok(match call.tool.as_ref().map(|t| t.as_str()) {
///             Some("deploy") => HookVerdict::deny("no deploys outside business hours"),
///             _ => HookVerdict::Allow,
///         })
///     }
/// }
/// ```
///
/// # Contract
///
/// - `check` MAY take its time, within the spec's timeout; past it, it is dropped and its
///   verdict is a deny (at the points that can refuse).
/// - An `Err`, or a panic, MUST NOT be used to allow: both deny, fail closed.
/// - The payload is a copy: nothing a hook does to it reaches the run.
pub trait Hook: Send + Sync + 'static {
    /// The verdict on `payload`.
    fn check(
        &self,
        payload: &HookPayload,
    ) -> impl Future<Output = Result<HookVerdict, HookError>> + Send;
}

/// The object-safe twin of [`Hook`], implemented for every hook.
pub trait DynHook: Send + Sync + 'static {
    /// [`Hook::check`], boxed.
    fn check_boxed<'a>(
        &'a self,
        payload: &'a HookPayload,
    ) -> BoxFuture<'a, Result<HookVerdict, HookError>>;
}

impl<H: Hook> DynHook for H {
    fn check_boxed<'a>(
        &'a self,
        payload: &'a HookPayload,
    ) -> BoxFuture<'a, Result<HookVerdict, HookError>> {
        Box::pin(self.check(payload))
    }
}

/// How the engine asks a hook: with the one payload built for the point, shared by every
/// hook asked there.
pub(crate) trait Ask: Send + Sync + 'static {
    /// The hook's verdict on `payload`.
    fn ask<'a>(
        &'a self,
        payload: &'a Arc<HookPayload>,
    ) -> BoxFuture<'a, Result<HookVerdict, HookError>>;

    /// The hook's verdict on `payload` at once, for a hook that needs no future (a
    /// [`HookSpec::from_check`] closure): no box, no timer. `None`: ask through [`ask`](Ask::ask).
    fn ask_now(&self, _payload: &HookPayload) -> Option<HookVerdict> {
        None
    }

    /// Whether [`ask_now`](Ask::ask_now) always answers.
    fn answers_now(&self) -> bool {
        false
    }
}

/// A synchronous closure as a hook ([`HookSpec::from_check`]).
struct CheckHook<F>(F);

impl<F> Ask for CheckHook<F>
where
    F: Fn(&HookPayload) -> HookVerdict + Send + Sync + 'static,
{
    fn ask<'a>(
        &'a self,
        payload: &'a Arc<HookPayload>,
    ) -> BoxFuture<'a, Result<HookVerdict, HookError>> {
        // Called inside the future, so that a closure that panics is caught with it.
        Box::pin(async move { Ok((self.0)(payload)) })
    }

    fn ask_now(&self, payload: &HookPayload) -> Option<HookVerdict> {
        Some((self.0)(payload))
    }

    fn answers_now(&self) -> bool {
        true
    }
}

/// A [`Hook`], asked through its `check`.
struct Checked<H>(H);

impl<H: Hook> Ask for Checked<H> {
    fn ask<'a>(
        &'a self,
        payload: &'a Arc<HookPayload>,
    ) -> BoxFuture<'a, Result<HookVerdict, HookError>> {
        Box::pin(self.0.check(payload))
    }
}

/// A closure as a hook: given the point's payload (shared, not copied), it answers a
/// [`HookVerdict`].
struct FnHook<F>(F);

impl<F, Fut> Ask for FnHook<F>
where
    F: Fn(Arc<HookPayload>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HookVerdict> + Send,
{
    fn ask<'a>(
        &'a self,
        payload: &'a Arc<HookPayload>,
    ) -> BoxFuture<'a, Result<HookVerdict, HookError>> {
        // Called inside the future, so that a closure that panics is caught with it.
        Box::pin(async move { Ok((self.0)(Arc::clone(payload)).await) })
    }
}

/// A hook with where and how it is asked: its name (and, for a command hook, the hashes
/// that identify it), its points, the tools it is asked about, its timeout.
#[derive(Clone)]
#[must_use]
pub struct HookSpec {
    id: HookRef,
    points: Vec<HookPoint>,
    tools: Option<ToolGlob>,
    timeout: Duration,
    hook: Arc<dyn Ask>,
}

impl std::fmt::Debug for HookSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookSpec")
            .field("id", &self.id)
            .field("points", &self.points)
            .field("tools", &self.tools)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HookSpec {
    /// `hook`, named `name`, asked at `points`, about every tool, within
    /// [`DEFAULT_HOOK_TIMEOUT`].
    pub fn new(
        name: impl Into<String>,
        points: impl IntoIterator<Item = HookPoint>,
        hook: impl Hook,
    ) -> Self {
        Self::asking(name, points, Checked(hook))
    }

    /// `ask`, named `name`, asked at `points` (see [`HookSpec::new`]).
    fn asking(
        name: impl Into<String>,
        points: impl IntoIterator<Item = HookPoint>,
        ask: impl Ask,
    ) -> Self {
        let mut points: Vec<HookPoint> = points.into_iter().collect();
        points.sort_unstable();
        points.dedup();
        Self {
            id: HookRef::named(name),
            points,
            tools: None,
            timeout: DEFAULT_HOOK_TIMEOUT,
            hook: Arc::new(ask),
        }
    }

    /// A closure as a hook (see [`HookSpec::new`]): it gets the point's payload, shared by
    /// every hook asked there (built once per point, never copied per hook).
    pub fn from_fn<F, Fut>(
        name: impl Into<String>,
        points: impl IntoIterator<Item = HookPoint>,
        check: F,
    ) -> Self
    where
        F: Fn(Arc<HookPayload>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HookVerdict> + Send + 'static,
    {
        Self::asking(name, points, FnHook(check))
    }

    /// A synchronous check as a hook: `check` looks at the point's payload and answers at
    /// once. The engine calls it on the run's task without a future or a timer (so its
    /// timeout does not apply: it must not block); a panic is caught and, before an action,
    /// denies. For a hook that waits on something (a service, a file), use
    /// [`from_fn`](Self::from_fn) or a [`Hook`].
    ///
    /// ```
    /// use rein_engine::hook::{HookPoint, HookSpec, HookVerdict};
    ///
    /// let no_prod = HookSpec::from_check("no-prod", [HookPoint::BeforeTool], |call| {
    ///     match &call.input {
    ///         Some(input) if input.to_string().contains("prod") => {
    ///             HookVerdict::deny("nothing touches production from here")
    ///         }
    ///         _ => HookVerdict::Allow,
    ///     }
    /// });
    /// # let _ = no_prod;
    /// ```
    pub fn from_check<F>(
        name: impl Into<String>,
        points: impl IntoIterator<Item = HookPoint>,
        check: F,
    ) -> Self
    where
        F: Fn(&HookPayload) -> HookVerdict + Send + Sync + 'static,
    {
        Self::asking(name, points, CheckHook(check))
    }

    /// Asked at the tool points only about tools whose names match `tools` (the other
    /// points are not about a tool, and ask it anyway).
    pub fn tools(mut self, tools: ToolGlob) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Gives it `timeout` to answer (default [`DEFAULT_HOOK_TIMEOUT`]).
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Identifies it, beyond its name, by the SHA-256 of the command line it runs and of
    /// its script file (what a command hook's snapshot and verdicts record).
    pub const fn command(
        mut self,
        command: rein_run::Digest,
        script: Option<rein_run::Digest>,
    ) -> Self {
        self.id.command = Some(command);
        self.id.script = script;
        self
    }

    /// Who it is, as a run's policy snapshot records it.
    #[must_use]
    pub const fn id(&self) -> &HookRef {
        &self.id
    }

    /// Where it is asked.
    #[must_use]
    pub fn points(&self) -> &[HookPoint] {
        &self.points
    }

    /// How long it may take.
    #[must_use]
    pub const fn time_limit(&self) -> Duration {
        self.timeout
    }

    /// Whether it is asked about `tool` (at the tool points it is asked at).
    pub(crate) fn about(&self, tool: &ToolName) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|glob| glob.matches(tool.as_str()))
    }

    /// The hook itself.
    pub(crate) fn hook(&self) -> &dyn Ask {
        &*self.hook
    }
}

/// The identities of `hooks`, in order, for the policy snapshot: each named, once, and
/// asked somewhere.
pub(crate) fn check_hooks(hooks: &[HookSpec]) -> Result<Vec<HookRef>, crate::BuildError> {
    let invalid = |reason: String| crate::BuildError::InvalidOption {
        option: "hook",
        reason,
    };
    let mut ids: Vec<HookRef> = Vec::with_capacity(hooks.len());
    for spec in hooks {
        let name = &spec.id.name;
        if name.trim().is_empty() {
            return Err(invalid(
                "a hook has an empty name; name every hook".to_owned(),
            ));
        }
        if ids.iter().any(|id| id.name == *name) {
            return Err(invalid(format!(
                "two hooks are named {name:?}; a run records its hooks by name, so give each \
                 its own"
            )));
        }
        if spec.points.is_empty() {
            return Err(invalid(format!(
                "hook {name:?} is asked at no point; name at least one"
            )));
        }
        ids.push(spec.id.clone());
    }
    Ok(ids)
}

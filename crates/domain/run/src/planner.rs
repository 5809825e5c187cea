//! The `Planner` port: what proposes decisions, and the view of the run it decides on.

use std::future::Future;

use rein_tool::{SampleError, SampleReply, SampleRequest};
use serde_json::{Map, Value};

use crate::{
    BoxFuture, BudgetExhausted, BudgetSnapshot, Decision, EarlierRun, Evidence, PlanMeter, Run,
    Skill, State, StateRules, ToolSpec, Turn,
};

/// What a planner sees when asked for the next decision. Borrowed from the engine: building
/// one costs nothing.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    run: &'a Run,
    tools: &'a [ToolSpec],
    all_tools: Option<&'a [ToolSpec]>,
    budget: BudgetSnapshot<'a>,
    interrupted: bool,
    next_states: Option<&'a [State]>,
    meter: Option<&'a PlanMeter>,
    skills: &'a [Skill],
    delegation: Option<&'a Delegation>,
    dialogue: &'a [Turn],
    conversation: &'a [EarlierRun],
    rules: Option<&'a StateRules>,
    result_schema: Option<&'a Value>,
}

/// What a planner may delegate to, when the run may delegate at all: the run is less deep
/// in its tree than the engine allows, so a [`Decision::Delegate`] will not be refused for
/// depth. It lists the names the engine's planners are registered under, for
/// `Decision::Delegate { planner: Some(name), .. }`; naming none drives the child with the
/// run's own planner.
///
/// An engine builds one when it is built and lends it to every request of a run that may
/// delegate ([`PlanRequest::with_delegation`]); a run at the engine's depth limit gets none.
///
/// ```
/// use std::collections::BTreeMap;
/// use rein_run::{BudgetSnapshot, BudgetUsage, Delegation, PlanRequest, Run, Timestamp};
/// use serde_json::json;
///
/// let delegation = Delegation::new(["reader", "coder", "reader"]);
/// assert_eq!(delegation.planners(), ["coder", "reader"]); // sorted, once each
/// assert!(delegation.knows("coder") && !delegation.knows("writer"));
///
/// let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
/// let run = Run::new("run-1".parse()?, "fix the bug", Default::default(), json!({}), t0);
/// let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
/// let request = PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage));
/// assert!(request.delegation().is_none()); // not offered unless the engine says so
/// let request = request.with_delegation(&delegation);
/// assert_eq!(request.delegation(), Some(&delegation));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delegation {
    planners: Vec<String>,
}

impl Delegation {
    /// A delegation offering the planners registered under `planners` (sorted, each once).
    #[must_use]
    pub fn new<S: Into<String>>(planners: impl IntoIterator<Item = S>) -> Self {
        let mut planners: Vec<String> = planners.into_iter().map(Into::into).collect();
        planners.sort();
        planners.dedup();
        Self { planners }
    }

    /// The names a delegation may give its child's planner, sorted; empty when the engine
    /// has no named planners (a child is then driven by its parent's planner).
    #[must_use]
    pub fn planners(&self) -> &[String] {
        &self.planners
    }

    /// Whether `name` is one of [`planners`](Self::planners).
    #[must_use]
    pub fn knows(&self, name: &str) -> bool {
        self.planners
            .binary_search_by(|p| p.as_str().cmp(name))
            .is_ok()
    }
}

impl<'a> PlanRequest<'a> {
    /// A request over `run`, offering `tools` (the specs of the tools allowed in the run's
    /// current state) and a view of the budgets.
    #[must_use]
    pub const fn new(run: &'a Run, tools: &'a [ToolSpec], budget: BudgetSnapshot<'a>) -> Self {
        Self {
            run,
            tools,
            all_tools: None,
            budget,
            interrupted: false,
            skills: &[],
            next_states: None,
            meter: None,
            delegation: None,
            dialogue: &[],
            conversation: &[],
            rules: None,
            result_schema: None,
        }
    }

    /// The same request, with the model replies the run's ledger records so far, in order
    /// ([`Turn`]): what a planner shows its model as its own earlier turns.
    #[must_use]
    pub const fn with_dialogue(mut self, dialogue: &'a [Turn]) -> Self {
        self.dialogue = dialogue;
        self
    }

    /// The model replies the run's ledger records so far, oldest first; empty when the
    /// engine did not say.
    #[must_use]
    pub const fn dialogue(&self) -> &'a [Turn] {
        self.dialogue
    }

    /// The same request, with the earlier runs of the conversation this run follows up on,
    /// oldest first ([`EarlierRun`]).
    #[must_use]
    pub const fn with_conversation(mut self, conversation: &'a [EarlierRun]) -> Self {
        self.conversation = conversation;
        self
    }

    /// The earlier runs of the conversation this run continues, oldest first: their goals,
    /// evidence, model replies and outcomes. Empty for a run that follows up on none (or
    /// when the engine did not say).
    #[must_use]
    pub const fn conversation(&self) -> &'a [EarlierRun] {
        self.conversation
    }

    /// The same request, saying what the run's policy allows in every state
    /// ([`StateRules`]).
    #[must_use]
    pub const fn with_rules(mut self, rules: &'a StateRules) -> Self {
        self.rules = Some(rules);
        self
    }

    /// What the run's policy allows in every state, when the engine said; `None` when it
    /// did not (then only [`tools`](Self::tools) and [`next_states`](Self::next_states)
    /// are known).
    #[must_use]
    pub const fn rules(&self) -> Option<&'a StateRules> {
        self.rules
    }

    /// The same request, saying the JSON Schema the run's `finish` result must match (the
    /// run's policy): a planner may tell its model, and a result that does not match is
    /// refused.
    #[must_use]
    pub const fn with_result_schema(mut self, schema: &'a Value) -> Self {
        self.result_schema = Some(schema);
        self
    }

    /// The JSON Schema the run's `finish` result must match, when the run has one and the
    /// engine said.
    #[must_use]
    pub const fn result_schema(&self) -> Option<&'a Value> {
        self.result_schema
    }

    /// The same request, marked as the last step of a run interrupted gracefully (see
    /// [`PlanRequest::interrupted`]).
    #[must_use]
    pub const fn with_interrupted(mut self, interrupted: bool) -> Self {
        self.interrupted = interrupted;
        self
    }

    /// Whether the run was interrupted gracefully: this is its last step, no tool will be
    /// called any more, and the planner should finish or fail now (a proposed tool call
    /// stops the run as `interrupted` instead). The evidence holds the engine's note too.
    #[must_use]
    pub const fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// The same request, saying which states the transition table allows from the current
    /// one (terminal ones included), so a planner can offer only those.
    #[must_use]
    pub const fn with_next_states(mut self, states: &'a [State]) -> Self {
        self.next_states = Some(states);
        self
    }

    /// The same request, with the meter through which the planner declares and reports
    /// its model calls.
    #[must_use]
    pub const fn with_meter(mut self, meter: &'a PlanMeter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The engine's meter for this step: a planner that calls a model declares each call's
    /// worst case here before making it and reports what it used after. `None` outside an
    /// engine that charges planners.
    #[must_use]
    pub const fn meter(&self) -> Option<&'a PlanMeter> {
        self.meter
    }

    /// The states the transition table allows from here, when the engine said
    /// ([`with_next_states`](Self::with_next_states)); `None` when it did not.
    #[must_use]
    pub const fn next_states(&self) -> Option<&'a [State]> {
        self.next_states
    }

    /// The same request, offering `skills` (knowledge the planner may load; never tools or
    /// permissions).
    #[must_use]
    pub const fn with_skills(mut self, skills: &'a [Skill]) -> Self {
        self.skills = skills;
        self
    }

    /// The same request, saying the run may delegate a sub-task to a child run, and to which
    /// planners ([`Delegation`]).
    #[must_use]
    pub const fn with_delegation(mut self, delegation: &'a Delegation) -> Self {
        self.delegation = Some(delegation);
        self
    }

    /// What the run may delegate to, when it may ([`with_delegation`](Self::with_delegation));
    /// `None` when it may not (it is as deep as the engine allows) or the engine did not
    /// say: a planner should then not propose [`Decision::Delegate`], which the engine
    /// would refuse.
    #[must_use]
    pub const fn delegation(&self) -> Option<&'a Delegation> {
        self.delegation
    }

    /// The whole run, read-only.
    #[must_use]
    pub const fn run(&self) -> &'a Run {
        self.run
    }

    /// The run's goal.
    #[must_use]
    pub fn goal(&self) -> &'a str {
        self.run.goal()
    }

    /// The current state.
    #[must_use]
    pub const fn state(&self) -> State {
        self.run.state()
    }

    /// Evidence so far, oldest first.
    #[must_use]
    pub fn evidence(&self) -> &'a [Evidence] {
        self.run.evidence()
    }

    /// The run's variables.
    #[must_use]
    pub const fn vars(&self) -> &'a Map<String, Value> {
        self.run.vars()
    }

    /// The number of this step, from 0 (how many decisions were taken before it).
    #[must_use]
    pub const fn step(&self) -> u32 {
        self.run.steps()
    }

    /// Specs of the tools allowed in the current state.
    #[must_use]
    pub const fn tools(&self) -> &'a [ToolSpec] {
        self.tools
    }

    /// The same request, naming every tool the engine has, eligible here or not
    /// ([`all_tools`](Self::all_tools)).
    #[must_use]
    pub const fn with_all_tools(mut self, tools: &'a [ToolSpec]) -> Self {
        self.all_tools = Some(tools);
        self
    }

    /// Specs of every tool the engine has, eligible in the current state or not; the
    /// [`tools`](Self::tools) allowed here when the engine did not say. Not an offer: a
    /// planner offers only [`tools`](Self::tools), and uses these to recognise a call of a
    /// tool that exists but may not run now (an LLM planner maps the model's function name
    /// back to it, so the engine's refusal names the tool).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use rein_run::{BudgetSnapshot, BudgetUsage, PlanRequest, Run, Timestamp, ToolSpec};
    /// use serde_json::json;
    ///
    /// let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
    /// let run = Run::new("run-1".parse()?, "tidy up", Default::default(), json!({}), t0);
    /// let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    /// let every = [ToolSpec::new("fs.read".parse()?, ""), ToolSpec::new("fs.write".parse()?, "")];
    /// let request = PlanRequest::new(&run, &every[..1], BudgetSnapshot::new(&limits, &usage));
    /// assert_eq!(request.all_tools().len(), 1); // not said: the eligible ones
    /// let request = request.with_all_tools(&every);
    /// assert_eq!((request.tools().len(), request.all_tools().len()), (1, 2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn all_tools(&self) -> &'a [ToolSpec] {
        match self.all_tools {
            Some(all) => all,
            None => self.tools,
        }
    }

    /// Budget limits and use.
    #[must_use]
    pub const fn budget(&self) -> BudgetSnapshot<'a> {
        self.budget
    }

    /// The skills the planner may load (names and descriptions to list; bodies to load).
    #[must_use]
    pub const fn skills(&self) -> &'a [Skill] {
        self.skills
    }
}

/// Why a planner could not propose a decision. The engine records it and fails the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlannerError {
    /// A scripted step expected the run in another state.
    #[error("script step {step} expects state {expected}, but the run is in {actual}")]
    StateMismatch {
        /// The step (from 0).
        step: u32,
        /// The state the script expected.
        expected: State,
        /// The run's state.
        actual: State,
    },
    /// A model call could spend more than is left of `tokens` or `cost`, so it was not
    /// made ([`PlanMeter::declare`]).
    #[error("the planner's next model call does not fit the budget: {0}")]
    OverBudget(#[from] BudgetExhausted),
    /// The run has a `cost` budget and the model about to be called has no price, so what
    /// the call costs is unknown and the budget could not bind it. The call was not made.
    #[error(
        "model `{model}` has no price, so the run's `cost` budget cannot bind its calls; give the planner a price for `{model}` (input, output and cache rates per million tokens, in the budget's currency) or drop the `cost` budget"
    )]
    Unpriced {
        /// The model without a price.
        model: String,
    },
    /// The planner failed (a model error, a malformed response, …).
    #[error("planner failed: {message}")]
    Failed {
        /// What went wrong.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl PlannerError {
    /// A planner failure with a message.
    #[must_use]
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            source: None,
        }
    }
}

/// Proposes one [`Decision`] per step. Implement it with a plain `async fn`.
///
/// # Contract
/// - `plan` MUST only propose: the engine checks every decision against the policies and
///   rejects what they do not allow. A planner cannot grant itself anything.
/// - `plan` SHOULD be a function of the request: one planner instance serves many
///   concurrent runs, and a resumed run asks again for the step it was on.
/// - `plan` MAY fail with [`PlannerError`]; the run then fails with that error, recorded.
/// - [`corrects_itself`](Planner::corrects_itself) SHOULD say `true` only for a planner
///   that reads the rejections and tool failures handed back to it as evidence and proposes
///   something else (a model does; a script does not, it would repeat itself).
///
/// ```
/// use rein_run::{Decision, PlanRequest, Planner, PlannerError, State};
/// use serde_json::json;
///
/// /// Explores once, then finishes with the number of pieces of evidence seen.
/// struct CountingPlanner;
///
/// impl Planner for CountingPlanner {
///     async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
///         Ok(match request.state() {
///             State::Intake => Decision::transition(State::Explore, "look around"),
///             State::Explore => Decision::transition(State::Decide, "seen enough"),
///             _ => Decision::finish("counted", json!(request.evidence().len())),
///         })
///     }
/// }
/// # let _ = CountingPlanner;
/// ```
pub trait Planner: Send + Sync + 'static {
    /// Proposes the next decision for the run in `request`.
    fn plan(
        &self,
        request: PlanRequest<'_>,
    ) -> impl Future<Output = Result<Decision, PlannerError>> + Send;

    /// Whether this planner takes refusals and tool errors back and corrects itself. An
    /// engine whose configuration does not say what a rejected decision or a failed tool
    /// call does follows its planner: hand them back (rejections bounded by the `violations`
    /// budget) when this is `true`, fail the run when it is `false` (the default, right for
    /// scripts). The run's policy snapshot records what was chosen.
    ///
    /// ```
    /// use rein_run::{Decision, PlanRequest, Planner, PlannerError};
    ///
    /// /// Asks a model; reads its mistakes back from the evidence.
    /// struct ModelPlanner;
    ///
    /// impl Planner for ModelPlanner {
    ///     async fn plan(&self, _request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
    ///         Ok(Decision::fail("no model in this example"))
    ///     }
    ///     fn corrects_itself(&self) -> bool {
    ///         true
    ///     }
    /// }
    /// assert!(ModelPlanner.corrects_itself());
    /// ```
    fn corrects_itself(&self) -> bool {
        false
    }

    /// Answers a tool's sampling request (an MCP server's `sampling/createMessage`) with
    /// this planner's model, declared and reported through `meter` as the planner's own
    /// calls are, so the engine charges and records it like them. The default refuses: a
    /// planner without a model (a script) has nothing to sample with.
    ///
    /// # Errors
    /// [`SampleError::Budget`] when the call's worst case does not fit what `meter` has
    /// left (the call is not made); [`SampleError::Refused`] when this planner has no
    /// model; [`SampleError::Failed`] when the model call failed.
    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
        meter: &'a PlanMeter,
    ) -> impl Future<Output = Result<SampleReply, SampleError>> + Send + 'a {
        let _ = (request, meter);
        std::future::ready(Err(SampleError::Refused(
            "the run's planner has no model to sample with (a scripted planner); give the run an llm planner".to_owned(),
        )))
    }

    /// Decides at once, on the caller's thread, when this planner can without waiting on
    /// anything: `Some` with what [`plan`](Self::plan) would return for `request`, or
    /// `None`, having done nothing, when the caller must call `plan` instead.
    ///
    /// A planner that decides from the request alone (a script) implements it, so that a
    /// step costs no future, and no allocation behind the object-safe port. `Some` MUST be
    /// exactly what `plan` would have returned. The default returns `None`, which is always
    /// correct.
    fn try_plan_now(&self, request: &PlanRequest<'_>) -> Option<Result<Decision, PlannerError>> {
        let _ = request;
        None
    }
}

/// The object-safe twin of [`Planner`], implemented for every planner.
pub trait DynPlanner: Send + Sync + 'static {
    /// Proposes the next decision, boxed.
    fn plan_boxed<'a>(
        &'a self,
        request: PlanRequest<'a>,
    ) -> BoxFuture<'a, Result<Decision, PlannerError>>;

    /// See [`Planner::try_plan_now`].
    fn try_plan_now_dyn(&self, request: &PlanRequest<'_>)
    -> Option<Result<Decision, PlannerError>>;

    /// See [`Planner::corrects_itself`].
    fn corrects_itself_dyn(&self) -> bool;

    /// See [`Planner::sample`].
    fn sample_boxed<'a>(
        &'a self,
        request: &'a SampleRequest,
        meter: &'a PlanMeter,
    ) -> BoxFuture<'a, Result<SampleReply, SampleError>>;
}

impl<P: Planner> DynPlanner for P {
    fn plan_boxed<'a>(
        &'a self,
        request: PlanRequest<'a>,
    ) -> BoxFuture<'a, Result<Decision, PlannerError>> {
        Box::pin(self.plan(request))
    }

    fn try_plan_now_dyn(
        &self,
        request: &PlanRequest<'_>,
    ) -> Option<Result<Decision, PlannerError>> {
        self.try_plan_now(request)
    }

    fn corrects_itself_dyn(&self) -> bool {
        self.corrects_itself()
    }

    fn sample_boxed<'a>(
        &'a self,
        request: &'a SampleRequest,
        meter: &'a PlanMeter,
    ) -> BoxFuture<'a, Result<SampleReply, SampleError>> {
        Box::pin(self.sample(request, meter))
    }
}

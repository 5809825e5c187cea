//! **rein** runs AI agents that are governed by construction: an explicit state machine
//! decides *when* a tool may run, policies decide *whether* it may (eligibility, transitions,
//! budgets, approvals), a resilience stack decides *how* it runs (bulkhead, timeout, circuit
//! breaker, retries for idempotent tools only), and a hash-chained ledger records *that* it
//! ran. Planners — scripted in tests, an LLM in production, or your own — only propose.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rein::prelude::*;
//!
//! let greet = FnTool::builder("greet")
//!     .description("Greets a person by name")
//!     .annotations(Annotations::read_only())
//!     .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
//!     .handler(|input: Value| async move { Ok(json!({"message": format!("Hello, {}!", input["name"])})) })
//!     .build()?;
//!
//! let engine = Engine::builder()
//!     .tool(greet)
//!     .planner(ScriptedPlanner::new([
//!         ScriptStep::expect(State::Intake,  Decision::transition(State::Explore, "start")),
//!         ScriptStep::expect(State::Explore, Decision::call_tool("greet", json!({"name": "World"}), "greet")),
//!         ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "have it")),
//!         ScriptStep::expect(State::Decide,  Decision::finish("greeted", json!({"status": "done"}))),
//!     ]))
//!     .budget("tool_calls", 10)
//!     .max_steps(20)
//!     .build()?;
//!
//! let run = engine.run("Say hello").await?;        // Run, status Completed
//! engine.ledger(&run.id).await?.verify()?;          // the audit trail, verified
//! # assert_eq!(run.status(), RunStatus::Completed);
//! # Ok(()) }
//! ```
//!
//! # What happens in a run
//! Each step the planner sees a [`PlanRequest`] (goal, state, evidence, the tools allowed in
//! the state, budgets) and proposes one [`Decision`]. The engine checks it — the tool exists,
//! the input satisfies its schema, the tool is eligible in the state (side effects only in
//! `act`), approval if the policy asks for it, budget — runs it, and records every step in
//! the run's [`Ledger`] *before* it changes the run. A rejected decision is never silent: it
//! is recorded and, by default, fails the run ([`policy::OnViolation`] can hand it back
//! instead).
//!
//! # Plugging in your own parts
//! Implement [`Planner`], [`Approver`], [`tool::Tool`], [`store::RunStore`],
//! [`store::LedgerStore`] or [`store::ArtifactStore`] with plain `async fn`s; see each
//! trait's docs for an example.
//! [`tool::Tool`] is the trait a tool implements; [`FnTool`] is its implementation from a
//! closure, built with [`FnTool::builder`], or from an `async fn` over typed input and
//! output with [`FnTool::typed`] (schemas derived with [`schemars`]).
//!
//! # Where things are
//! The crate root holds what the example above and a first program use: the engine and its
//! builder, a run and its states, decisions and planners, tools and their signature types,
//! approvals, the ledger. Everything else lives in a module named after what it is about:
//! [`run`] (evidence, failures, budgets of a run), [`planner`] (the planning protocol, model
//! calls on the record, mock planners), [`subrun`] (delegation and trees of runs),
//! [`policy`] (eligibility, transitions, budgets, approvals, what a violation does),
//! [`ledger`] (entries, verification, replay), [`store`] (stores and artifacts),
//! [`resilience`], [`clock`] (time and ids), [`tool`], [`tools`] (built-in tools),
//! [`layer`], and, with their features, `shell`, `mcp`, `llm`, `postgres` and `otel`.
//! [`prelude`] imports the everyday names at once.
//!
//! # Features
//! The default build is the lean core: the engine with its policies, resilience stack and
//! ledger, the scripted and mock planners, the file tools and skills, and the memory and
//! filesystem stores. It compiles no HTTP client, TLS stack, MCP SDK or database driver.
//! Each feature adds one integration and only the dependencies it needs:
//!
//! | feature | adds |
//! |---|---|
//! | `llm` | `rein::llm`: model providers (OpenAI-compatible, Anthropic) and the LLM planner |
//! | `fake-server` | `rein::llm::fake`: the loopback fake model server, for tests (turns on `llm`) |
//! | `mcp` | `rein::mcp`: MCP servers' tools as governed tools, and serving rein's over MCP |
//! | `tools-shell` | `rein::shell`: the built-in `shell.run` tool and its guard |
//! | `tools-http` | `rein::tools::HttpFetch`: the built-in `http.fetch` tool |
//! | `postgres` | `rein::postgres`: stores in `PostgreSQL`, shared by many engines |
//! | `otel` | `rein::otel`: OpenTelemetry export of rein's spans and metrics |
//! | `full` | all of the above but `fake-server` (what the `rein` CLI is built with) |
//!
//! ```toml
//! rein = { version = "0.1", features = ["llm"] }
//! ```
//!
//! # Durability
//! [`EngineBuilder::filesystem`] keeps runs, ledgers (append-only JSONL) and artifacts under
//! a directory; [`Engine::resume`] continues a run after a restart. A tool call that was in
//! flight when the process died is retried only if the tool is idempotent.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod fn_tool;
mod typed_tool;

// ---- the crate root: what a first program uses ------------------------------------------------

// The engine: build it, run or resume a run, follow or steer it while it runs.
#[doc(inline)]
pub use rein_engine::{
    BuildError, Engine, EngineBuilder, EngineError, RunControl, RunEvent, RunEvents, RunHandle,
    RunSpec,
};

// A run, its states and the decisions a planner proposes.
#[doc(inline)]
pub use rein_run::{Decision, PlanRequest, Planner, PlannerError, Run, RunId, RunStatus, State};

// The scripted planner: the run's decisions written down in advance (tests, demos).
#[doc(inline)]
pub use rein_planner::{ScriptStep, ScriptedPlanner};

// Tools: the closure tool, and the types every tool's signature uses.
pub use fn_tool::{FnTool, FnToolBuilder, ToolBuildError};
#[doc(inline)]
pub use rein_tool::{Annotations, RiskLevel, ToolError, ToolName, ToolOutput, ToolSpec};

// Approvals: the approver port, its request and response, the policy that asks for one.
#[doc(inline)]
pub use rein_policy::{
    ApprovalPolicy, ApprovalRequest, ApprovalResponse, Approver, ApproverError, AutoApprover,
    DenyApprover, Verdict,
};

// The run's audit trail, as `Engine::ledger` returns it.
#[doc(inline)]
pub use rein_ledger::Ledger;

// JSON values: tool inputs and outputs, results, run variables.
#[doc(no_inline)]
pub use serde_json::{Value, json};

/// JSON Schema from Rust types, for typed tools ([`FnTool::typed`]): derive `JsonSchema` on a
/// tool's input and output with `use rein::schemars::{self, JsonSchema};` in scope (the
/// derive names the crate `schemars`), so the schema and rein agree on one version.
#[doc(no_inline)]
pub use schemars;

/// The closure tool's old name: use [`FnTool`].
#[deprecated(
    note = "renamed FnTool: rein::tool::Tool is the trait; this is its closure implementation"
)]
pub type Tool = FnTool;

/// The closure tool builder's old name: use [`FnToolBuilder`].
#[deprecated(note = "renamed FnToolBuilder, the builder of FnTool")]
pub type ToolBuilder = FnToolBuilder;

// ---- modules: everything else, by what it is about ---------------------------------------------

/// The parts of a [`Run`]: its evidence, failure, budgets, pending question or approval,
/// the skills it may load, and what its model calls cost ([`Cost`](rein_run::Cost): money
/// in a named currency, or unknown); and the typed [`RunEvent`]s a subscriber follows it by.
pub mod run {
    #[doc(inline)]
    pub use rein_engine::{
        ApprovalAsked, ApprovalDecided, ModelCallEnded, ModelCallOutcome, ModelCallStarted,
        ModelStreamed, ModelUsage, Moved, RunEnded, StepStarted, ToolFinished, ToolNoticed,
        ToolOutcome, ToolStarted,
    };
    #[doc(inline)]
    pub use rein_run::{
        BudgetName, BudgetSnapshot, BudgetUsage, Cost, Currency, Evidence, EvidenceKind, Failure,
        FailureKind, LedgerHead, ModelDelta, Money, MoneyError, NoteSource, Payload,
        PendingApproval, PendingQuestion, RunError, Skill, SkillError, StopKind, StopRequest,
        Timestamp,
    };
}

/// The planning protocol beyond [`Planner`] and [`PlanRequest`]: the calls of a batch,
/// sequences, the model's own dialogue as the ledger records it, how planners put each model
/// call on the record before sending it and report what it cost, and the mock planner.
pub mod planner {
    #[doc(inline)]
    pub use rein_planner::{Condition, MockPlanner};
    #[doc(inline)]
    pub use rein_run::{
        CompactionReason, CurrencyWithoutAmount, DeltaSink, DynPlanner, ModelCall, ModelReply,
        PlanEvent, PlanMeter, PlanSink, PlanSinkClosed, PlannerAttempt, PlannerCall,
        PromptCompaction, ProposedCall, SequenceError, StateRules, Turn, WorstCase,
    };
}

/// Sub-runs: what a planner may delegate to, how a child run ended and what it spent, the
/// depth of delegation, and the verified tree of runs.
pub mod subrun {
    #[doc(inline)]
    pub use rein_engine::{DEFAULT_MAX_DEPTH, MAX_DEPTH_CEILING, RunTree, TreeError};
    #[doc(inline)]
    pub use rein_run::{ChildOutcome, Delegation, Spend};
}

/// Conversations: a follow-up is a new run that continues a finished one
/// ([`Engine::follow_up`], or [`RunHandle::follow_up`] while it runs); its planner sees the
/// earlier runs, and its ledger names the run it continues, so the conversation verifies as
/// a chain of runs ([`Engine::verify_conversation`]).
pub mod conversation {
    #[doc(inline)]
    pub use rein_engine::{ConversationError, FollowUp, MAX_CONVERSATION_RUNS, QueuedFollowUp};
    #[doc(inline)]
    pub use rein_run::EarlierRun;
}

/// Policies: which tools may run in which state, the transitions allowed, budgets and
/// deadlines, when a call needs approval, what a rejected decision or a failed tool call does
/// to the run, what resume does with a call in doubt, and narrowing a recorded policy.
pub mod policy {
    #[doc(inline)]
    pub use rein_engine::{
        DEFAULT_HAND_BACK_LIMIT, InDoubtPolicy, NarrowingError, OnToolError, OnViolation,
        PolicyNarrowing, RecordedPolicyError,
    };
    #[doc(inline)]
    pub use rein_policy::{
        ApprovalMode, ApprovalReason, Budget, BudgetExhausted, Deadline, DeadlineError,
        DynApprover, Eligibility, EligibilityError, EligibilityRules, Ineligible, PolicySnapshot,
        RefusalRule, TransitionRefused, TransitionTableError, Transitions,
    };
}

/// Hooks: operator code asked at fixed points of a run (run start and end, before and after
/// each model call and tool call, child start and end, pause) whose verdict can only narrow —
/// allow, deny with a reason, or require approval / lower a budget — registered with
/// [`EngineBuilder::hook`]. Before-hooks fail closed; every verdict other than allow is
/// ledgered with the hook's identity; a run records its hooks and a resume without one of
/// them refuses.
///
/// ```
/// use rein::hook::{HookPoint, HookSpec, HookVerdict};
/// let audit = HookSpec::from_fn("audit", [HookPoint::BeforeTool], |call| async move {
///     if call.input.as_ref().is_some_and(|i| i.to_string().contains("prod")) {
///         HookVerdict::deny("nothing touches prod from here")
///     } else {
///         HookVerdict::Allow
///     }
/// });
/// # let _ = rein::Engine::builder().hook(audit);
/// ```
pub mod hook {
    #[doc(inline)]
    pub use rein_engine::hook::{
        DEFAULT_HOOK_TIMEOUT, DynHook, GlobError, Hook, HookError, HookOutcome, HookPayload,
        HookPoint, HookRef, HookRuling, HookSpec, HookVerdict, Narrowing, ToolGlob,
    };
}

/// The ledger beyond [`Ledger`]: its entries, how it is verified and read back (also torn
/// or from a file), the links between the ledgers of a tree of runs, and replay.
pub mod ledger {
    #[doc(inline)]
    pub use rein_engine::{MAX_JSON_DEPTH, ProjectionError, ReplayReport};
    #[doc(inline)]
    pub use rein_ledger::{
        CallOutcome, Chain, ChainVerifier, ChildEnd, ChildLink, ChildLinkError, Entry, EntryKind,
        InterruptKind, LedgerLines, LineError, LoadedLedger, Problem, RunOutline, RunPath, Stay,
        ToolUse, TornTail, Verified, VerifyError, Via, Violation, model_call_starts,
    };
}

/// Stores: the ports for runs, ledgers and artifacts, their in-memory and filesystem
/// implementations ([`EngineBuilder::filesystem`] uses the latter), and artifacts.
pub mod store {
    #[doc(inline)]
    pub use rein_artifact::{
        ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, Checksum, DynArtifactStore,
        StoreOptions,
    };
    #[doc(inline)]
    pub use rein_ledger::{DynLedgerStore, LedgerStore, LedgerStoreError};
    #[doc(inline)]
    pub use rein_run::{
        DynRunStore, DynStopRequestStore, RunStore, RunStoreError, StopRequestStore,
    };
    #[doc(inline)]
    pub use rein_storage::{
        FileStamp, FsArtifactStore, FsConfig, FsLayout, FsLedgerStore, FsRunIndex, FsRunStore,
        FsStopRequests, FsStores, FsyncPolicy, IndexedRun, MemoryArtifactStore, MemoryLedgerStore,
        MemoryRegistry, MemoryRunStore, MemoryStopRequests, Refreshed, RegistryBuilder,
        RunIndexError, Stamp, StorageError,
    };
}

/// The `PostgreSQL` stores (feature `postgres`): runs, ledgers and artifacts in one database
/// shared by many engines, with run leases and fencing tokens (docs/POSTGRES.md).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use rein_postgres as postgres;

/// How a tool call runs: bulkhead, timeout, circuit breaker, retries (idempotent tools
/// only), per tool. Your own layers around every call are in [`layer`].
pub mod resilience {
    #[doc(inline)]
    pub use rein_resilience::{
        BreakerConfig, Bulkhead, Jitter, ResilienceConfig, RetryConfig, ToolOverrides, ToolPolicy,
    };
}

/// Time and identity, which the engine takes as inputs: its clock and its run-id generator,
/// fixed in tests ([`ManualClock`](clock::ManualClock), [`SequentialIds`](clock::SequentialIds)).
pub mod clock {
    #[doc(inline)]
    pub use rein_engine::{Clock, IdGenerator, ManualClock, SequentialIds, SystemClock, UuidV7Ids};
}

/// The tool port: implement [`tool::Tool`] to write a tool as a type ([`FnTool`] is its
/// closure implementation, from [`FnTool::builder`]). The types a tool's
/// signature uses — [`ToolSpec`], [`ToolOutput`], [`ToolError`], [`ToolName`],
/// [`Annotations`], [`RiskLevel`] — are at the crate root, once; the files a tool may return
/// beside its output ([`Attachment`](tool::Attachment)) are here.
///
/// ```
/// use rein::tool::Tool;
/// use rein::{Annotations, ToolError, ToolOutput, ToolSpec, Value};
///
/// /// Reads a value from an in-memory table.
/// struct Lookup { spec: ToolSpec, table: std::collections::HashMap<String, String> }
///
/// impl Tool for Lookup {
///     fn spec(&self) -> &ToolSpec { &self.spec }
///     async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
///         let key = input["key"].as_str().ok_or_else(|| ToolError::invalid_input("`key` must be a string"))?;
///         let value = self.table.get(key).ok_or_else(|| ToolError::failed(format!("no entry {key:?}")))?;
///         Ok(Value::from(value.clone()).into())
///     }
/// }
///
/// let lookup = Lookup {
///     spec: ToolSpec::new("lookup".parse()?, "Looks a key up").with_annotations(Annotations::read_only()),
///     table: [("a".to_owned(), "1".to_owned())].into(),
/// };
/// let engine = rein::Engine::builder().tool(lookup).planner(rein::ScriptedPlanner::new([])).build()?;
/// assert_eq!(engine.tools().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod tool {
    /// The engine's [`CallScopes`]: the run's side of the tool call the current task runs.
    #[doc(inline)]
    pub use rein_engine::CurrentCall;
    #[doc(inline)]
    pub use rein_tool::{
        AnnotationsError, Attachment, AttachmentError, CallScope, CallScopes, Digest, DynTool,
        ElicitAnswer, Elicitation, Elicitor, Registry, RegistryError, SampleError, SampleReply,
        SampleRequest, SampleRole, Sampler, SharedTool, Tool, ToolNameError, ToolNotice,
    };
}

/// Built-in tools (files and search, `skill.load`; `http.fetch` with the feature `tools-http`;
/// `shell.run` is in `shell`, feature `tools-shell`), each confined to a
/// [`Workspace`](tools::Workspace), and skill loading.
///
/// ```
/// use rein::tools::{FsOp, FsTool, Workspace};
///
/// let dir = tempfile::tempdir()?;
/// let grep = FsTool::new(FsOp::Grep, Workspace::open(dir.path())?);
/// let engine = rein::Engine::builder()
///     .tool(grep)
///     .planner(rein::ScriptedPlanner::new([]))
///     .build()?;
/// # let _ = engine;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod tools {
    #[doc(inline)]
    pub use rein_tools::{
        FsError, FsOp, FsTool, MAX_EDIT_BYTES, MAX_FRONT_MATTER_BRACKETS, MAX_LIST_ENTRIES,
        MAX_NAME_BYTES, MAX_PATH_BYTES, MAX_READ_BYTES, MAX_RESULTS, MAX_SKILL_BYTES, PathError,
        SkillLoad, SkillLoadError, Workspace, WorkspaceError, check_relative_path, load_skills,
        parse_skill,
    };
    /// The built-in `http.fetch` tool (feature `tools-http`).
    #[cfg(feature = "tools-http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tools-http")))]
    #[doc(inline)]
    pub use rein_tools::{HttpConfig, HttpError, HttpFetch};
}

/// The built-in `shell.run` tool, and a guard for tools that run commands (feature
/// `tools-shell`).
#[cfg(feature = "tools-shell")]
#[cfg_attr(docsrs, doc(cfg(feature = "tools-shell")))]
#[doc(inline)]
pub use rein_tools::shell;

/// MCP (feature `mcp`): the tools of any MCP server, imported as governed tools
/// (`SERVER.TOOL`, hints mapped onto [`Annotations`], missing hints taking MCP's cautious
/// defaults), and rein's tools served over MCP.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use rein::mcp::{McpServer, ServerConfig};
/// let fs = McpServer::connect(ServerConfig::stdio("fs".parse()?, ["mcp-server-filesystem", "/srv/data"])).await?;
/// let mut builder = rein::Engine::builder();
/// for tool in fs.tools() {
///     builder = builder.tool(tool);
/// }
/// # Ok(()) }
/// ```
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp {
    #[doc(inline)]
    pub use rein_mcp::{
        AnnotationOverride, Governor, Hints, ImportedTool, MAX_PAGES, McpError, McpServer, McpTool,
        OAuth, OAuthError, Progress, Refusal, ServeError, ServedPrompt, ServedResource,
        ServerConfig, ServerName, ServerNameError, Session, TOOLS_PAGE, Transport,
        WideningOverride, login, serve_http, serve_stdio,
    };
    /// The boxed future [`Governor`] and [`Session`] return.
    pub use rein_tool::BoxFuture;
}

/// Model providers and the LLM planner (feature `llm`): OpenAI-compatible
/// Chat Completions and Anthropic Messages, streamed or not, with retries, a breaker and
/// typed, bounded errors. The loopback fake server is behind the `fake-server` feature.
///
/// [`HttpProvider::from_env`](llm::HttpProvider::from_env) reads the conventional variables
/// (`OPENAI_API_KEY` or `ANTHROPIC_API_KEY`, their `_BASE_URL`s, and `REIN_LLM_MODEL`);
/// `from_env_with` takes the lookup as a function. An engine driven by an [`LlmPlanner`](llm::LlmPlanner)
/// hands rejected decisions and failed tool calls back to the model by default (rejections
/// at most the `violations` budget's limit, [`DEFAULT_HAND_BACK_LIMIT`](policy::DEFAULT_HAND_BACK_LIMIT) without one), and
/// every run records that in its policy; `on_violation` and `on_tool_error` say otherwise.
///
/// ```
/// use rein::llm::{HttpProvider, LlmConfig, LlmPlanner};
/// use rein::policy::{DEFAULT_HAND_BACK_LIMIT, OnToolError, OnViolation};
///
/// # let env = |name: &str| match name {
/// #     "OPENAI_API_KEY" => Some("sk-example".to_owned()),
/// #     "REIN_LLM_MODEL" => Some("gpt-4o-mini".to_owned()),
/// #     _ => None,
/// # };
/// # let from_env = || HttpProvider::from_env_with(env);
/// // OPENAI_API_KEY=… REIN_LLM_MODEL=gpt-4o-mini (from_env reads the process's variables)
/// let planner = LlmPlanner::new(from_env()?, LlmConfig::default())
///     .with_system_prompt("You triage support tickets. Be brief.");
/// let engine = rein::Engine::builder()
///     .planner(planner)
///     .budget("tokens", 50_000)
///     .build()?;
/// assert_eq!(engine.policy().on_violation, OnViolation::HandBack { limit: DEFAULT_HAND_BACK_LIMIT });
/// assert_eq!(engine.policy().on_tool_error, OnToolError::HandBack);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "llm")]
#[cfg_attr(docsrs, doc(cfg(feature = "llm")))]
pub mod llm {
    #[doc(inline)]
    pub use rein_llm::{
        Api, CassetteRecorder, ChatRequest, ChatResponse, Compaction, Completion, ControlFunction,
        DEFAULT_SYSTEM_PROMPT, DynProvider, EnvError, FallbackProvider, FunctionCall, FunctionDef,
        HeaderSource, HttpProvider, LlmConfig, LlmError, LlmPlanner, Message, ModelPrices,
        NameError, NameMap, Prices, PricesShape, ProgressFn, PromptConfig, Provider,
        ProviderConfig, Rate, Recorded, Replayer, StreamProgress, UnpricedModel, Usage,
        build_request, estimate_tokens, function_name, rebuild_request, request_body,
    };

    /// The loopback fake model server (feature `fake-server`).
    #[cfg(feature = "fake-server")]
    #[cfg_attr(docsrs, doc(cfg(feature = "fake-server")))]
    pub use rein_llm::fake;
}

/// Your own [tower](https://docs.rs/tower) layers around every tool call, added with
/// [`EngineBuilder::layer`]. They run inside the policy layers, so they can observe,
/// annotate or refuse a call, but never let one through that a policy refused.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use rein::layer::{MapRequestLayer, ToolCall};
/// use rein::prelude::*;
///
/// let seen = Arc::new(AtomicUsize::new(0));
/// let counter = Arc::clone(&seen);
/// let engine = Engine::builder()
///     .tool(FnTool::builder("noop").annotations(Annotations::read_only())
///         .handler(|_: Value| async { Ok(json!(null)) }).build()?)
///     .layer(MapRequestLayer::new(move |call: ToolCall| {
///         counter.fetch_add(1, Ordering::Relaxed);
///         call
///     }))
///     .planner(ScriptedPlanner::new([
///         ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
///         ScriptStep::expect(State::Explore, Decision::call_tool("noop", json!({}), "once")),
///         ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "ok")),
///         ScriptStep::expect(State::Decide, Decision::finish("done", json!(null))),
///     ]))
///     .build()?;
/// engine.run("count the calls").await?;
/// assert_eq!(seen.load(Ordering::Relaxed), 1);
/// # Ok(()) }
/// ```
pub mod layer {
    #[doc(inline)]
    pub use rein_resilience::{ToolCall, ToolService};
    #[doc(no_inline)]
    pub use tower::layer::layer_fn;
    #[doc(no_inline)]
    pub use tower::util::{MapRequestLayer, MapResponseLayer, MapResultLayer};
    #[doc(no_inline)]
    pub use tower::{Layer, Service};
}

// ---- telemetry -----------------------------------------------------------------------------------
/// OpenTelemetry export (feature `otel`): rein's spans, named by the OpenTelemetry `GenAI`
/// semantic conventions ([`names`](otel::names) holds every name and the version
/// followed), and metrics derived from them, sent over OTLP/HTTP with protobuf.
///
/// A run is an `invoke_agent rein` span (a child of the caller's span, if any), with its
/// steps, `chat {model}` model calls and `execute_tool {tool}` tool calls below it; every
/// ledger entry is an event carrying `rein.ledger.seq` and `rein.ledger.hash`, and governed
/// decisions (approvals, budget charges and exhaustions, refusals) are events of their own
/// names. Prompts, replies and tool inputs and outputs go out only with
/// [`Content::Captured`](otel::Content); secrets never do.
///
/// ```no_run
/// use rein::otel::{OtelConfig, Telemetry};
/// # async fn demo(engine: rein::Engine) -> Result<(), Box<dyn std::error::Error>> {
/// let telemetry = Telemetry::start(&OtelConfig::new("http://127.0.0.1:4318")?)?;
/// telemetry.install()?;
/// // Hand `telemetry.trace_context()` to `Engine::builder().trace_context(…)`, the model
/// // providers and the MCP servers (`with_trace_context`) to link resumed runs' traces and
/// // send `traceparent` with their requests.
/// let run = engine.run("triage the failing build").await?;
/// let report = telemetry.shutdown(); // sends what is queued, within a bounded time
/// # let _ = (run, report);
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel {
    #[doc(inline)]
    pub use rein_otel::{
        Content, DEFAULT_SERVICE_NAME, ENDPOINT_VAR, Endpoint, EndpointProblem, OtelConfig,
        OtelError, SERVICE_NAME_VAR, ShutdownReport, SpanContexts, SpanMetrics, Telemetry,
    };
    /// The OpenTelemetry crates rein is built on (a tracer provider of your own goes to
    /// [`Telemetry::with_tracer_provider`]), and the `tracing-subscriber` the layer is for.
    pub use rein_otel::{opentelemetry, opentelemetry_sdk, tracing_subscriber};
    /// The names of rein's spans, attributes, events and metrics.
    pub use rein_run::telemetry as names;
    /// The trace context port ([`Telemetry::trace_context`] implements it) and the W3C
    /// `traceparent` it carries.
    #[doc(inline)]
    pub use rein_run::telemetry::{TraceContext, TraceParent, TraceParentError};
}

/// Everything a typical program needs: `use rein::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Annotations, ApprovalPolicy, AutoApprover, Decision, DenyApprover, Engine, EngineError,
        FnTool, Planner, RiskLevel, Run, RunId, RunStatus, ScriptStep, ScriptedPlanner, State,
        ToolError,
    };
    pub use serde_json::{Value, json};

    /// The closure tool's old name, kept here for one release so that code written
    /// `use rein::prelude::*; Tool::builder(…)` still compiles (with a deprecation warning):
    /// use [`FnTool`].
    #[allow(deprecated)]
    #[doc(no_inline)]
    pub use crate::{Tool, ToolBuilder};
}

/// The guides in `docs/` whose Rust blocks `cargo test -p rein --doc` compiles and runs, so
/// the code a reader copies is code that works. Never part of a build.
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../../../docs/FIRST_AGENT.md")]
    struct FirstAgent;

    #[doc = include_str!("../../../docs/TESTING.md")]
    struct Testing;

    #[doc = include_str!("../../../docs/HOOKS.md")]
    struct Hooks;
}

//! The engine's errors: `EngineError` for what callers get back and `BuildError` for a
//! configuration refused (refused decisions are `Rejection`s, in `rejection.rs`).

pub use crate::projection_error::{LifecycleFault, ProjectionError};
use rein_artifact::ArtifactError;
use rein_ledger::{ChildLinkError, LedgerStoreError};
use rein_policy::{ApprovalResponse, EligibilityError, TransitionTableError};
use rein_run::{
    BudgetName, LedgerHead, PendingApproval, RunError, RunId, RunStatus, RunStoreError, Timestamp,
    ToolName,
};

/// Why the engine could not be built. Every policy is validated here, once, so a running
/// engine never meets a configuration it cannot enforce.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No planner was configured.
    #[error("no planner configured; call .planner(…) on the builder")]
    NoPlanner,
    /// Two tools have the same name.
    #[error("a tool named `{0}` is registered twice; tool names must be unique")]
    DuplicateTool(ToolName),
    /// A tool's input schema is not a valid JSON Schema.
    #[error("the input schema of tool `{tool}` is not a valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: ToolName,
        /// What the schema compiler said.
        reason: String,
    },
    /// The result schema (see [`EngineBuilder::result_schema`](crate::EngineBuilder::result_schema))
    /// is not a valid JSON Schema.
    #[error("the result schema is not a valid JSON Schema: {reason}; fix it or leave it out")]
    InvalidResultSchema {
        /// What the schema compiler said.
        reason: String,
    },
    /// The eligibility rules were refused.
    #[error(transparent)]
    Eligibility(#[from] EligibilityError),
    /// The transition table was refused.
    #[error(transparent)]
    Transitions(#[from] TransitionTableError),
    /// A budget name or other option was invalid.
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option.
        option: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The filesystem stores could not be opened.
    #[error("could not open the filesystem stores: {0}")]
    Stores(#[source] rein_storage::StorageError),
    /// A registry given to the builder lists a tool that its `get` does not return.
    #[error(
        "the registry lists tool `{tool}` but does not return it by name; a registry must return every tool it lists"
    )]
    RegistryBroken {
        /// The tool listed but not returned.
        tool: ToolName,
    },
    /// `max_depth` is above [`MAX_DEPTH_CEILING`](crate::MAX_DEPTH_CEILING).
    #[error(
        "a max_depth of {depth} is deeper than rein allows ({ceiling}); give a max_depth of at most {ceiling}, and split work into wider trees rather than deeper ones"
    )]
    MaxDepthTooLarge {
        /// The depth asked for.
        depth: u32,
        /// The deepest accepted.
        ceiling: u32,
    },
}

/// Why the engine could not start, resume or finish driving a run.
///
/// A run that *fails* is not an error: the call returns the [`Run`](rein_run::Run) with
/// status `failed` and its [`Failure`](rein_run::Failure). These errors mean the engine
/// could not do what was asked at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No run has this id.
    #[error(
        "no run with id {id} in the engine's stores; check the id, and that the engine uses the stores the run was started with"
    )]
    RunNotFound {
        /// The id.
        id: RunId,
    },
    /// The run is over and cannot be resumed.
    #[error("run {id} is {status}; a finished run cannot be resumed")]
    RunFinished {
        /// The run.
        id: RunId,
        /// Its final status.
        status: RunStatus,
    },
    /// The run waits for an answer; resume it with one.
    #[error("run {id} is paused waiting for an answer to {question:?}; resume it with an answer{}", options_hint(.options))]
    AwaitingAnswer {
        /// The run.
        id: RunId,
        /// The question.
        question: String,
        /// The answers offered.
        options: Vec<String>,
    },
    /// An answer was given to a run that is not paused, or is not among the options.
    #[error("cannot answer run {id}: {source}")]
    InvalidAnswer {
        /// The run.
        id: RunId,
        /// What the run said.
        #[source]
        source: RunError,
    },
    /// The run is being driven by another caller right now.
    #[error("run {id} is already being driven; wait for it to finish or interrupt it first")]
    AlreadyActive {
        /// The run.
        id: RunId,
    },
    /// A run with the chosen id exists already.
    #[error("a run with id {id} exists already; choose another id, or resume it")]
    RunExists {
        /// The id.
        id: RunId,
    },
    /// The run store failed.
    #[error(transparent)]
    RunStore(#[from] RunStoreError),
    /// The ledger store failed.
    #[error(transparent)]
    LedgerStore(#[from] LedgerStoreError),
    /// The artifact store failed.
    #[error(transparent)]
    ArtifactStore(#[from] ArtifactError),
    /// The ledger does not reach the head the run's snapshot was saved after: whole entries
    /// were cut from its end (which its hash chain alone cannot show), or it was rewritten
    /// or replaced from that entry on. The engine appends entries before it saves a
    /// snapshot, so a ledger that is only ever appended to always reaches it. Nothing was
    /// written: the ledger and the snapshot are left as they are.
    #[error(
        "the ledger of run {id} falls short of the run's snapshot: the snapshot was saved after \
         ledger {head}, but {}; restore the ledger from a backup (it was left as it is: nothing \
         was written to it or cut from it)",
        shortfall(.head, *.last)
    )]
    LedgerBehindSnapshot {
        /// The run.
        id: RunId,
        /// The head the snapshot records.
        head: LedgerHead,
        /// The sequence number of the ledger's last entry (0 for no entry).
        last: u64,
    },
    /// A ledger's entries do not describe a valid run (they contradict the run's invariants).
    #[error("the ledger of run {id} does not describe a valid run at entry {seq}: {source}")]
    InconsistentLedger {
        /// The run.
        id: RunId,
        /// The first entry that does not fit.
        seq: u64,
        /// Why.
        #[source]
        source: Box<ProjectionError>,
    },
    /// A run variable nests JSON deeper than the ledger can record
    /// ([`MAX_JSON_DEPTH`](crate::MAX_JSON_DEPTH)); nothing was recorded.
    #[error(
        "run variable {name:?} nests arrays and objects more than {limit} levels deep; a ledger \
         entry holding it could not be read back, so flatten it"
    )]
    VarTooDeep {
        /// The variable.
        name: String,
        /// The deepest nesting accepted.
        limit: usize,
    },
    /// The run's recorded policy could not be read back.
    #[error("the recorded policy of run {id} is unusable: {source}")]
    InvalidRecordedPolicy {
        /// The run.
        id: RunId,
        /// Why.
        #[source]
        source: RecordedPolicyError,
    },
    /// A narrowing of the run's policy was refused: it would widen what the run may do.
    /// Nothing was recorded.
    #[error("cannot narrow the policy of run {id}: {source}")]
    Narrowing {
        /// The run.
        id: RunId,
        /// What it would widen.
        #[source]
        source: NarrowingError,
    },
    /// The run stopped (ended, paused or interrupted) before its next step, where a
    /// narrowing sent through its handle would have been applied.
    #[error(
        "run {id} stopped before its next step, so its policy was not narrowed; narrow a run \
         that is not being driven through the engine instead"
    )]
    NotNarrowed {
        /// The run.
        id: RunId,
    },
    /// The task driving the run ended abnormally.
    #[error("the task driving run {id} ended abnormally: {source}")]
    TaskFailed {
        /// The run.
        id: RunId,
        /// What the runtime said (the task panicked or was cancelled).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The run waits for a verdict on a durable approval; give one with `Engine::approve`.
    #[error(
        "run {id} is paused waiting for approval of a call of `{}` (step {}, input {}); give \
         a verdict with Engine::approve or `rein approve {id}`",
        pending.tool, pending.step, pending.input_hash
    )]
    AwaitingApproval {
        /// The run.
        id: RunId,
        /// The call waiting.
        pending: Box<PendingApproval>,
    },
    /// A verdict was given for a run that waits for no approval (never asked, or already
    /// decided).
    #[error(
        "run {id} is {status} and waits for no approval; only a run paused for a durable \
         approval takes a verdict (see `rein runs list`)"
    )]
    NotAwaitingApproval {
        /// The run.
        id: RunId,
        /// Its status.
        status: RunStatus,
    },
    /// An answer was to be recorded without driving the run
    /// ([`Engine::record_answer`](crate::Engine::record_answer)), but the question is a
    /// child run's: its answer is forwarded as the run is driven. Nothing is recorded.
    #[error(
        "run {id} waits for the answer its child run {child} asked for, which is passed on          as the run is driven; answer it where the run is driven (Engine::resume_with_input,          or `rein resume` on a data directory)"
    )]
    ChildAwaitsAnswer {
        /// The run.
        id: RunId,
        /// The child that asks.
        child: RunId,
    },
    /// A verdict answers another call than the one the run waits for: another step, tool or
    /// input (the planner proposed something else since), or another run. Nothing is
    /// recorded.
    #[error(
        "the verdict answers a call of `{}` at step {} with input {} of run {}, but run {id} \
         waits for a call of `{}` at step {} with input {}; an approval never carries over to \
         another call: decide on the pending one",
        verdict.tool(), verdict.step(), verdict.input_hash(), verdict.run_id(),
        pending.tool, pending.step, pending.input_hash
    )]
    ApprovalMismatch {
        /// The run.
        id: RunId,
        /// The call the run waits for.
        pending: Box<PendingApproval>,
        /// The verdict refused.
        verdict: Box<ApprovalResponse>,
    },
    /// The verdict came after the approval timed out: the call was denied (recorded) when
    /// the verdict arrived, and the verdict was not applied.
    #[error(
        "the approval of `{}` for run {id} timed out after {timeout_ms} ms (requested at {}): \
         the call was denied and the verdict not applied; resume the run to go on",
        pending.tool, pending.requested_at
    )]
    ApprovalExpired {
        /// The run.
        id: RunId,
        /// The call that waited.
        pending: Box<PendingApproval>,
        /// The policy's approval timeout.
        timeout_ms: u64,
    },
    /// A run was started with a deadline that is not in the future. Nothing is recorded.
    #[error(
        "the run's deadline {at} is not in the future (the engine's clock reads {now}); give a \
         later deadline, or none"
    )]
    DeadlinePassed {
        /// The deadline asked for.
        at: Timestamp,
        /// The engine's clock when the run was to start.
        now: Timestamp,
    },
    /// A run was started with a deadline no run can be held to. Nothing is recorded.
    #[error("cannot start the run: {source}")]
    InvalidDeadline {
        /// What is wrong with it.
        #[source]
        source: rein_policy::DeadlineError,
    },
    /// A follow-up was refused: the run to continue does not exist, has not ended, or its
    /// conversation does not verify.
    #[error("cannot follow up on run {previous}: {source}")]
    FollowUpRefused {
        /// The run the follow-up would continue.
        previous: RunId,
        /// Why not.
        #[source]
        source: Box<ConversationError>,
    },
    /// The chain of runs a conversation is does not verify.
    #[error("the conversation that run {run} ends does not verify: {source}")]
    ConversationBroken {
        /// The run verified.
        run: RunId,
        /// The broken ledger or link.
        #[source]
        source: Box<ConversationError>,
    },
    /// A tree of runs does not verify: the link between a parent and a child is broken.
    #[error("the tree of runs is broken between parent {parent} and child {child}: {reason}")]
    TreeBroken {
        /// The parent.
        parent: RunId,
        /// The child.
        child: RunId,
        /// Which link is broken.
        #[source]
        reason: TreeError,
    },
    /// The run was started under a hook this engine does not have (by name, or for a
    /// command hook by the hashes of its command line and script): driving it would
    /// govern it less than it started, so it is not driven.
    #[error(
        "run {id} was started under hook {hook}, which this engine does not have; register \
         that hook (the same name, command line and script) to drive the run"
    )]
    HookMissing {
        /// The run.
        id: RunId,
        /// The hook its policy records.
        hook: rein_policy::HookRef,
    },
}

/// What the ledger holds instead of the snapshot's head.
fn shortfall(head: &LedgerHead, last: u64) -> String {
    match last {
        0 => "the ledger holds no entry".to_owned(),
        last if last < head.seq => {
            format!("the ledger ends at entry {last}: its last entries were cut")
        }
        _ => format!(
            "the ledger's entry {} has another hash: the ledger was rewritten or replaced",
            head.seq
        ),
    }
}

fn options_hint(options: &[String]) -> String {
    if options.is_empty() {
        String::new()
    } else {
        format!(" (one of {options:?})")
    }
}

/// Why a [`PolicyNarrowing`](crate::PolicyNarrowing) was refused: what it would widen, or name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NarrowingError {
    /// A budget limit would rise (a narrowing may lower limits, or add one where none is).
    #[error(
        "narrowing would widen budget `{name}` from {current} to {requested}; ask for at most \
         {current}"
    )]
    BudgetWouldRise {
        /// The budget.
        name: BudgetName,
        /// Its limit now.
        current: u64,
        /// The limit asked for.
        requested: u64,
    },
    /// The step limit would rise.
    #[error(
        "narrowing would widen max_steps from {current} to {requested}; ask for at most {current}"
    )]
    MaxStepsWouldRise {
        /// The limit now.
        current: u32,
        /// The limit asked for.
        requested: u32,
    },
    /// More rejections would be handed back than the run's policy allows.
    #[error(
        "narrowing would widen how rejections are handed back, from {current:?} to \
         {requested:?}; ask for FailRun or a lower hand-back limit"
    )]
    HandBackWouldRise {
        /// The run's setting now.
        current: rein_policy::OnViolation,
        /// The setting asked for.
        requested: rein_policy::OnViolation,
    },
    /// The narrowed eligibility was refused (a narrowing keeps side effects in `act`, so
    /// this means the run's recorded rules were already invalid).
    #[error(transparent)]
    Eligibility(#[from] rein_policy::EligibilityError),
    /// The narrowed policy would allow something the run's policy does not (a check of the
    /// whole result, behind the checks of each part above).
    #[error(
        "narrowing would widen the run's policy; ask only for lower limits, fewer tools and more approvals"
    )]
    WouldWiden,
    /// A tool named in the narrowing is not registered with the engine.
    #[error("narrowing names tool `{0}`, which this engine does not have; name a registered tool")]
    UnknownTool(ToolName),
}

/// Why the policy a run recorded cannot be enforced by this engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordedPolicyError {
    /// The ledger's first entry is not `run_started`.
    #[error("the ledger does not start with run_started")]
    NoRunStarted,
    /// The recorded JSON is not a policy snapshot.
    #[error("it is not a valid policy snapshot: {0}")]
    Unreadable(#[source] serde_json::Error),
    /// Its eligibility rules do not fit this engine's tools.
    #[error("its eligibility rules do not fit this engine's tools: {0}")]
    Eligibility(#[source] EligibilityError),
    /// A replay engine could not be built under it.
    #[error("a replay engine could not be built under it: {0}")]
    Replay(#[source] Box<BuildError>),
}

/// Why a tree of runs does not verify: a link between a parent and its child is broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// The parent recorded the child's end at one head; the child's ledger ends elsewhere.
    #[error(
        "the parent recorded the child's ledger ending at {recorded}, but it ends at {}; the \
         child's ledger was cut, extended or replaced after it ended",
        found.map_or_else(|| "no entry".to_owned(), |h| h.to_string())
    )]
    HeadMismatch {
        /// The head the parent recorded.
        recorded: LedgerHead,
        /// The head the child's ledger has.
        found: Option<LedgerHead>,
    },
    /// The child's ledger does not name this parent (and its `child_started` entry) in
    /// its `child_of` entry.
    #[error("the child's ledger does not name this parent's child_started entry {started}")]
    NotLinked {
        /// The parent's `child_started` entry.
        started: LedgerHead,
    },
    /// The parent recorded the child's end, but the child's ledger is gone.
    #[error("the parent recorded the child's end, but no ledger of the child is stored")]
    Missing,
    /// The child would stand deeper below the run verified than any tree rein grows.
    #[error(
        "the child would be more than {ceiling} levels below the run verified, deeper than any tree rein grows; its ledgers were assembled or edited by hand (a loop of runs naming each other as children included)"
    )]
    TooDeep {
        /// [`MAX_DEPTH_CEILING`](crate::MAX_DEPTH_CEILING).
        ceiling: u32,
    },
    /// The parent started the child and recorded no end for it, and no ledger of the child
    /// is stored (a process that stopped in between leaves this; resuming the parent starts
    /// the child), so it cannot be replayed.
    #[error(
        "the parent started the child at entry {} and recorded no end for it, and no ledger of the child is stored",
        started.seq
    )]
    NotStored {
        /// The parent's `child_started` entry.
        started: LedgerHead,
    },
    /// The parent's own entries about the child break the rules of a tree (a child started
    /// after its parent ended, twice, or ended without starting).
    #[error(transparent)]
    Recorded(#[from] ChildLinkError),
}

/// What is wrong with a follow-up, or with the chain of runs a conversation is: carried by
/// [`EngineError::FollowUpRefused`] and [`EngineError::ConversationBroken`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConversationError {
    /// The run to continue is not in the engine's stores.
    #[error(
        "run {run} is not in the engine's stores; check the id, and that the engine uses the \
         stores the run was started with"
    )]
    NotFound {
        /// The run asked for.
        run: RunId,
    },
    /// The run to continue has not ended.
    #[error(
        "run {run} is {status}; a follow-up continues a finished run: wait for it to end, or \
         queue the message with RunHandle::follow_up while it runs"
    )]
    NotFinished {
        /// The run asked for.
        run: RunId,
        /// Its status now.
        status: RunStatus,
    },
    /// A run's ledger does not verify (an edited, dropped or inserted entry, or a ledger
    /// cut short of its snapshot).
    #[error(
        "the ledger of run {run} does not verify: {source}; a conversation is continued and \
         verified only over ledgers that verify"
    )]
    Unverified {
        /// The run whose ledger failed.
        run: RunId,
        /// Why.
        #[source]
        source: Box<EngineError>,
    },
    /// A run follows up on a run whose ledger is not stored.
    #[error(
        "run {run} follows up on run {previous}, whose ledger is not stored; restore it from a \
         backup, or the conversation cannot be verified"
    )]
    Missing {
        /// The later run.
        run: RunId,
        /// The run it names.
        previous: RunId,
    },
    /// The earlier run's ledger does not end at the head the later run recorded.
    #[error(
        "run {run} recorded the ledger of run {previous} ending at {recorded}, but it ends at \
         {}; one of the two ledgers was changed after the follow-up started",
        found.map_or_else(|| "no entry".to_owned(), |h| h.to_string())
    )]
    HeadMismatch {
        /// The later run.
        run: RunId,
        /// The run it follows up on.
        previous: RunId,
        /// The head the later run recorded.
        recorded: LedgerHead,
        /// Where the earlier run's ledger ends.
        found: Option<LedgerHead>,
    },
    /// The later run's turn is not one past the earlier run's.
    #[error(
        "run {run} records turn {recorded} of its conversation, but run {previous} before it is \
         turn {found}; a follow-up is one turn past the run it continues"
    )]
    TurnMismatch {
        /// The later run.
        run: RunId,
        /// The run it follows up on.
        previous: RunId,
        /// The turn the later run recorded.
        recorded: u32,
        /// The earlier run's turn.
        found: u32,
    },
    /// The conversation holds more runs than a follow-up may carry.
    #[error(
        "the conversation already holds {limit} runs, the most a follow-up carries; start a new \
         run and give it what matters of this conversation in its goal"
    )]
    TooLong {
        /// The most runs a conversation holds.
        limit: u32,
    },
    /// An earlier follow-up queued on the same run could not start, so this one was not
    /// started either (it would have continued that one).
    #[error(
        "an earlier follow-up queued on run {run} could not start, so this one was not \
         started; follow up on run {run} again"
    )]
    QueueBroken {
        /// The run the follow-ups were queued on.
        run: RunId,
    },
}

//! The command line, as clap types: commands, arguments, and help text that teaches.
#![expect(
    clippy::doc_markdown,
    reason = "these doc comments are the plain-text --help, where backticks would show"
)]

pub(crate) mod mcp;
pub(crate) mod runs;
pub(crate) mod serve;
pub(crate) mod stop;
pub(crate) mod worker;

pub(crate) use runs::{ListedStatus, PrunedStatus, RunsCommand, RunsListArgs, RunsPruneArgs};
use serve::SERVE_AFTER;
pub(crate) use serve::ServeArgs;
pub(crate) use stop::StopArgs;
use stop::{ABORT_AFTER, INTERRUPT_AFTER};
use worker::{SUBMIT_AFTER, WORKER_AFTER};
pub(crate) use worker::{SubmitArgs, WorkerArgs};

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const RUN_AFTER: &str = "\
Examples:
  rein run examples/scenarios/happy-path.json
  rein run examples/scenarios/happy-path.json --data-dir /tmp/rein --json
  rein run my-scenario.json --workspace ./sandbox --quiet
  rein run --follow-up 0193c6a2-... --goal \"And now in French\"

Exit codes:
  0    completed
  1    the run failed (or rein could not go on: a store error, ...)
  2    bad input: a scenario file, an argument, a data directory
  3    the run is paused, waiting for a human's answer
  4    the run's ledger failed verification
  130  interrupted with Ctrl-C: a call in progress finishes and is recorded, and
       `rein resume RUN_ID` continues the run (a second Ctrl-C aborts it: it fails)";

const RESUME_AFTER: &str = "\
Examples:
  rein resume 0193c6a2-... --input yes
  rein resume 0193c6a2-... --data-dir /tmp/rein

Exit codes:
  0    completed
  1    the run failed
  2    bad input: no such run, a finished run, an answer not among the options
  3    the run is paused (again), waiting for a human's answer
  4    the run's ledger failed verification
  130  interrupted with Ctrl-C (resume again; a second Ctrl-C aborts the run)";

const APPROVE_AFTER: &str = "\
Examples:
  rein approve 0193c6a2-... --reason 'change ticket 42' --by alice
  rein approve 0193c6a2-... --deny --reason 'not on a friday' --by bob --data-dir /tmp/rein
  rein approve 0193c6a2-... --reason 'checked' --by alice --input-hash abfda2fc...

Exit codes:
  0    completed
  1    the run failed (a denial fails it unless rejections are handed back); or the
       approval came too late: past its timeout the call was denied, the run failed
       because of it, and the verdict is not applied
  2    bad input: no such run, a run that waits for no approval (the runs below it that
       do are named: approve a child by its own id), an --input-hash that is not the
       pending call's
  3    the run is paused (again): for another approval, or for a human's answer
  4    the run's ledger failed verification";

const NARROW_AFTER: &str = "\
Examples:
  rein narrow 0193c6a2-... --reason 'the incident is over' --budget tool_calls=2
  rein narrow 0193c6a2-... --reason 'no deploys today' --deny-tool deploy --max-steps 10
  rein narrow 0193c6a2-... --reason 'ask first' --require-approval fs.write --fail-on-violation

A narrowing only makes the run stricter: lower budget limits (or a limit where there was
none), fewer steps, tools made eligible in no state, more approvals, fewer rejections handed
back. It is recorded in the run's ledger (policy_narrowed) and holds when the run is resumed.
Asking for anything wider is refused whole and nothing is recorded.

Exit codes:
  0    the policy was narrowed
  1    rein could not go on (a store error, ...)
  2    bad input: no such run, a finished run, nothing to narrow, a malformed NAME=LIMIT,
       an unknown tool, or a request that would widen the run's policy
  4    the run's ledger failed verification";

const MAIN_AFTER: &str = "\
Examples:
  rein run examples/scenarios/happy-path.json
  rein run examples/scenarios/ask-human.json --data-dir /tmp/rein
  rein resume 0193c6a2-... --input yes --data-dir /tmp/rein
  rein approve 0193c6a2-... --reason 'ticket 42' --by alice
  rein narrow 0193c6a2-... --reason 'wind down' --budget tool_calls=2
  rein interrupt 0193c6a2-... --reason 'pause for the night'
  rein runs list
  rein ledger verify 0193c6a2-...
  rein inspect 0193c6a2-... --format mermaid
  rein validate my-scenario.json
  rein schema scenario > scenario.schema.json
  rein serve --data-dir /tmp/rein

Exit codes:
  0    completed (or the command succeeded)
  1    the run failed (or rein could not go on: a store error, ...)
  2    bad input: a scenario file, an argument, a run id, a data directory
  3    the run is paused, waiting for a human's answer
  4    a ledger failed verification (a broken chain, or one that falls short of its run snapshot)
  130  interrupted with Ctrl-C (the run can be resumed)

Scenario files are documented in docs/SCENARIOS.md; `rein schema scenario` prints their JSON Schema.";

/// rein runs governed AI agents: an explicit state machine decides when a tool may run,
/// policies decide whether it may, a resilience stack decides how, and a hash-chained
/// ledger records that it ran.
///
/// This command runs scenario files (a goal, policies, tools and a scripted planner),
/// stores each run and its ledger in a data directory, and verifies and inspects them.
#[derive(Debug, Parser)]
#[command(name = "rein", version, after_help = MAIN_AFTER, max_term_width = 100)]
pub(crate) struct Cli {
    /// Export traces and metrics over OTLP/HTTP to the collector at URL (its base URL,
    /// e.g. http://127.0.0.1:4318). Without it, OTEL_EXPORTER_OTLP_ENDPOINT is used when
    /// set; OTEL_SERVICE_NAME names the service (default rein). Prompts, replies and tool
    /// inputs and outputs are never exported by the command.
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) otlp: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a scenario file and print a summary.
    ///
    /// The run and its ledger are stored in the data directory (fsynced at every step).
    /// While it runs, progress lines show each step when stdout is a terminal. If the run
    /// asks a human and the scenario has scripted "answers", they are given in order;
    /// otherwise rein prints how to resume it and exits with 3.
    ///
    /// With --follow-up RUN_ID --goal TEXT instead of a scenario file, a new run continues
    /// the finished run RUN_ID (its conversation: the planner sees the earlier runs), under
    /// the scenario that run was started with.
    #[command(after_help = RUN_AFTER)]
    Run(RunArgs),
    /// Continue a paused or interrupted run.
    ///
    /// The engine is rebuilt from the scenario stored with the run (DATA_DIR/scenarios/,
    /// or the --store database), under the policy recorded in its ledger, with the same
    /// budget. With --store, the answer is only recorded and the run queued: a `rein
    /// worker` drives it (exit 0 once queued).
    #[command(after_help = RESUME_AFTER)]
    Resume(ResumeArgs),
    /// Grant (or, with --deny, deny) the call a run waits for under a durable approval
    /// policy, and continue the run.
    ///
    /// The engine is rebuilt from the scenario stored with the run, as for `rein resume`.
    /// The verdict is recorded with who gave it and why, and binds the run, step, tool and
    /// input hash of the pending call (shown by `rein runs list`); the granted call runs
    /// with exactly the input it was requested with. With --store, the verdict is only
    /// recorded and the run queued: a `rein worker` runs the call and drives the run on.
    #[command(after_help = APPROVE_AFTER)]
    Approve(ApproveArgs),
    /// Narrow the policy of a stored run: lower its budgets and steps, take tools away,
    /// require approvals, hand fewer rejections back.
    ///
    /// For a run that is not being driven (paused, interrupted, or stopped by a crash; a
    /// `rein` process driving it is waited for). The engine is rebuilt from the scenario
    /// stored with the run, as for `rein resume`; the narrowing is recorded in the run's
    /// ledger with its reason, and the run is held to it from its next step on.
    #[command(after_help = NARROW_AFTER)]
    Narrow(NarrowArgs),
    /// Ask a run to abort: the process driving it (on this machine or, with --store, any
    /// worker) drops its calls in flight and fails it at its next step.
    #[command(after_help = ABORT_AFTER)]
    Abort(StopArgs),
    /// Ask a run to stop at its next step, resumable: nothing new starts, a call in
    /// progress finishes and is recorded, and the run is left interrupted.
    #[command(after_help = INTERRUPT_AFTER)]
    Interrupt(StopArgs),
    /// Replay a stored run, and every child run it delegated to, from its ledger.
    ///
    /// The engine is rebuilt from the scenario stored with the run, as for `rein resume`.
    /// The recorded decisions, tool outputs, verdicts and answers are fed back through it
    /// (no tool runs, nothing is written); rein says, run by run, whether the replay
    /// reaches the same states, status and result. Exit 1 when it does not.
    #[command(
        after_help = "Examples:\n  rein replay 0193c6a2-...\n\nExit codes: 0 the replay matches, 1 it diverges, 2 no such run, 4 a ledger of the tree fails verification (a broken chain, or a child the parent's entries misplace: started after the parent ended, a child whose end is recorded but whose ledger is gone)."
    )]
    Replay(ReplayArgs),
    /// List the runs in a data directory.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Verify or show a run's ledger.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// Draw the path a run took through the state machine, or a scenario's policy.
    ///
    /// For a run: each state it entered, in order, with the tools called there and how
    /// they ended. With --policy: the transition table, and which tools each state allows
    /// (the eligibility matrix), marking tools that need approval.
    #[command(
        after_help = "Examples:\n  rein inspect 0193c6a2-... --format mermaid\n  rein inspect 0193c6a2-... --format dot | dot -Tsvg > run.svg\n  rein inspect --policy examples/scenarios/happy-path.json --format json"
    )]
    Inspect(InspectArgs),
    /// Check a scenario file without running it.
    ///
    /// Parses it, checks what goes with what (tool kinds, paths, names), and builds the
    /// engine: input schemas compile, eligibility rules and the transition table are valid.
    #[command(
        after_help = "Examples:\n  rein validate examples/scenarios/happy-path.json\n\nExit codes: 0 valid, 2 invalid (the error names the file, line, column and field)."
    )]
    Validate(ValidateArgs),
    /// Print a JSON Schema.
    #[command(after_help = "Examples:\n  rein schema scenario > scenario.schema.json")]
    Schema(SchemaArgs),
    /// List the built-in tools: annotations, the states the default eligibility lets each
    /// run in, and whether the default approval policy asks before it runs.
    #[command(after_help = "Examples:\n  rein tools\n  rein tools --json")]
    Tools(ToolsArgs),
    /// Record a scenario's run in a PostgreSQL store and queue it for a `rein worker`.
    #[command(after_help = SUBMIT_AFTER)]
    Submit(SubmitArgs),
    /// Drive the runs queued in a PostgreSQL store until stopped (SIGTERM or Ctrl-C).
    #[command(after_help = WORKER_AFTER)]
    Worker(WorkerArgs),
    /// Work with MCP servers: list the tools rein would import from one.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Serve the web console: runs, their verified ledgers, and an inbox of approvals and
    /// questions to answer.
    ///
    /// Pages can be read by anyone who reaches the address; every change needs an
    /// operator's token (the ledger records the token's operator name). Without --tokens,
    /// a token for operator `operator` is made at start and printed once; with --tokens
    /// FILE, operators come from FILE (`NAME SHA256-HEX` lines), and a missing FILE is
    /// created with a new token, printed once. A run approved or answered here is driven on
    /// by this process, rebuilt from the scenario the run was started from.
    #[command(after_help = SERVE_AFTER)]
    Serve(ServeArgs),
}

/// `rein tools`.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Print JSON (one object per tool) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Where runs, ledgers, artifacts and scenarios are kept.
#[derive(Debug, Clone, Args)]
pub(crate) struct DataDirArg {
    /// The data directory: runs, ledgers (DIR/ledgers/RUN_ID.jsonl), artifacts, and the
    /// scenario each run started from.
    #[arg(long, value_name = "DIR", default_value = ".rein")]
    pub(crate) data_dir: PathBuf,
}

/// `rein run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The scenario file (JSON); not with --follow-up, which uses the stored scenario of the
    /// run it continues.
    #[arg(
        value_name = "SCENARIO",
        required_unless_present = "follow_up",
        conflicts_with = "follow_up"
    )]
    pub(crate) scenario: Option<PathBuf>,
    /// Continue the finished run RUN_ID: a follow-up in its conversation (give --goal).
    #[arg(long, value_name = "RUN_ID", requires = "goal")]
    pub(crate) follow_up: Option<String>,
    /// The follow-up's goal: the next message of the conversation (with --follow-up).
    #[arg(long, value_name = "TEXT", requires = "follow_up")]
    pub(crate) goal: Option<String>,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Print the final run as JSON instead of a summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// No progress lines and no model replies as they stream in (both are shown only when
    /// stdout is a terminal anyway).
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Confine the file tools to DIR instead of the scenario's "workspace".
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
}

/// `rein resume`.
#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The run to continue.
    #[arg(value_name = "RUN_ID")]
    pub(crate) run_id: String,
    /// The answer to the run's pending question (one of its options, if it offered some).
    #[arg(long, value_name = "ANSWER")]
    pub(crate) input: Option<String>,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Print the final run as JSON instead of a summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// No progress lines and no model replies as they stream in.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// `rein approve`.
#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The run waiting for approval.
    #[arg(value_name = "RUN_ID")]
    pub(crate) run_id: String,
    /// Deny the call instead of granting it.
    #[arg(long)]
    pub(crate) deny: bool,
    /// Why (recorded in the ledger).
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: String,
    /// Who decides (recorded in the ledger).
    #[arg(long, value_name = "NAME")]
    pub(crate) by: String,
    /// Decide only if the pending call's input hash is HASH (as the run's summary shows
    /// it): a verdict on exactly the call you looked at, never on one proposed since.
    #[arg(long, value_name = "HASH")]
    pub(crate) input_hash: Option<String>,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Print the final run as JSON instead of a summary.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `rein narrow`.
#[derive(Debug, Args)]
pub(crate) struct NarrowArgs {
    /// The run to narrow.
    #[arg(value_name = "RUN_ID")]
    pub(crate) run_id: String,
    /// Why (recorded in the ledger).
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: String,
    /// Lower budget NAME's limit to LIMIT, or set one where the run has none (repeatable).
    #[arg(long = "budget", value_name = "NAME=LIMIT")]
    pub(crate) budgets: Vec<String>,
    /// Lower the most decisions the run may take to N.
    #[arg(long, value_name = "N")]
    pub(crate) max_steps: Option<u32>,
    /// Make TOOL eligible in no state (repeatable).
    #[arg(long = "deny-tool", value_name = "TOOL")]
    pub(crate) deny_tools: Vec<String>,
    /// Require approval for every call of TOOL (repeatable).
    #[arg(long = "require-approval", value_name = "TOOL")]
    pub(crate) require_approval: Vec<String>,
    /// Fail the run on its next rejection instead of handing rejections back.
    #[arg(long, conflicts_with = "hand_back")]
    pub(crate) fail_on_violation: bool,
    /// Hand at most LIMIT rejections back to the planner (at most the run's own limit).
    #[arg(long, value_name = "LIMIT")]
    pub(crate) hand_back: Option<u64>,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

/// `rein replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The run to replay (its children are replayed with it).
    #[arg(value_name = "RUN_ID")]
    pub(crate) run_id: String,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

/// A shared store in place of the data directory.
#[derive(Debug, Clone, Args)]
pub(crate) struct StoreArg {
    /// A PostgreSQL store (postgres://user:password@host:port/database; TLS with
    /// ?sslmode=verify-full&sslrootcert=CA.pem) to use instead of the data directory; see
    /// docs/POSTGRES.md.
    #[arg(long, value_name = "URL", env = "REIN_STORE", hide_env_values = true)]
    pub(crate) store: Option<String>,
}

/// `rein ledger …`.
#[derive(Debug, Subcommand)]
pub(crate) enum LedgerCommand {
    /// Check a ledger's hash chain; name the first broken entry (exit 4).
    #[command(
        after_help = "Examples:\n  rein ledger verify 0193c6a2-...\n  rein ledger verify .rein/ledgers/0193c6a2-....jsonl\n\nExit codes: 0 verified, 2 no such run or not a ledger, 4 verification failed."
    )]
    Verify(LedgerVerifyArgs),
    /// Print a ledger as a timeline: seq, time, state, what happened.
    #[command(
        after_help = "Examples:\n  rein ledger show 0193c6a2-...\n  rein ledger show 0193c6a2-... --json | jq '.[] | .event.type'"
    )]
    Show(LedgerShowArgs),
    /// Write a run's ledger from a PostgreSQL store as its JSONL file, byte for byte.
    #[command(
        after_help = "Examples:\n  rein ledger export 0193c6a2-... --store postgres://rein@db/rein > run.jsonl"
    )]
    Export(LedgerExportArgs),
    /// Store a JSONL ledger file in a PostgreSQL store (verified first; a run that has a
    /// ledger there already is refused).
    #[command(
        after_help = "Examples:\n  rein ledger import .rein/ledgers/0193c6a2-....jsonl --store postgres://rein@db/rein"
    )]
    Import(LedgerImportArgs),
}

/// `rein ledger export`.
#[derive(Debug, Args)]
pub(crate) struct LedgerExportArgs {
    /// The run whose ledger to export.
    #[arg(value_name = "RUN_ID")]
    pub(crate) run_id: String,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Write to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// `rein ledger import`.
#[derive(Debug, Args)]
pub(crate) struct LedgerImportArgs {
    /// The ledger file (.jsonl).
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

/// A ledger, by run id or file.
#[derive(Debug, Args)]
pub(crate) struct LedgerArgs {
    /// A run id (its ledger in the data directory) or a ledger file (.jsonl).
    #[arg(value_name = "RUN_ID|FILE")]
    pub(crate) target: String,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
}

/// `rein ledger verify`.
#[derive(Debug, Args)]
pub(crate) struct LedgerVerifyArgs {
    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Also verify the child runs it delegated to, all the way down: each child's ledger,
    /// and that it ends exactly at the head its parent recorded.
    #[arg(long)]
    pub(crate) tree: bool,
}

/// `rein ledger show`.
#[derive(Debug, Args)]
pub(crate) struct LedgerShowArgs {
    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// Print the entries as a JSON array.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `rein inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The run to draw.
    #[arg(
        value_name = "RUN_ID",
        required_unless_present = "policy",
        conflicts_with = "policy"
    )]
    pub(crate) run_id: Option<String>,
    /// Draw this scenario's policy instead: transitions and the eligibility matrix.
    #[arg(long, value_name = "SCENARIO")]
    pub(crate) policy: Option<PathBuf>,
    /// The output format.
    #[arg(long, value_enum, default_value_t = Format::Mermaid)]
    pub(crate) format: Format,
    /// Print the exact request body step STEP's model call sent, rebuilt from the ledger
    /// and checked against the hash it recorded.
    #[arg(long, value_name = "STEP")]
    pub(crate) prompt: Option<u32>,
    /// With --prompt: the step's model call to print, from 1 (a call after a correction
    /// shows the model's rejected reply and the correction at its end).
    #[arg(long, value_name = "N", requires = "prompt", default_value_t = 1)]
    pub(crate) call: u32,
    /// The scenario file the run was started from (its planner configuration); default: the
    /// copy `rein run` saved in the data directory.
    #[arg(long, value_name = "SCENARIO", requires = "prompt")]
    pub(crate) scenario: Option<PathBuf>,
    /// Draw the tree of runs instead: the run and the child runs it delegated to, each
    /// edge labelled with what the child spent.
    #[arg(long, conflicts_with = "policy")]
    pub(crate) tree: bool,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    #[command(flatten)]
    pub(crate) store: StoreArg,
}

/// Diagram formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// A Mermaid state diagram (renders in GitHub Markdown).
    Mermaid,
    /// Graphviz DOT (`dot -Tsvg`).
    Dot,
    /// JSON, for programs.
    Json,
}

/// `rein validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The scenario file (JSON).
    #[arg(value_name = "SCENARIO")]
    pub(crate) scenario: PathBuf,
    /// Check the file tools against DIR instead of the scenario's "workspace".
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
    /// Check the file only: do not start or connect to the scenario's MCP servers (by
    /// default each is started, handshaken and listed, then closed).
    #[arg(long)]
    pub(crate) offline: bool,
}

/// `rein schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// Which schema.
    #[arg(value_enum)]
    pub(crate) what: SchemaKind,
}

/// The schemas rein publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaKind {
    /// Scenario files (`rein run`, `rein validate`).
    Scenario,
}

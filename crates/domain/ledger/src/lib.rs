//! rein's ledger domain: the hash-chained, append-only audit trail of a run and the
//! `LedgerStore` port.
//!
//! A [`Ledger`] records everything that happens in one run as [`Entry`]s: run started,
//! decisions, transitions, tool calls and their results, approvals, budget use, human input,
//! policy violations, steering, interrupts ([`EntryKind`]). Each entry carries its sequence
//! number, timestamp, run id and the run's state, the hash of the entry before it, and its
//! own SHA-256 over a canonical encoding (see [`Entry`]). Entries can only be appended;
//! [`Ledger::verify`] finds any edited, dropped, reordered or inserted entry and names the
//! first broken sequence number ([`VerifyError`]).
//!
//! ```
//! use rein_ledger::{Entry, EntryKind, Ledger, Problem};
//! use rein_run::{State, Timestamp};
//! use serde_json::json;
//!
//! let t = Timestamp::from_unix_millis(1_700_000_000_000);
//! let mut ledger = Ledger::new("run-1".parse()?);
//! ledger.append(t, State::Intake, EntryKind::RunStarted { goal: "Say hello".into(), vars: Default::default(), policy: json!({}).into() });
//! ledger.append(t, State::Intake, EntryKind::Transition {
//!     from: State::Intake,
//!     to: State::Explore,
//!     reason: "start".into(),
//! });
//! ledger.verify()?;
//!
//! // Stored as JSON lines; an edited line is found and named on the way back in.
//! let mut lines: Vec<String> = ledger.entries().iter().map(Entry::to_json_line).collect();
//! lines[0] = lines[0].replace("Say hello", "Say goodbye");
//! let entries: Vec<Entry> = lines.iter().map(|l| serde_json::from_str(l)).collect::<Result<_, _>>()?;
//! let err = Ledger::from_entries(ledger.run_id().clone(), entries).unwrap_err();
//! assert_eq!((err.seq, err.problem.clone()), (1, Problem::Edited));
//! assert_eq!(err.to_string(), "entry 1 was edited after it was written: its hash does not match its content");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Ledgers are persisted through the [`LedgerStore`] port (append-only; the engine holds it
//! behind the object-safe [`DynLedgerStore`]). This crate is pure: no I/O, no clocks — time
//! comes in as a [`Timestamp`](rein_run::Timestamp) from the caller.

mod chain;
mod children;
mod compact;
mod describe;
mod entry;
mod error;
mod hooks;
mod kind;
mod ledger;
mod line;
mod lines;
mod model_calls;
mod outline;
mod path;
mod store;
mod verifier;

pub use chain::Chain;
pub use children::{ChildEnd, ChildLink, ChildLinkError};
pub use entry::Entry;
pub use error::{Problem, VerifyError};
pub use hooks::{HookOutcome, HookPoint, HookRuling};
pub use kind::{EntryKind, InterruptKind, Violation};
pub use ledger::Ledger;
pub use line::SharedLine;
pub use lines::{LedgerLines, LineError};
pub use model_calls::model_call_starts;
pub use outline::RunOutline;
pub use path::{CallOutcome, RunPath, Stay, ToolUse, Via};
pub use store::{DynLedgerStore, LedgerStore, LedgerStoreError, LoadedLedger, TornTail};
pub use verifier::{ChainVerifier, Verified};

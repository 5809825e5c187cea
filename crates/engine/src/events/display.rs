//! Each [`RunEvent`] in human words, one line (a streamed piece is the piece itself, so
//! pieces printed one after the other show the reply being typed).

use std::fmt;

use rein_tool::ToolNotice;

use super::RunEvent;
use super::typed::{ModelCallOutcome, ToolOutcome};

/// `": reason"`, or nothing for an empty reason (no dangling separator).
fn colon(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// One line per event; an entry as the ledger shows it.
///
/// ```
/// # async fn f(handle: rein_engine::RunHandle) {
/// let mut events = handle.subscribe();
/// while let Some(event) = events.next().await {
///     println!("{event}"); // "tool fs.read started (attempt 1)", "explore → decide: seen enough", …
/// }
/// # }
/// ```
impl fmt::Display for RunEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Recorded(entry) => write!(f, "{entry}"),
            Self::Missed(n) => write!(f, "missed {n} events (the ledger has them all)"),
            Self::StepStarted(s) => write!(f, "step {} in {}", s.step, s.state),
            Self::ModelCallStarted(c) => write!(
                f,
                "model call to {} {} (attempt {})",
                c.provider, c.model, c.attempt
            ),
            Self::ModelDelta(piece) => write!(f, "{}", piece.delta),
            Self::ModelCallEnded(c) => match &c.outcome {
                ModelCallOutcome::Answered(usage) => {
                    write!(
                        f,
                        "model answered in {} ms: {} tokens in, {} out",
                        usage.latency_ms, usage.input_tokens, usage.output_tokens
                    )?;
                    if usage.cache_read_tokens > 0 {
                        write!(f, " ({} cached)", usage.cache_read_tokens)?;
                    }
                    match &usage.finish_reason {
                        Some(reason) => write!(f, ", stopped: {reason}"),
                        None => Ok(()),
                    }
                }
                ModelCallOutcome::Failed { attempt, error } => {
                    write!(f, "model call attempt {attempt} failed: {error}")
                }
            },
            Self::ToolStarted(t) => write!(f, "tool {} started (attempt {})", t.tool, t.attempt),
            Self::ToolFinished(t) => match &t.outcome {
                ToolOutcome::Returned { cached: true } => {
                    write!(f, "tool {} returned from the cache", t.tool)
                }
                ToolOutcome::Returned { cached: false } => {
                    write!(f, "tool {} returned in {} ms", t.tool, t.duration_ms)
                }
                ToolOutcome::Failed { error, will_retry } => write!(
                    f,
                    "tool {} failed after {} ms: {error}{}",
                    t.tool,
                    t.duration_ms,
                    if *will_retry { " — will retry" } else { "" }
                ),
            },
            Self::ApprovalAsked(a) => {
                write!(f, "approval asked for {}{}", a.tool, colon(&a.reason))
            }
            Self::ApprovalDecided(a) => write!(
                f,
                "{} {} by {}{}",
                a.tool,
                if a.granted {
                    "approved"
                } else {
                    "NOT approved"
                },
                a.approver,
                colon(&a.reason)
            ),
            Self::Transition(m) => write!(f, "{} → {}{}", m.from, m.to, colon(&m.reason)),
            Self::RunEnded(e) => write!(f, "run {}: {}", e.run, e.status),
            Self::ToolNotice(n) => match &n.notice {
                ToolNotice::Progress {
                    progress,
                    total,
                    message,
                } => {
                    write!(f, "tool {} progress {progress}", n.tool)?;
                    if let Some(total) = total {
                        write!(f, "/{total}")?;
                    }
                    match message {
                        Some(message) => write!(f, ": {message}"),
                        None => Ok(()),
                    }
                }
                ToolNotice::Log { level, data, .. } => {
                    write!(f, "tool {} log ({level}): {data}", n.tool)
                }
                _ => write!(f, "tool {} noticed something", n.tool),
            },
        }
    }
}

//! Text for people: one-line descriptions of ledger entries (for `ledger show` and live
//! progress), times and ages, and the summary printed at the end of a run.

use std::collections::BTreeMap;

use rein::Value;
use rein::ledger::{Entry, EntryKind};
use serde::Serialize;

use crate::text::truncate;

mod live;
mod summary;

pub(crate) use live::LiveReply;
pub(crate) use summary::summary;

/// A value's serde name (`"policy_violation"` for `FailureKind::PolicyViolation`).
pub(crate) fn serde_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_owned(),
    }
}

/// `value` as compact JSON, cut to about `max` characters.
pub(crate) fn short_json(value: &Value, max: usize) -> String {
    truncate(&value.to_string(), max)
}

fn limit(limit: Option<u64>) -> String {
    limit.map_or_else(|| "∞".to_owned(), |l| l.to_string())
}

/// What a ledger entry records, in one line (the ledger's own `Display`).
pub(crate) fn describe(kind: &EntryKind) -> String {
    kind.to_string()
}

/// Live progress: one short line per step that matters (a state change, a tool outcome
/// with the budget used so far, an approval, a violation, the end).
#[derive(Debug, Default)]
pub(crate) struct Progress {
    step: u32,
    budgets: BTreeMap<String, String>,
}

impl Progress {
    /// The line for `entry`, or `None` for entries not worth one.
    pub(crate) fn line(&mut self, entry: &Entry) -> Option<String> {
        let what = match entry.event() {
            EntryKind::Decision { step, .. } => {
                self.step = *step;
                return None;
            }
            EntryKind::BudgetConsumed {
                name,
                used,
                limit: l,
                ..
            } => {
                self.budgets
                    .insert(name.to_string(), format!("{used}/{}", limit(*l)));
                return None;
            }
            EntryKind::BudgetOverrun {
                name,
                used,
                limit: l,
                ..
            } => {
                self.budgets.insert(name.to_string(), format!("{used}/{l}"));
                return None;
            }
            EntryKind::Transition { from, to, reason } if reason.is_empty() => {
                format!("{from} → {to}")
            }
            EntryKind::Transition { from, to, reason } => format!("{from} → {to}  ({reason})"),
            EntryKind::ToolResult {
                tool,
                duration_ms,
                cached,
                ..
            } => format!(
                "{tool} ✓ {duration_ms} ms{}{}",
                if *cached { " (cached)" } else { "" },
                self.used()
            ),
            EntryKind::ToolError {
                tool,
                attempt,
                error,
                will_retry: true,
                ..
            } => format!(
                "{tool} attempt {attempt} failed ({}), retrying",
                error.kind()
            ),
            EntryKind::ToolError { tool, error, .. } => {
                format!(
                    "{tool} ✗ {}{}",
                    truncate(&error.to_string(), 80),
                    self.used()
                )
            }
            EntryKind::ApprovalGranted { tool, approver, .. } => {
                format!("{tool} approved by {approver}")
            }
            EntryKind::ApprovalDenied { tool, approver, .. } => {
                format!("{tool} NOT approved by {approver}")
            }
            EntryKind::RunStarted { .. }
            | EntryKind::ToolCall { .. }
            | EntryKind::ApprovalRequested { .. }
            | EntryKind::RunCompleted { .. }
            | EntryKind::HumanInputRequested { .. } => return None,
            other => describe(other),
        };
        Some(format!(
            "  [step {:>2}] {:<8}  {}",
            self.step,
            entry.state().as_str(),
            truncate(&what, 110)
        ))
    }

    fn used(&self) -> String {
        if self.budgets.is_empty() {
            return String::new();
        }
        let used: Vec<String> = self
            .budgets
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        format!("   [{}]", used.join(", "))
    }
}

/// A timestamp as `2026-11-22T10:04:05.123Z` (UTC).
pub(crate) fn iso(millis: u64) -> String {
    let secs = millis / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        millis % 1000
    )
}

/// A duration in milliseconds as a short age: `45s`, `12m`, `3h`, `5d`.
pub(crate) fn age(millis: u64) -> String {
    let secs = millis / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// `word`, quoted for a POSIX shell if it needs to be.
pub(crate) fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_and_ages() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_795_000_000_123), "2026-11-18T11:06:40.123Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(age(59_999), "59s");
        assert_eq!(age(61_000), "1m");
        assert_eq!(age(7_200_000), "2h");
        assert_eq!(age(3 * 86_400_000), "3d");
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("yes"), "yes");
        assert_eq!(shell_word("/tmp/x"), "/tmp/x");
        assert_eq!(shell_word("ship it"), "'ship it'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }

    #[test]
    fn a_skill_entering_the_context_names_the_skill_and_its_checksum() {
        let checksum = rein::tool::Digest::of_bytes(b"test");
        assert_eq!(
            describe(&EntryKind::SkillEntered {
                step: 2,
                name: "release-notes".into(),
                checksum,
            }),
            "skill `release-notes` entered the context (sha256 \
             9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08)"
        );
    }
}

//! `Decision` in a few words for people (`rein ledger show`, logs): one line, long inputs cut.

use std::fmt;

use serde_json::Value;

use crate::Decision;

/// The most characters of a tool's input (or a batch's tool list) a line shows.
const MAX_JSON_CHARS: usize = 70;

/// ` — reason`, or nothing for an empty reason (no dangling separator).
struct Because<'a>(&'a str);

impl fmt::Display for Because<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " — {}", self.0)
        }
    }
}

/// `value` as compact JSON, cut to `max` characters (the last one an ellipsis).
pub(crate) fn short_json(value: &Value, max: usize) -> String {
    let text = value.to_string();
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// One line: what the planner proposed and why.
///
/// ```
/// use rein_run::{Decision, State};
/// use serde_json::json;
/// assert_eq!(Decision::transition(State::Explore, "start").to_string(), "go to explore — start");
/// assert_eq!(
///     Decision::call_tool("fs.read", json!({"path": "a.txt"}), "look").to_string(),
///     r#"call fs.read {"path":"a.txt"} — look"#
/// );
/// ```
impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CallTool {
                tool,
                input,
                reason,
            } => write!(
                f,
                "call {tool} {}{}",
                short_json(input, MAX_JSON_CHARS),
                Because(reason)
            ),
            Self::Transition { to, reason } => write!(f, "go to {to}{}", Because(reason)),
            Self::AskHuman { question, options } if options.is_empty() => {
                write!(f, "ask a human {question:?}")
            }
            Self::AskHuman { question, options } => {
                write!(f, "ask a human {question:?} ({})", options.join(" / "))
            }
            Self::Finish { summary, .. } => write!(f, "finish{}", Because(summary)),
            Self::Fail { reason } => write!(f, "fail{}", Because(reason)),
            Self::CallTools { calls, reason } => {
                let tools: Vec<Value> = calls.iter().map(|c| Value::from(&*c.tool)).collect();
                write!(
                    f,
                    "call {} tools as one batch: {}{}",
                    calls.len(),
                    short_json(&Value::Array(tools), MAX_JSON_CHARS),
                    Because(reason)
                )
            }
            Self::Sequence { decisions, reason } => {
                let kinds: Vec<&str> = decisions.iter().map(Decision::kind).collect();
                write!(
                    f,
                    "a sequence of {}: {}{}",
                    decisions.len(),
                    kinds.join(", ").replace('_', " "),
                    Because(reason)
                )
            }
            other => f.write_str(&short_json(
                &serde_json::to_value(other).unwrap_or_default(),
                90,
            )),
        }
    }
}

//! `ScenarioError`: what is wrong with a scenario file, where (file, line, column, JSON
//! path), and what is allowed instead.

use std::fmt;

use crate::locate::{JsonPath, Position, SpanIndex, offset_of};

/// A scenario file that cannot be used: what is wrong, where, and how to fix it. Its
/// `Display` is what `rein` prints: `file:line:column: message`, then the JSON path and the
/// help on their own lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file, as the user named it.
    pub(crate) file: String,
    /// Where in the file, if known.
    pub(crate) position: Option<Position>,
    /// The JSON path of the value at fault, if known.
    pub(crate) path: Option<JsonPath>,
    /// What is wrong.
    pub(crate) message: String,
    /// What is allowed, or how to fix it.
    pub(crate) help: Option<String>,
}

impl ScenarioError {
    /// What is wrong, in one sentence.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The 1-based line and column of the problem in the file, where known.
    #[must_use]
    pub fn line_column(&self) -> Option<(usize, usize)> {
        self.position.map(|p| (p.line, p.column))
    }

    /// The JSON path of the value at fault (`planner.scripted[2].decision`), where known and
    /// not the whole file.
    #[must_use]
    pub fn json_path(&self) -> Option<String> {
        self.path.as_ref().map(ToString::to_string)
    }

    /// What is allowed instead, or how to fix it, where there is something to say.
    #[must_use]
    pub fn advice(&self) -> Option<&str> {
        self.help.as_deref()
    }

    /// An error about the value at `path` in `text`.
    pub(crate) fn at(file: &str, text: &str, path: JsonPath, message: impl Into<String>) -> Self {
        let position = SpanIndex::new(text).position_of(&path);
        Self {
            file: file.to_owned(),
            position,
            path: (!path.is_root()).then_some(path),
            message: message.into(),
            help: None,
        }
    }

    /// An error about the file as a whole (it cannot be read, …).
    pub(crate) fn whole(file: &str, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            position: None,
            path: None,
            message: message.into(),
            help: None,
        }
    }

    /// Adds what is allowed, or how to fix it.
    #[must_use]
    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Reads a `serde_json` error: its line and column, the JSON path there, and a hint.
    pub(crate) fn from_serde(file: &str, text: &str, e: &serde_json::Error) -> Self {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let mut message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
        let mut offset = offset_of(text, e.line(), e.column());
        // serde reports some errors (a value converted after it was read, a struct checked
        // after its last field) at the next token; the value that just ended is meant.
        // ("missing field" is reported at the closing brace of the object that lacks it.)
        let stepped_back = if message.starts_with("missing field") {
            None
        } else {
            after_value(text, offset)
        };
        if let Some(end) = stepped_back {
            offset = end;
        }
        let stepped_forward = stepped_back.is_none() && e.is_data();
        let stepped_forward = stepped_forward
            .then(|| before_value(text, offset))
            .flatten();
        if let Some(start) = stepped_forward {
            // serde reports a value of the wrong type at the colon or space before it.
            offset = start;
        }
        let out_of_range = message == "number out of range";
        // serde_json says "expected value" (a syntax error) when an enum field holds a
        // number, `true` or an array; in a text that is valid JSON, it is a type error.
        let wrong_type = message == "expected value"
            && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        // Only what comes before the error is needed to explain it.
        let index = SpanIndex::until(text, offset);
        let mut path = if e.is_data() || out_of_range || wrong_type {
            index.path_at(offset)
        } else {
            None
        };
        if let Some(literal) = path.as_ref().and_then(|p| index.text_of(p)) {
            if out_of_range {
                message = format!("the number {literal} is out of range");
            } else if wrong_type {
                message = format!(
                    "invalid type: `{}`, expected a name (a string) or an object",
                    short(literal)
                );
            } else if let Some(better) = too_large_integer(&message, literal) {
                message = better;
            } else if let Some((inner, number)) = float_read(&message)
                .and_then(|value| path.as_ref().and_then(|p| index.huge_integer_in(p, value)))
                && let Some(better) = too_large_integer(&message, number)
            {
                // Reported at the end of a value serde buffered: point at the number.
                message = better;
                path = Some(inner);
            }
        }
        // serde stops right after an unknown key: name the key itself.
        if let (Some(at), Some(key)) = (&path, unknown_field(&message)) {
            path = Some(at.key(key));
        }
        if e.is_data()
            && path.as_ref().is_none_or(JsonPath::is_root)
            && message.contains("expected struct Scenario")
        {
            "a scenario file holds one JSON object".clone_into(&mut message);
        }
        let position = match (&path, stepped_back.or(stepped_forward)) {
            (Some(path), Some(_)) => index.position_of(path),
            _ => (e.line() > 0).then_some(Position {
                line: e.line(),
                column: e.column().max(1),
            }),
        };
        let help = hint(&message, path.as_ref());
        Self {
            file: file.to_owned(),
            position,
            path: path.filter(|p| !p.is_root()),
            message,
            help,
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(Position { line, column }) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(path) = &self.path {
            write!(f, "\n  at: {path}")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// When byte `offset` of `text` sits on a closing bracket or comma after a value (only
/// whitespace between), the end of that value.
fn after_value(text: &str, offset: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if !matches!(bytes.get(offset), Some(b'}' | b']' | b',')) {
        return None;
    }
    let before = text.get(..offset)?.trim_end();
    matches!(before.as_bytes().last(), Some(b'}' | b']' | b'"')).then_some(before.len())
}

/// When byte `offset` of `text` is the colon or whitespace before a value, where the value
/// starts.
fn before_value(text: &str, offset: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if !matches!(bytes.get(offset), Some(b':' | b' ' | b'\t' | b'\n' | b'\r')) {
        return None;
    }
    let rest = text.get(offset..)?;
    let rest = rest.strip_prefix(':').unwrap_or(rest).trim_start();
    (!rest.is_empty() && !rest.starts_with([',', '}', ']'])).then(|| text.len() - rest.len())
}

/// `text` cut to 40 characters.
fn short(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// serde reads a whole number too large for 64 bits as a float, then says "invalid type:
/// floating point `1e+23`, expected u32": say what was written and what fits instead.
fn too_large_integer(message: &str, literal: &str) -> Option<String> {
    let expected = message
        .strip_prefix("invalid type: floating point `")?
        .split_once("`, expected ")?
        .1;
    let digits = literal.strip_prefix('-').unwrap_or(literal);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let range = match expected {
        "u32" => " (a whole number from 0 to 4294967295)",
        "u64" | "a nonzero u64" => " (a whole number from 0 to 18446744073709551615)",
        "a nonzero u32" => " (a whole number from 1 to 4294967295)",
        _ => "",
    };
    Some(format!(
        "the number {literal} is out of range, expected {expected}{range}"
    ))
}

/// The float serde read a whole number as, from "invalid type: floating point `1e+23`, …".
fn float_read(message: &str) -> Option<f64> {
    message
        .strip_prefix("invalid type: floating point `")?
        .split_once('`')?
        .0
        .parse()
        .ok()
}

/// The field serde calls unknown, from its message.
fn unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

/// A hint for common mistakes, by what serde said and where.
fn hint(message: &str, path: Option<&JsonPath>) -> Option<String> {
    let at = path.map(ToString::to_string).unwrap_or_default();
    let hint = if message.starts_with("EOF") || message.contains("trailing comma") {
        "the file is not complete JSON: check for a missing closing bracket or brace, or a comma after the last item"
    } else if message.starts_with("key must be a string") || message.starts_with("expected `,` or")
    {
        "JSON needs double-quoted keys and a comma between items"
    } else if at.starts_with("policies.budgets") {
        "budgets are whole numbers of 0 or more by name, e.g. {\"tool_calls\": 10, \"steps\": 20}"
    } else if at.starts_with("policies.transitions") {
        "transitions map each state to the states that may follow it, e.g. {\"intake\": [\"explore\", \"failed\"]}; states are intake, explore, decide, act, validate, done, failed"
    } else if at.starts_with("policies.eligibility") {
        "eligibility is {\"mode\": \"derived\"} or {\"mode\": \"explicit\", \"allow\": {\"explore\": [\"fs.read\"], \"act\": [\"fs.write\"]}}"
    } else if at.starts_with("policies.on_violation") {
        "on_violation is \"fail\" or {\"hand_back\": {\"limit\": 3}}"
    } else if at.starts_with("policies.on_tool_error") {
        "on_tool_error is \"fail\" or \"hand_back\""
    } else if at.starts_with("approver") {
        "approver is \"auto\", \"deny\", or {\"scripted\": [{\"answer\": \"grant\", \"reason\": \"…\", \"delay_ms\": 0}]}"
    } else if at.starts_with("planner") && !at.contains(']') {
        "planner is {\"scripted\": [{\"expect\": \"intake\", \"decision\": {\"type\": \"transition\", \"to\": \"explore\"}}, …]} or {\"kind\": \"llm\", \"provider\": {…}}"
    } else if at.starts_with("planner") && message.contains("unknown variant") {
        "a decision is {\"type\": \"call_tool\" | \"transition\" | \"ask_human\" | \"finish\" | \"fail\", …}; states are intake, explore, decide, act, validate, done, failed"
    } else if at.ends_with(".behavior") {
        "behavior is {\"output\": …}, {\"sequence\": […]}, \"echo\", \"hang\", {\"panic\": \"…\"} or {\"fail\": {\"message\": \"…\", \"transient\": false}}"
    } else if at.ends_with(".annotations") || at.contains(".annotations.") {
        "annotations are read_only, destructive, idempotent, cacheable, requires_approval (true/false), risk_level (low, medium, high, critical) and timeout_ms"
    } else if message.starts_with("missing field `goal`") {
        "every scenario needs a \"goal\": the task the planner works on"
    } else if message.starts_with("missing field `planner`") {
        "every scenario needs a \"planner\", e.g. {\"scripted\": [ … ]}"
    } else {
        return None;
    };
    Some(format!(
        "{hint}; `rein schema scenario` prints the full format"
    ))
}

//! How a model's reply becomes one decision: each function call read as a tool call or a
//! control function (`transition`, `finish`, `fail`, `ask_human`, `delegate`), its
//! arguments bounded and checked, consecutive tool calls folded into one batch, and more
//! than one resulting decision made one sequence; what is wrong is worded as a correction
//! to hand back to the model. And how a reply is recorded, for the dialogue to show again.

use std::sync::Arc;

use rein_run::ProposedCall;
use rein_run::{
    BudgetName, Decision, Delegation, ModelCall, ModelReply, SequenceError, Spend, State,
};
use serde_json::Value;

use crate::chat::{ChatResponse, FunctionCall};
use crate::error::excerpt;
use crate::names::{ControlFunction, NameMap};

/// The reply as the ledger records it and the dialogue shows it again: its text and calls,
/// each argument text over `max_bytes` recorded as `{}` (the correction says why), each
/// function name made one a provider accepts, each id unique within the reply.
pub(crate) fn record(reply: &ChatResponse, max_bytes: usize) -> ModelReply {
    let mut calls: Vec<ModelCall> = Vec::with_capacity(reply.calls.len());
    for (
        i,
        FunctionCall {
            id,
            name,
            arguments,
        },
    ) in reply.calls.iter().enumerate()
    {
        let mut id = safe_name(id, "call");
        if calls.iter().any(|c| c.id == id) {
            id = format!("{id}_{i}");
        }
        calls.push(ModelCall {
            id,
            name: safe_name(name, "unnamed"),
            arguments: if arguments.len() > max_bytes {
                "{}".to_owned()
            } else {
                arguments.clone()
            },
        });
    }
    let mut text = reply.text.clone();
    if text.len() > max_bytes {
        let mut at = max_bytes;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    ModelReply { text, calls }
}

/// `name` within `^[a-zA-Z0-9_-]{1,64}$`: other characters become `_`; empty: `fallback`.
fn safe_name(name: &str, fallback: &str) -> String {
    let safe: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        fallback.to_owned()
    } else {
        safe
    }
}

/// Reads replies under the planner's limits.
pub(crate) struct Reader<'a> {
    /// The largest function arguments accepted, in bytes.
    pub(crate) max_argument_bytes: usize,
    /// The deepest nesting accepted in function arguments.
    pub(crate) max_argument_depth: usize,
    /// Every tool the engine has, by function name: a call of one not offered here still
    /// becomes the decision it names, for the engine to refuse.
    pub(crate) known: &'a NameMap,
}

impl Reader<'_> {
    /// The decision of a reply; or the correction to hand back when it has none. A reply
    /// is taken whole or not at all: one malformed call, or a call after one that ends or
    /// pauses the run, hands the whole reply back, so nothing it asked for is dropped
    /// silently.
    pub(crate) fn interpret(
        &self,
        reply: &ChatResponse,
        offered: &NameMap,
        delegation: Option<&Delegation>,
    ) -> Result<Decision, String> {
        if reply.calls.is_empty() {
            return Err(format!(
                "Your reply called no function (it said: {:?}).",
                excerpt(&reply.text)
            ));
        }
        let many = reply.calls.len() > 1;
        let mut out = Vec::with_capacity(reply.calls.len());
        for call in &reply.calls {
            let decision = self
                .decision(call, &reply.text, offered, delegation)
                .map_err(|e| {
                    if many {
                        format!("{e} None of the calls of your reply was made.")
                    } else {
                        e
                    }
                })?;
            out.push(decision);
        }
        let mut decisions = batch_calls(out);
        if decisions.len() == 1 {
            return Ok(decisions.remove(0));
        }
        // The sequence's reason is the reply's text; its calls need no copy of it.
        for member in &mut decisions {
            match member {
                Decision::CallTool { reason, .. } | Decision::CallTools { reason, .. } => {
                    *reason = "".into();
                }
                _ => {}
            }
        }
        let reason: String = reply.text.chars().take(500).collect();
        Decision::sequence(decisions, reason).map_err(|e| match e {
            SequenceError::NotLast { kind, .. } => format!(
                "Your reply called `{kind}` before other functions; `{kind}` ends or pauses \
                 the run, so it must be the last call of a reply. None of the calls of your \
                 reply was made."
            ),
            other => format!("{other}."),
        })
    }

    fn decision(
        &self,
        call: &FunctionCall,
        text: &str,
        offered: &NameMap,
        delegation: Option<&Delegation>,
    ) -> Result<Decision, String> {
        let args = self.arguments(call)?;
        let field = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_owned);
        let reason = || field("reason").unwrap_or_default();
        let Some(control) = ControlFunction::from_name(&call.name) else {
            // Offered, or known to the engine but not eligible here: the engine decides,
            // refuses what it must and records it. Unknown: the model is told the
            // functions it was offered, by the names it can call.
            let name = call.name.as_str();
            let Some(tool) = offered.tool(name).or_else(|| self.known.tool(name)) else {
                return Err(unknown_function(name, offered, delegation.is_some()));
            };
            let tool = tool.to_string();
            let reason: String = text.chars().take(500).collect();
            return Ok(Decision::call_tool(tool, args, reason));
        };
        match control {
            ControlFunction::Transition => {
                let to = field("to").ok_or("`transition` needs `to`, a state name.")?;
                let to: State = to.parse().map_err(|_| {
                    format!(
                        "`transition` to {:?}: there is no such state.",
                        excerpt(&to)
                    )
                })?;
                Ok(Decision::transition(to, reason()))
            }
            ControlFunction::Finish => {
                let summary = field("summary").ok_or("`finish` needs `summary`, a string.")?;
                Ok(Decision::finish(
                    summary,
                    args.get("result").cloned().unwrap_or(Value::Null),
                ))
            }
            ControlFunction::Fail => Ok(Decision::fail(
                field("reason").ok_or("`fail` needs `reason`, a string.")?,
            )),
            ControlFunction::AskHuman => {
                let question =
                    field("question").ok_or("`ask_human` needs `question`, a string.")?;
                let options: Vec<String> = args
                    .get("options")
                    .and_then(Value::as_array)
                    .map(|o| {
                        o.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(Decision::ask_human(question, options))
            }
            ControlFunction::Delegate => delegate(&args, delegation),
        }
    }

    /// The call's arguments: a JSON object within the size and depth limits.
    fn arguments(&self, call: &FunctionCall) -> Result<Value, String> {
        let name = excerpt(&call.name);
        if call.arguments.len() > self.max_argument_bytes {
            return Err(format!(
                "The arguments of `{name}` are {} bytes, over the limit of {}.",
                call.arguments.len(),
                self.max_argument_bytes
            ));
        }
        let raw = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        };
        let value: Value = serde_json::from_str(raw).map_err(|e| {
            format!(
                "The arguments of `{name}` are not valid JSON ({e}): {}",
                excerpt(raw)
            )
        })?;
        if depth(&value) > self.max_argument_depth {
            return Err(format!(
                "The arguments of `{name}` nest deeper than {} levels.",
                self.max_argument_depth
            ));
        }
        if !value.is_object() {
            return Err(format!("The arguments of `{name}` must be a JSON object."));
        }
        Ok(value)
    }
}

/// A `delegate` call's decision: `goal` a string; `budget`, when given, an object of budget
/// names to non-negative integers; `planner`, when given, one of the names `delegation`
/// offers. Not offered (`delegation` is `None`), the call still becomes the decision it
/// names, which the engine refuses and records, as for any function not offered.
fn delegate(args: &Value, delegation: Option<&Delegation>) -> Result<Decision, String> {
    let goal = args
        .get("goal")
        .and_then(Value::as_str)
        .ok_or("`delegate` needs `goal`, a string: the child run's goal.")?;
    let reason = args.get("reason").and_then(Value::as_str).unwrap_or("");
    let mut budget = Spend::new();
    match args.get("budget") {
        None | Some(Value::Null) => {}
        Some(Value::Object(amounts)) => {
            for (name, amount) in amounts {
                let name: BudgetName = name.parse().map_err(|_| {
                    format!(
                        "`delegate`: {:?} in `budget` is not a budget name.",
                        excerpt(name)
                    )
                })?;
                let amount = amount.as_u64().ok_or_else(|| {
                    format!(
                        "`delegate`: `budget.{name}` must be a non-negative integer, not {}.",
                        excerpt(&amount.to_string())
                    )
                })?;
                budget.insert(name, amount);
            }
        }
        Some(_) => {
            return Err("`delegate`: `budget` must be an object of budget names to \
                        non-negative integers."
                .into());
        }
    }
    let planner = match args.get("planner") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => match delegation {
            Some(d) if !d.knows(name) => {
                return Err(if d.planners().is_empty() {
                    format!(
                        "`delegate` to planner {:?}: there are no named planners; leave \
                         `planner` out and the child uses this run's planner.",
                        excerpt(name)
                    )
                } else {
                    format!(
                        "`delegate` to planner {:?}: there is no such planner; name one of {} \
                         or leave `planner` out for this run's planner.",
                        excerpt(name),
                        d.planners().join(", ")
                    )
                });
            }
            _ => Some(name.clone()),
        },
        Some(_) => {
            return Err("`delegate`: `planner` must be a string, one of the names offered.".into());
        }
    };
    Ok(Decision::Delegate {
        goal: goal.to_owned(),
        budget,
        planner,
        reason: reason.into(),
    })
}

/// The correction for a call of `name`, which is no function the model was offered: the
/// functions it may call, as it was offered them.
fn unknown_function(name: &str, offered: &NameMap, delegate: bool) -> String {
    let mut names: Vec<&str> = offered.functions().collect();
    for control in ControlFunction::ALL {
        if delegate || control != ControlFunction::Delegate {
            names.push(control.name());
        }
    }
    format!(
        "There is no function `{}`; the functions offered are: {}.",
        excerpt(name),
        names.join(", ")
    )
}

/// Folds each run of two or more consecutive tool calls into one `call_tools` batch, which
/// the engine checks whole and whose read-only calls it runs concurrently; the batch's
/// reason is the first call's. Other decisions keep their place.
fn batch_calls(decisions: Vec<Decision>) -> Vec<Decision> {
    fn flush(out: &mut Vec<Decision>, calls: &mut Vec<(Arc<str>, Arc<Value>, Arc<str>)>) {
        let mut drained = calls.drain(..);
        match (drained.next(), drained.len()) {
            (None, _) => {}
            (Some((tool, input, reason)), 0) => out.push(Decision::call_tool(tool, input, reason)),
            (Some((tool, input, reason)), _) => {
                let rest = drained.map(|(tool, input, _)| ProposedCall::new(tool, input, ""));
                let first = ProposedCall::new(tool, input, "");
                out.push(Decision::call_tools(
                    std::iter::once(first).chain(rest),
                    reason,
                ));
            }
        }
    }
    let mut out = Vec::with_capacity(decisions.len());
    let mut calls = Vec::new();
    for decision in decisions {
        match decision {
            Decision::CallTool {
                tool,
                input,
                reason,
            } => calls.push((tool, input, reason)),
            other => {
                flush(&mut out, &mut calls);
                out.push(other);
            }
        }
    }
    flush(&mut out, &mut calls);
    out
}

/// The nesting depth of `value`, without recursion.
fn depth(value: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    max
}

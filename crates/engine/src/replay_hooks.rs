//! Replay's hooks: one stand-in per hook the recorded run names, with its identity, that
//! answers what the ledger recorded of it (a verdict other than allow, by run, step, point
//! and call) and allows everywhere else — so a replay reaches the recorded refusals and
//! narrowings without running any hook again.

use std::collections::HashMap;
use std::sync::Arc;

use rein_ledger::{EntryKind, HookOutcome, HookPoint};
use rein_policy::HookRef;
use rein_run::{Digest, RunId, ToolName};

use crate::hook::{Hook, HookError, HookPayload, HookSpec, HookVerdict, Narrowing};
use crate::replay_serve::LedgerTree;

/// Where a verdict was given: run, step, point, the call (at the tool points), the hook.
type Key = (
    RunId,
    u32,
    HookPoint,
    Option<ToolName>,
    Option<Digest>,
    String,
);

/// A hook that serves the verdicts recorded of the hook it stands in for.
struct RecordedHook {
    name: String,
    verdicts: Arc<HashMap<Key, HookVerdict>>,
}

impl Hook for RecordedHook {
    async fn check(&self, payload: &HookPayload) -> Result<HookVerdict, HookError> {
        let key = (
            payload.run.clone(),
            payload.step,
            payload.point,
            payload.tool.clone(),
            payload.input.as_deref().map(Digest::of_json),
            self.name.clone(),
        );
        Ok(self
            .verdicts
            .get(&key)
            .cloned()
            .unwrap_or(HookVerdict::Allow))
    }
}

/// Stand-ins for `hooks` (a recorded policy's), in order, serving what `tree` records.
pub(crate) fn recorded_hooks(tree: &LedgerTree, hooks: &[HookRef]) -> Vec<HookSpec> {
    let mut verdicts = HashMap::new();
    let mut stack = vec![tree];
    while let Some(node) = stack.pop() {
        stack.extend(node.children.iter());
        let run = node.ledger.run_id();
        for entry in node.ledger.entries() {
            let EntryKind::HookVerdicts {
                step,
                point,
                tool,
                input_hash,
                rulings,
            } = entry.event()
            else {
                continue;
            };
            for ruling in rulings {
                let reason = ruling.reason.clone();
                let verdict = match &ruling.outcome {
                    HookOutcome::RequireApproval => {
                        HookVerdict::Narrow(Narrowing::require_approval(reason))
                    }
                    HookOutcome::Budget { name, limit } => {
                        HookVerdict::Narrow(Narrowing::budget(name.clone(), *limit, reason))
                    }
                    _ => HookVerdict::deny(reason),
                };
                let key = (
                    run.clone(),
                    *step,
                    *point,
                    tool.clone(),
                    *input_hash,
                    ruling.hook.clone(),
                );
                verdicts.insert(key, verdict);
            }
        }
    }
    let verdicts = Arc::new(verdicts);
    let refusing = HookPoint::ALL.into_iter().filter(|p| p.may_refuse());
    let points: Vec<HookPoint> = refusing.collect();
    hooks
        .iter()
        .map(|id| {
            let hook = RecordedHook {
                name: id.name.clone(),
                verdicts: Arc::clone(&verdicts),
            };
            let spec = HookSpec::new(id.name.clone(), points.iter().copied(), hook);
            match id.command {
                Some(command) => spec.command(command, id.script),
                None => spec,
            }
        })
        .collect()
}

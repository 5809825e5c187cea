//! The gate's rule for hooks: what the verdicts recorded at a point do, combined with the
//! run's policy. Every part of the answer can only refuse more (DESIGN §7: hooks only narrow).

use rein_ledger::{HookOutcome, HookPoint, HookRuling};
use rein_run::BudgetName;

use super::Gate;
use crate::rejection::Rejection;

/// What the hooks' verdicts at one point do to the run.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct HookRuled {
    /// The refusal, when a hook denied (the first deny, in the hooks' order).
    pub(crate) denied: Option<Rejection>,
    /// A hook asked for approval of this call (only at `before_tool`).
    pub(crate) approval: bool,
    /// The budgets whose limits fall, each to the lowest a hook asked for, and only where
    /// that is below the run's limit.
    pub(crate) budgets: Vec<(BudgetName, u64)>,
}

impl Gate<'_> {
    /// What `rulings` (the verdicts other than allow the hooks at `point` gave, in their
    /// order) do: nothing at a point that only observes; elsewhere the first deny refuses,
    /// an approval asked for where nothing can be approved (any point but `before_tool`)
    /// refuses too, and a budget limit is taken as the lower of the hook's and the run's.
    pub(crate) fn hooks(&self, point: HookPoint, rulings: &[HookRuling]) -> HookRuled {
        let mut ruled = HookRuled::default();
        if !point.may_refuse() {
            return ruled;
        }
        for ruling in rulings {
            match &ruling.outcome {
                HookOutcome::RequireApproval if point == HookPoint::BeforeTool => {
                    ruled.approval = true;
                }
                HookOutcome::Budget { name, limit } => {
                    let below_run = self.proj.budget().limit(name).is_none_or(|l| *limit < l);
                    match ruled.budgets.iter_mut().find(|(n, _)| n == name) {
                        Some((_, lowest)) => *lowest = (*lowest).min(*limit),
                        None if below_run => ruled.budgets.push((name.clone(), *limit)),
                        None => {}
                    }
                }
                // A deny, an approval where none can be given, or an outcome this engine
                // does not know: refused (fail closed).
                other => {
                    if ruled.denied.is_none() {
                        let reason = match other {
                            HookOutcome::Deny => ruling.reason.clone(),
                            _ => format!(
                                "it asked for approval at {point}, where nothing can be \
                                 approved ({})",
                                ruling.reason
                            ),
                        };
                        ruled.denied = Some(Rejection::HookDenied {
                            hook: ruling.hook.clone(),
                            point,
                            reason,
                        });
                    }
                }
            }
        }
        ruled
    }
}

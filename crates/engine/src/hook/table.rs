//! The hooks of an engine by point: which hooks a point asks, and whether they all answer at
//! once, worked out once when the engine is built, so that a point looks only at its own
//! hooks (a run meets some seventy points, each asking every hook registered there).

use rein_run::ToolName;

use super::{HookPoint, HookSpec};

/// How many points a table knows: one slot for each of [`HookPoint::ALL`].
const SLOTS: usize = HookPoint::ALL.len();

/// An engine's hooks, in registration order, and the same hooks split by point.
#[derive(Debug, Default)]
pub(crate) struct HookTable {
    /// Every hook, in the order registered.
    all: Box<[HookSpec]>,
    /// The hooks of each point (its slot).
    at: [PointHooks; SLOTS],
    /// A point this engine does not know: no hook is asked there.
    none: PointHooks,
}

/// The hooks asked at one point, and what is known of them all.
#[derive(Debug, Default)]
pub(crate) struct PointHooks {
    /// The hooks, in the order registered.
    hooks: Box<[HookSpec]>,
    /// Whether every one answers without a future (`HookSpec::from_check`).
    now: bool,
    /// Whether one is asked about some tools only (the others are asked about every tool,
    /// and no tool name is looked at for them).
    by_tool: bool,
}

impl HookTable {
    /// The table of `hooks`, in the order they were registered.
    pub(crate) fn new(hooks: Vec<HookSpec>) -> Self {
        let mut table = Self {
            all: hooks.into_boxed_slice(),
            ..Self::default()
        };
        for (slot, point) in HookPoint::ALL.into_iter().enumerate() {
            let hooks: Box<[HookSpec]> = table
                .all
                .iter()
                .filter(|h| h.points().contains(&point))
                .cloned()
                .collect();
            table.at[slot] = PointHooks {
                now: hooks.iter().all(|h| h.hook().answers_now()),
                by_tool: hooks.iter().any(|h| h.tools.is_some()),
                hooks,
            };
        }
        table
    }

    /// Every hook, in the order registered.
    pub(crate) fn all(&self) -> &[HookSpec] {
        &self.all
    }

    /// The hooks of `point`.
    #[inline]
    pub(crate) fn at(&self, point: HookPoint) -> &PointHooks {
        slot(point).map_or(&self.none, |slot| &self.at[slot])
    }

    /// Whether any hook is asked at `point` (about `tool`, at the tool points).
    #[inline]
    pub(crate) fn any(&self, point: HookPoint, tool: Option<&ToolName>) -> bool {
        let at = self.at(point);
        // Asked at every point it names, a hook is asked here unless about some tools only.
        if at.by_tool {
            at.asked(tool).next().is_some()
        } else {
            !at.hooks.is_empty()
        }
    }
}

impl PointHooks {
    /// The hooks asked about `tool` (at the tool points), in the order registered.
    pub(crate) fn asked<'a>(
        &'a self,
        tool: Option<&'a ToolName>,
    ) -> impl Iterator<Item = &'a HookSpec> + 'a {
        // A tool's name is read only when a hook here is asked about some tools only.
        let tool = tool.filter(|_| self.by_tool);
        self.hooks
            .iter()
            .filter(move |h| tool.is_none_or(|tool| h.about(tool)))
    }

    /// Whether every hook asked about `tool` answers without a future.
    #[inline]
    pub(crate) fn answer_now(&self, tool: Option<&ToolName>) -> bool {
        self.now || (self.by_tool && self.asked_answer_now(tool))
    }

    /// Whether every hook asked about `tool` answers without a future, where one that
    /// needs a future is asked about some tools only (it may not be asked about this one).
    fn asked_answer_now(&self, tool: Option<&ToolName>) -> bool {
        self.asked(tool).all(|h| h.hook().answers_now())
    }
}

/// `point`'s place in a table (its place in [`HookPoint::ALL`]); `None` for a point this
/// engine does not know (no hook is asked there).
const fn slot(point: HookPoint) -> Option<usize> {
    Some(match point {
        HookPoint::RunStart => 0,
        HookPoint::BeforeModel => 1,
        HookPoint::AfterModel => 2,
        HookPoint::BeforeTool => 3,
        HookPoint::AfterTool => 4,
        HookPoint::ChildStart => 5,
        HookPoint::ChildEnd => 6,
        HookPoint::Pause => 7,
        HookPoint::RunEnd => 8,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::HookVerdict;

    #[test]
    fn each_point_has_its_own_slot_in_the_order_of_all() {
        for (i, point) in HookPoint::ALL.into_iter().enumerate() {
            assert_eq!(slot(point), Some(i), "{point}");
        }
    }

    #[test]
    fn a_point_asks_its_hooks_in_registration_order_and_only_for_matching_tools() {
        let check = |name: &str, points: &[HookPoint]| {
            HookSpec::from_check(name, points.to_vec(), |_| HookVerdict::Allow)
        };
        let table = HookTable::new(vec![
            check("a", &[HookPoint::BeforeTool, HookPoint::RunEnd]),
            check("b", &[HookPoint::BeforeTool]).tools("fs.*".parse().expect("a glob")),
            check("c", &[HookPoint::RunEnd, HookPoint::BeforeTool]),
        ]);
        let names = |point, tool: Option<&ToolName>| -> Vec<String> {
            table
                .at(point)
                .asked(tool)
                .map(|h| h.id().name.clone())
                .collect()
        };
        let fs: ToolName = "fs.read".parse().expect("a name");
        let shell: ToolName = "shell".parse().expect("a name");
        assert_eq!(names(HookPoint::BeforeTool, Some(&fs)), ["a", "b", "c"]);
        assert_eq!(names(HookPoint::BeforeTool, Some(&shell)), ["a", "c"]);
        assert_eq!(names(HookPoint::RunEnd, None), ["a", "c"]);
        assert!(!table.any(HookPoint::AfterTool, Some(&fs)));
        assert!(table.at(HookPoint::BeforeTool).answer_now(Some(&fs)));
        assert_eq!(table.all().len(), 3);
    }
}

//! MCP tool hints → rein `Annotations`, and the operator's overrides (narrow-only by default).

use serde::{Deserialize, Serialize};

use rein_tool::{Annotations, RiskLevel};

/// The four MCP hints of a tool, each as the server sent it (`None`: not sent).
///
/// MCP's defaults for a missing hint are the cautious ones: not read-only, destructive, not
/// idempotent, open world. [`Hints::annotations`] applies them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    /// `readOnlyHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint` (meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `idempotentHint` (meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// `openWorldHint`: whether the tool reaches beyond a closed domain (the web, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Hints {
    /// The hints with MCP's defaults filled in: `(read_only, destructive, idempotent,
    /// open_world)`.
    #[must_use]
    pub fn resolved(&self) -> (bool, bool, bool, bool) {
        let read_only = self.read_only.unwrap_or(false);
        let destructive = !read_only && self.destructive.unwrap_or(true);
        // Repeating a read repeats nothing, so a read-only tool is idempotent unless a hint
        // (the server's or an operator's) says it is not: a read of something that changes
        // as it is read (a queue, a cursor) must not be retried.
        let idempotent = self.idempotent.unwrap_or(read_only);
        (
            read_only,
            destructive,
            idempotent,
            self.open_world.unwrap_or(true),
        )
    }

    /// The rein annotations these hints mean.
    ///
    /// | hints | rein |
    /// |---|---|
    /// | read-only | [`Annotations::read_only`] (low risk; idempotent unless `idempotent` is `false`) |
    /// | not read-only, destructive (the default) | [`Annotations::destructive`] (high risk) |
    /// | not read-only, not destructive | [`Annotations::side_effecting`] (medium risk) |
    /// | idempotent (not read-only) | `with_idempotent(true)` |
    /// | open world (the default) | risk at least medium |
    ///
    /// ```
    /// use rein_mcp::Hints;
    /// let unannotated = Hints::default().annotations();
    /// assert!(!unannotated.is_read_only() && unannotated.is_destructive() && !unannotated.is_idempotent());
    /// ```
    #[must_use]
    pub fn annotations(&self) -> Annotations {
        let (read_only, destructive, idempotent, open_world) = self.resolved();
        let base = if read_only {
            Annotations::read_only().with_idempotent(idempotent)
        } else if destructive {
            Annotations::destructive().with_idempotent(idempotent)
        } else {
            Annotations::side_effecting().with_idempotent(idempotent)
        };
        if open_world && base.risk_level() < RiskLevel::Medium {
            base.with_risk(RiskLevel::Medium)
        } else {
            base
        }
    }
}

/// What an operator says about a server's (or one tool's) hints. By default an override
/// may only *narrow* what a tool may do: mark it not read-only, destructive, not
/// idempotent, open world. Saying the opposite (widening) is refused unless `widen` is set.
///
/// ```
/// use rein_mcp::{AnnotationOverride, Hints};
/// let server_says = Hints { read_only: Some(true), ..Hints::default() };
/// // Narrowing: treat the tool as having side effects.
/// let narrowed = AnnotationOverride { read_only: Some(false), ..AnnotationOverride::none() };
/// assert_eq!(narrowed.apply(server_says).unwrap().read_only, Some(false));
/// // Widening without saying so is refused.
/// let widened = AnnotationOverride { destructive: Some(false), ..AnnotationOverride::none() };
/// assert!(widened.apply(Hints::default()).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationOverride {
    /// Replaces `readOnlyHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Replaces `destructiveHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Replaces `idempotentHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Replaces `openWorldHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Allows this override to widen what the tool may do (the operator vouches for it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub widen: bool,
}

/// An override that would widen a tool's permissions without `widen: true`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the override sets `{field}` to {value}, which widens what the tool may do; set `\"widen\": true` beside it if that is intended"
)]
pub struct WideningOverride {
    /// The hint the override would widen.
    pub field: &'static str,
    /// The value it sets.
    pub value: bool,
}

impl AnnotationOverride {
    /// An override that changes nothing.
    #[must_use]
    pub const fn none() -> Self {
        Self {
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
            widen: false,
        }
    }

    /// Whether it changes nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::none()
    }

    /// `hints` with this override applied.
    ///
    /// # Errors
    /// [`WideningOverride`] when a field widens the resolved hints and `widen` is not set.
    pub fn apply(&self, hints: Hints) -> Result<Hints, WideningOverride> {
        let (read_only, destructive, idempotent, open_world) = hints.resolved();
        // (field, new value, current value, the value that is the wider one)
        let checks = [
            ("read_only", self.read_only, read_only, true),
            ("destructive", self.destructive, destructive, false),
            ("idempotent", self.idempotent, idempotent, true),
            ("open_world", self.open_world, open_world, false),
        ];
        if !self.widen {
            for (field, new, current, wider) in checks {
                if let Some(value) = new
                    && value != current
                    && value == wider
                {
                    return Err(WideningOverride { field, value });
                }
            }
        }
        // Saying a tool is destructive says it writes: it is no longer read-only (where a
        // destructive hint would mean nothing), unless the override says otherwise itself.
        let writes = (self.destructive == Some(true)).then_some(false);
        Ok(Hints {
            read_only: self.read_only.or(writes).or(hints.read_only),
            destructive: self.destructive.or(hints.destructive),
            idempotent: self.idempotent.or(hints.idempotent),
            open_world: self.open_world.or(hints.open_world),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(r: Option<bool>, d: Option<bool>, i: Option<bool>, o: Option<bool>) -> Hints {
        Hints {
            read_only: r,
            destructive: d,
            idempotent: i,
            open_world: o,
        }
    }

    #[test]
    fn missing_hints_take_mcp_defaults() {
        let a = Hints::default().annotations();
        assert!(!a.is_read_only());
        assert!(a.is_destructive());
        assert!(!a.is_idempotent());
        assert_eq!(a.risk_level(), RiskLevel::High);
    }

    #[test]
    fn each_hint_maps_onto_rein() {
        let read = hints(Some(true), None, None, Some(false)).annotations();
        assert!(read.is_read_only() && read.is_idempotent() && !read.is_destructive());
        assert_eq!(read.risk_level(), RiskLevel::Low);
        let open_read = hints(Some(true), None, None, None).annotations();
        assert_eq!(open_read.risk_level(), RiskLevel::Medium);
        let write = hints(Some(false), Some(false), Some(true), Some(false)).annotations();
        assert!(!write.is_read_only() && !write.is_destructive() && write.is_idempotent());
        assert_eq!(write.risk_level(), RiskLevel::Medium);
        // A destructive hint on a read-only tool means nothing (MCP says so too).
        let odd = hints(Some(true), Some(true), None, None).annotations();
        assert!(odd.is_read_only() && !odd.is_destructive());
    }

    /// `hints` with `o` applied (widening allowed), as rein annotations.
    fn overridden(hints: Hints, o: AnnotationOverride) -> Annotations {
        AnnotationOverride { widen: true, ..o }
            .apply(hints)
            .unwrap()
            .annotations()
    }

    #[test]
    fn every_override_takes_effect_both_ways() {
        let none = AnnotationOverride::none();
        let read = hints(Some(true), None, None, Some(false));
        let unannotated = Hints::default();
        let gentle = hints(Some(false), Some(false), Some(true), Some(false));

        let o = |read_only, destructive, idempotent, open_world| AnnotationOverride {
            read_only,
            destructive,
            idempotent,
            open_world,
            ..none
        };
        // read_only
        assert!(overridden(unannotated, o(Some(true), None, None, None)).is_read_only());
        assert!(!overridden(read, o(Some(false), None, None, None)).is_read_only());
        // destructive (on a read-only tool it also says the tool writes)
        assert!(!overridden(unannotated, o(None, Some(false), None, None)).is_destructive());
        assert!(overridden(gentle, o(None, Some(true), None, None)).is_destructive());
        let marked = overridden(read, o(None, Some(true), None, None));
        assert!(marked.is_destructive() && !marked.is_read_only());
        // idempotent (a read-only tool included: it is not retried)
        assert!(overridden(unannotated, o(None, None, Some(true), None)).is_idempotent());
        assert!(!overridden(gentle, o(None, None, Some(false), None)).is_idempotent());
        let once = overridden(read, o(None, None, Some(false), None));
        assert!(once.is_read_only() && !once.is_idempotent());
        // open_world
        let open_read = hints(Some(true), None, None, Some(true));
        assert_eq!(
            overridden(open_read, o(None, None, None, Some(false))).risk_level(),
            RiskLevel::Low
        );
        assert_eq!(
            overridden(read, o(None, None, None, Some(true))).risk_level(),
            RiskLevel::Medium
        );
        // Narrowing needs no `widen`.
        let narrowed = o(None, None, Some(false), None).apply(read).unwrap();
        assert!(!narrowed.annotations().is_idempotent());
    }

    #[test]
    fn overrides_narrow_freely_and_widen_only_when_marked() {
        let read = hints(Some(true), None, None, Some(false));
        for narrowing in [
            AnnotationOverride {
                read_only: Some(false),
                ..AnnotationOverride::none()
            },
            AnnotationOverride {
                open_world: Some(true),
                ..AnnotationOverride::none()
            },
        ] {
            assert!(narrowing.apply(read).is_ok(), "{narrowing:?}");
        }
        let widening = AnnotationOverride {
            read_only: Some(true),
            ..AnnotationOverride::none()
        };
        let err = widening.apply(Hints::default()).unwrap_err();
        assert_eq!(err.field, "read_only");
        assert!(err.to_string().contains("\"widen\": true"), "{err}");
        let marked = AnnotationOverride {
            widen: true,
            ..widening
        };
        assert!(
            marked
                .apply(Hints::default())
                .unwrap()
                .annotations()
                .is_read_only()
        );
        // Restating what the server said is neither.
        let same = AnnotationOverride {
            read_only: Some(true),
            ..AnnotationOverride::none()
        };
        assert!(same.apply(read).is_ok());
    }
}

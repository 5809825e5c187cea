//! `Skill`: knowledge an agent can load — a name, a description, triggers and a markdown
//! body, with a checksum that says exactly which text entered a run's context.

use serde::Serialize;
use serde_json::json;

use crate::Digest;

/// The longest skill name, in bytes.
pub const MAX_SKILL_NAME: usize = 64;

/// A skill: what a planner may read to know how to do something. A skill adds knowledge,
/// never a tool or a permission: what it describes still runs through the run's tools and
/// policies.
///
/// ```
/// use rein_run::Skill;
///
/// let skill = Skill::new(
///     "release-notes",
///     "How to write release notes",
///     vec!["release".to_owned()],
///     "# Release notes\n\nGroup changes by crate.\n",
/// )?;
/// assert!(skill.is_triggered_by("Prepare the RELEASE of 0.2"));
/// assert_eq!(skill.checksum().to_string().len(), 64);
/// # Ok::<(), rein_run::SkillError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    name: String,
    description: String,
    triggers: Vec<String>,
    body: String,
    checksum: Digest,
}

/// Why a skill is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The name is empty, too long, or holds other characters than lowercase ASCII letters,
    /// digits, `-`, `_` and `.`.
    #[error(
        "invalid skill name {0:?}: use 1 to {MAX_SKILL_NAME} lowercase letters, digits, `-`, `_` or `.`"
    )]
    InvalidName(String),
    /// The description is empty: a planner chooses skills by it.
    #[error("skill `{0}` has no description; a planner chooses skills by their description")]
    NoDescription(String),
}

impl Skill {
    /// A skill; its checksum is the SHA-256 of its canonical JSON (name, description,
    /// triggers, body).
    ///
    /// # Errors
    /// [`SkillError`] for an invalid name or an empty description.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        triggers: Vec<String>,
        body: impl Into<String>,
    ) -> Result<Self, SkillError> {
        let (name, description, body) = (name.into(), description.into(), body.into());
        let valid = !name.is_empty()
            && name.len() <= MAX_SKILL_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
        if !valid {
            return Err(SkillError::InvalidName(name));
        }
        if description.trim().is_empty() {
            return Err(SkillError::NoDescription(name));
        }
        let checksum = Digest::of_json(&json!({
            "name": name,
            "description": description,
            "triggers": triggers,
            "body": body,
        }));
        Ok(Self {
            name,
            description,
            triggers,
            body,
            checksum,
        })
    }

    /// The skill's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the skill is for (what a planner sees before loading it).
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Words or phrases that suggest the skill.
    #[must_use]
    pub fn triggers(&self) -> &[String] {
        &self.triggers
    }

    /// The skill's markdown body.
    #[must_use]
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The SHA-256 of the skill's canonical JSON.
    #[must_use]
    pub const fn checksum(&self) -> Digest {
        self.checksum
    }

    /// Whether any trigger occurs in `text` (case-insensitively).
    #[must_use]
    pub fn is_triggered_by(&self, text: &str) -> bool {
        let text = text.to_lowercase();
        self.triggers
            .iter()
            .any(|t| !t.is_empty() && text.contains(&t.to_lowercase()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptions_are_checked() {
        for bad in ["", "Upper", "with space", "../x", &"x".repeat(65)] {
            assert!(matches!(
                Skill::new(bad, "d", vec![], "b"),
                Err(SkillError::InvalidName(_))
            ));
        }
        assert!(matches!(
            Skill::new("ok", " ", vec![], "b"),
            Err(SkillError::NoDescription(_))
        ));
    }

    #[test]
    fn the_checksum_covers_every_part() {
        let base = Skill::new("s", "d", vec!["t".into()], "b").unwrap();
        let variants = [
            Skill::new("s2", "d", vec!["t".into()], "b").unwrap(),
            Skill::new("s", "d2", vec!["t".into()], "b").unwrap(),
            Skill::new("s", "d", vec![], "b").unwrap(),
            Skill::new("s", "d", vec!["t".into()], "b2").unwrap(),
        ];
        for v in variants {
            assert_ne!(v.checksum(), base.checksum());
        }
        assert_eq!(
            Skill::new("s", "d", vec!["t".into()], "b")
                .unwrap()
                .checksum(),
            base.checksum()
        );
    }
}

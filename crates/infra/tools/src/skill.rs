//! Skills from disk: a folder per skill with a `SKILL.md` (YAML front matter — `name`,
//! `description`, `triggers` — then a markdown body) and optional files; and the read-only
//! `skill.load` tool whose output (name, checksum, body) lands in the ledger.
//!
//! Skills are confined to their folder as the built-in tools are to the workspace: every
//! skill folder and `SKILL.md` is opened through a handle on the skills folder, so a
//! symbolic link that leads out of it is refused, not followed, and a `SKILL.md` with more
//! than one hard link is refused too.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use rein_run::Skill;
use rein_tool::{Annotations, Tool, ToolError, ToolOutput, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fs::{builtin_spec, parse, schema};

/// The largest `SKILL.md` read.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The most `[` and `{` the front matter of a `SKILL.md` may hold, wherever they stand.
///
/// The YAML parser's time grows with how deeply flow collections (`[…]`, `{…}`) nest times
/// the length of the text: a front matter nested a hundred thousand deep stalls it for
/// minutes. Counting every bracket, in quoted text too, bounds that nesting in one pass
/// without having to parse the YAML (quoting decides which brackets nest, and a scan that
/// guessed wrong could be led past a deep nest); a front matter — a name, a description, a
/// few triggers — holds a handful.
pub const MAX_FRONT_MATTER_BRACKETS: usize = 100;

/// Why skills could not be loaded. Every variant names the file or folder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillLoadError {
    /// The folder or a `SKILL.md` could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// `SKILL.md` does not start with a `---` front matter block closed by `---`.
    #[error(
        "{path}: no front matter; a SKILL.md starts with `---`, then `name:`, `description:` and optional `triggers:` lines, then `---`"
    )]
    NoFrontMatter {
        /// The file.
        path: PathBuf,
    },
    /// The front matter is not valid YAML, or lacks a field.
    #[error("{path}: invalid front matter: {message}")]
    FrontMatter {
        /// The file.
        path: PathBuf,
        /// What the YAML parser said (with line and column).
        message: String,
    },
    /// The skill itself is invalid (its name or description).
    #[error("{path}: {source}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: rein_run::SkillError,
    },
    /// The front matter holds more than [`MAX_FRONT_MATTER_BRACKETS`] `[` and `{`.
    #[error(
        "{path}: the front matter holds more than {MAX_FRONT_MATTER_BRACKETS} `[` and `{{` (the first one over the limit is on line {line}); a front matter is a name, a description and a short list of triggers: check for unclosed brackets, and keep long text in the body"
    )]
    TooManyBrackets {
        /// The file.
        path: PathBuf,
        /// The line of the first bracket over the limit (the file's first line is 1).
        line: usize,
    },
    /// A skill folder or `SKILL.md` is a symbolic link that leads out of the skills folder.
    #[error(
        "{path} leads out of the skills folder {root} through a symbolic link; skills are confined to their folder like the workspace: copy the skill into it instead of linking to it"
    )]
    Escapes {
        /// The folder or file, as found in the skills folder.
        path: PathBuf,
        /// The skills folder.
        root: PathBuf,
    },
    /// A `SKILL.md` has more than one hard link.
    #[error(
        "{path} is a file with {links} hard links; its content may be shared with a file outside the skills folder, so it is refused: copy it instead"
    )]
    HardLinked {
        /// The file.
        path: PathBuf,
        /// How many hard links it has.
        links: u64,
    },
    /// The file is larger than [`MAX_SKILL_BYTES`].
    #[error(
        "{path} is larger than {MAX_SKILL_BYTES} bytes; keep a skill's body short and put the rest in files beside it"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// Two skills have the same name.
    #[error("two skills are named `{name}` ({first} and {second}); skill names must be unique")]
    Duplicate {
        /// The name.
        name: String,
        /// The first folder.
        first: PathBuf,
        /// The second folder.
        second: PathBuf,
    },
}

/// The front matter of a `SKILL.md`.
#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
    #[serde(default)]
    triggers: Vec<String>,
}

/// Parses the text of a `SKILL.md` (`path` names it in errors).
///
/// ```
/// let skill = rein_tools::parse_skill(
///     "---\nname: changelog\ndescription: How to write a changelog entry\ntriggers: [changelog, release]\n---\n# Changelog\nOne line per change.\n",
///     std::path::Path::new("skills/changelog/SKILL.md"),
/// )?;
/// assert_eq!(skill.name(), "changelog");
/// assert_eq!(skill.body(), "# Changelog\nOne line per change.\n");
/// # Ok::<(), rein_tools::SkillLoadError>(())
/// ```
///
/// # Errors
/// [`SkillLoadError`] naming the file: no front matter, invalid YAML, a missing field, an
/// invalid name.
pub fn parse_skill(text: &str, path: &Path) -> Result<Skill, SkillLoadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let no_front = || SkillLoadError::NoFrontMatter {
        path: path.to_path_buf(),
    };
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(no_front)?;
    let (yaml, body) = rest
        .split_once("\n---\n")
        .or_else(|| rest.split_once("\n---\r\n"))
        .or_else(|| rest.strip_suffix("\n---").map(|y| (y, "")))
        .ok_or_else(no_front)?;
    if let Some(offset) = bracket_over_limit(yaml) {
        // The front matter starts on the file's second line, after `---`.
        #[expect(clippy::naive_bytecount, reason = "not worth a dependency")]
        let line = 2 + yaml.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        return Err(SkillLoadError::TooManyBrackets {
            path: path.to_path_buf(),
            line,
        });
    }
    let front: FrontMatter =
        serde_yaml_ng::from_str(yaml).map_err(|e| SkillLoadError::FrontMatter {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    Skill::new(front.name, front.description, front.triggers, body).map_err(|source| {
        SkillLoadError::Invalid {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// The byte offset of the first `[` or `{` of `yaml` past [`MAX_FRONT_MATTER_BRACKETS`].
fn bracket_over_limit(yaml: &str) -> Option<usize> {
    yaml.bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'[' || b == b'{')
        .nth(MAX_FRONT_MATTER_BRACKETS)
        .map(|(offset, _)| offset)
}

/// Loads every skill under `dir`: each folder with a `SKILL.md`, sorted by folder name.
/// Folders without one are skipped. `dir` itself may be reached through symbolic links;
/// nothing under it may lead out (see the module's docs).
///
/// # Errors
/// The first [`SkillLoadError`]: an unreadable folder or file, a folder or `SKILL.md` that
/// leads out of `dir` or is hard-linked, broken front matter, an invalid or duplicate name.
pub fn load_skills(dir: &Path) -> Result<Vec<Skill>, SkillLoadError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SkillLoadError::Io { path, source }
    };
    let root = Dir::open_ambient_dir(dir, ambient_authority()).map_err(io(dir))?;
    let mut names: Vec<std::ffi::OsString> = root
        .entries()
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    names.sort();
    let mut skills: Vec<(Skill, PathBuf)> = Vec::new();
    for name in names {
        let folder = dir.join(&name);
        let relative = Path::new(&name).join("SKILL.md");
        let file = dir.join(&relative);
        let escapes = |path: &Path| SkillLoadError::Escapes {
            path: path.to_path_buf(),
            root: dir.to_path_buf(),
        };
        // Resolved beneath `root`: a link out is an error here, never followed.
        match root.metadata(&name) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => continue,
            Err(e) if crate::path::is_escape(&e) => return Err(escapes(&folder)),
            Err(e) => return Err(io(&folder)(e)),
        }
        // Looked at before it is opened: opening a FIFO named SKILL.md would block.
        match root.metadata(&relative) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => continue,
            Err(e) if crate::path::is_escape(&e) => return Err(escapes(&file)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&file)(e)),
        }
        let handle = match root.open(&relative) {
            Ok(handle) => handle.into_std(),
            Err(e) if crate::path::is_escape(&e) => return Err(escapes(&file)),
            Err(e) => return Err(io(&file)(e)),
        };
        let meta = handle.metadata().map_err(io(&file))?;
        if let Some(links) = extra_links(&meta) {
            return Err(SkillLoadError::HardLinked { path: file, links });
        }
        let mut text = String::new();
        handle
            .take(MAX_SKILL_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(io(&file))?;
        if text.len() as u64 > MAX_SKILL_BYTES {
            return Err(SkillLoadError::TooLarge { path: file });
        }
        let skill = parse_skill(&text, &file)?;
        if let Some((_, first)) = skills.iter().find(|(s, _)| s.name() == skill.name()) {
            return Err(SkillLoadError::Duplicate {
                name: skill.name().to_owned(),
                first: first.clone(),
                second: folder,
            });
        }
        skills.push((skill, folder));
    }
    Ok(skills.into_iter().map(|(skill, _)| skill).collect())
}

/// How many hard links a file with more than one has.
fn extra_links(meta: &std::fs::Metadata) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        (meta.nlink() > 1).then_some(meta.nlink())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// The input of `skill.load`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadInput {
    /// The skill's name, as listed in the plan request.
    name: String,
}

/// The read-only `skill.load` tool: returns a skill's body, with its name and checksum, so
/// the ledger records which skill entered the context at which step.
#[derive(Debug, Clone)]
pub struct SkillLoad {
    spec: ToolSpec,
    skills: Arc<[Skill]>,
}

impl SkillLoad {
    /// The tool's name.
    pub const NAME: &'static str = "skill.load";

    /// `skill.load` over `skills`.
    #[must_use]
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Self {
        Self {
            spec: Self::spec(),
            skills: skills.into_iter().collect(),
        }
    }

    /// The tool's spec (read-only).
    #[must_use]
    pub fn spec() -> ToolSpec {
        builtin_spec(
            Self::NAME,
            "Loads the body of a skill (a how-to) by name; skills add knowledge, never tools or permissions",
            Annotations::read_only(),
            schema::<LoadInput>(),
        )
    }

    /// Loads skill `input["name"]`.
    ///
    /// # Errors
    /// [`ToolError::InvalidInput`] for bad input or an unknown skill (naming the known ones).
    pub fn run(&self, input: Value) -> Result<Value, ToolError> {
        let input: LoadInput = parse(Self::NAME, input).map_err(ToolError::invalid_input)?;
        let Some(skill) = self.skills.iter().find(|s| s.name() == input.name) else {
            let known: Vec<&str> = self.skills.iter().map(Skill::name).collect();
            return Err(ToolError::invalid_input(format!(
                "there is no skill `{}`; the skills are: {}",
                input.name,
                if known.is_empty() {
                    "(none)".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        };
        Ok(json!({
            "name": skill.name(),
            "checksum": format!("sha256:{}", skill.checksum()),
            "body": skill.body(),
        }))
    }
}

impl Tool for SkillLoad {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.run(input).map(ToolOutput::new)
    }
}

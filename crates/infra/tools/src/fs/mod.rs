//! The file tools: `fs.read`, `fs.list`, `fs.glob`, `fs.grep` (read-only), `fs.write`,
//! `fs.edit` (side effects) and `fs.delete` (destructive), each confined to a [`Workspace`].
//!
//! Each tool's input is a Rust type with a `schemars` schema; its annotations come from
//! [`FsOp::annotations`] and cannot be changed by a caller. [`FsTool::run`] is the typed,
//! blocking entry point; the [`Tool`] impl runs it on the blocking pool and maps an
//! [`FsError`] onto a [`ToolError`] (a refused path is invalid input).

mod read;
mod search;
mod write;

use rein_tool::{Annotations, RiskLevel, Tool, ToolError, ToolName, ToolOutput, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Workspace;

use crate::error::FsError;
pub use read::{MAX_LIST_ENTRIES, MAX_READ_BYTES};
pub use search::MAX_RESULTS;
pub use write::MAX_EDIT_BYTES;

/// One of the file tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FsOp {
    /// `fs.read`: lines of a UTF-8 text file, with a byte cap.
    Read,
    /// `fs.list`: the entries of a directory.
    List,
    /// `fs.glob`: files whose path matches a glob (`.gitignore`-aware).
    Glob,
    /// `fs.grep`: lines matching a regular expression (`.gitignore`-aware).
    Grep,
    /// `fs.write`: creates or replaces a file, atomically.
    Write,
    /// `fs.edit`: replaces one exact, unique string in a file.
    Edit,
    /// `fs.delete`: removes a file.
    Delete,
}

impl FsOp {
    /// Every file tool, read-only ones first.
    pub const ALL: [Self; 7] = [
        Self::Read,
        Self::List,
        Self::Glob,
        Self::Grep,
        Self::Write,
        Self::Edit,
        Self::Delete,
    ];

    /// The tool's name (`fs.read`, …).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Read => "fs.read",
            Self::List => "fs.list",
            Self::Glob => "fs.glob",
            Self::Grep => "fs.grep",
            Self::Write => "fs.write",
            Self::Edit => "fs.edit",
            Self::Delete => "fs.delete",
        }
    }

    /// The tool named `name`, if it is a file tool.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// What the tool does to the world, fixed by the tool: the four readers are read-only
    /// (and idempotent, low risk); `fs.write` and `fs.edit` have side effects but destroy
    /// nothing they do not report (`fs.write` is idempotent: the same content twice is the
    /// same file), and are high risk because they change the user's files, so the default
    /// approval policy asks; `fs.delete` is destructive (high risk).
    #[must_use]
    pub const fn annotations(self) -> Annotations {
        match self {
            Self::Read | Self::List | Self::Glob | Self::Grep => Annotations::read_only(),
            Self::Write => Annotations::side_effecting()
                .with_idempotent(true)
                .with_risk(RiskLevel::High),
            Self::Edit => Annotations::side_effecting().with_risk(RiskLevel::High),
            Self::Delete => Annotations::destructive(),
        }
    }

    /// The tool's description, as a planner sees it.
    #[must_use]
    pub const fn description(self) -> &'static str {
        match self {
            Self::Read => {
                "Reads lines of a UTF-8 text file in the workspace (offset/limit in lines, a byte cap; binary files are refused)"
            }
            Self::List => "Lists the entries of a directory in the workspace (default: its root)",
            Self::Glob => {
                "Lists files of the workspace whose path matches a glob such as `**/*.rs`, skipping what .gitignore and hidden files exclude"
            }
            Self::Grep => {
                "Searches files of the workspace for lines matching a regular expression (Rust regex syntax: linear time, no backreferences), skipping what .gitignore and hidden files exclude"
            }
            Self::Write => {
                "Creates or replaces a UTF-8 text file in the workspace atomically, creating missing directories"
            }
            Self::Edit => {
                "Replaces one exact string that occurs exactly once in a file of the workspace; returns a unified diff and both checksums"
            }
            Self::Delete => "Deletes a file of the workspace",
        }
    }

    /// The JSON Schema of the tool's input, derived from its input type.
    #[must_use]
    pub fn input_schema(self) -> Value {
        match self {
            Self::Read => schema::<read::ReadInput>(),
            Self::List => schema::<read::ListInput>(),
            Self::Glob => schema::<search::GlobInput>(),
            Self::Grep => schema::<search::GrepInput>(),
            Self::Write => schema::<write::WriteInput>(),
            Self::Edit => schema::<write::EditInput>(),
            Self::Delete => schema::<write::DeleteInput>(),
        }
    }

    /// The tool's spec: name, description, annotations, input schema.
    #[must_use]
    pub fn spec(self) -> ToolSpec {
        builtin_spec(
            self.name(),
            self.description(),
            self.annotations(),
            self.input_schema(),
        )
    }
}

/// A spec for a built-in tool whose name is a constant known to be valid.
pub(crate) fn builtin_spec(
    name: &'static str,
    description: &str,
    annotations: Annotations,
    schema: Value,
) -> ToolSpec {
    let name = ToolName::new(name).unwrap_or_else(|_| unreachable!("built-in name {name}"));
    ToolSpec::new(name, description)
        .with_annotations(annotations)
        .with_input_schema(schema)
}

/// The JSON Schema of `T`, without the `$schema` and `title` noise.
pub(crate) fn schema<T: JsonSchema>() -> Value {
    let mut value = schemars::schema_for!(T).to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    value
}

/// Parses a tool's input into its type.
pub(crate) fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, String> {
    serde_json::from_value(input).map_err(|e| format!("{tool}: {e}"))
}

/// A file tool bound to one workspace.
///
/// ```
/// use rein_tools::{FsOp, FsTool, Workspace};
/// use serde_json::json;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("notes.txt"), "one\ntwo\n")?;
/// let read = FsTool::new(FsOp::Read, Workspace::open(dir.path())?);
/// let out = read.run(json!({"path": "notes.txt", "offset": 2}))?;
/// assert_eq!(out["content"], "two\n");
/// assert!(read.run(json!({"path": "../etc/passwd"})).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FsTool {
    op: FsOp,
    spec: ToolSpec,
    workspace: Workspace,
}

impl FsTool {
    /// The file tool `op`, confined to `workspace`.
    #[must_use]
    pub fn new(op: FsOp, workspace: Workspace) -> Self {
        Self {
            op,
            spec: op.spec(),
            workspace,
        }
    }

    /// Which file tool this is.
    #[must_use]
    pub const fn op(&self) -> FsOp {
        self.op
    }

    /// Runs the tool on `input`, blocking the calling thread.
    ///
    /// # Errors
    /// The [`FsError`] that says what was refused or failed.
    pub fn run(&self, input: Value) -> Result<Value, FsError> {
        let ws = &self.workspace;
        let name = self.op.name();
        match self.op {
            FsOp::Read => read::read(ws, &arg(name, input)?),
            FsOp::List => read::list(ws, &arg(name, input)?),
            FsOp::Glob => search::glob(ws, &arg(name, input)?),
            FsOp::Grep => search::grep(ws, &arg(name, input)?),
            FsOp::Write => write::write(ws, &arg(name, input)?),
            FsOp::Edit => write::edit(ws, &arg(name, input)?),
            FsOp::Delete => write::delete(ws, &arg(name, input)?),
        }
    }
}

fn arg<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, FsError> {
    parse(tool, input).map_err(|message| FsError::Input { message })
}

impl Tool for FsTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let tool = self.clone();
        tokio::task::spawn_blocking(move || tool.run(input))
            .await
            .map_err(|e| ToolError::failed(format!("the file operation did not finish: {e}")))?
            .map(ToolOutput::new)
            .map_err(ToolError::from)
    }
}

/// The hex SHA-256 of `bytes`, prefixed `sha256:`.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let digest: [u8; 32] = sha2::Sha256::digest(bytes).into();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

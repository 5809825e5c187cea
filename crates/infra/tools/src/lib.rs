//! rein's built-in tools — files and search, commands (`shell.run`), skills (`skill.load`)
//! — each confined to a workspace root, and skill loading.
//!
//! Built-in tools are ordinary [`rein_tool::Tool`]s behind the same port and policies as
//! any other; their annotations are fixed by the tool (see [`FsOp::annotations`]) and
//! confinement to the [`Workspace`] is part of each tool, not of the caller.
//!
//! ```
//! use rein_tools::{FsOp, FsTool, Workspace};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let ws = Workspace::open(dir.path())?;
//! let write = FsTool::new(FsOp::Write, ws.clone());
//! write.run(json!({"path": "src/lib.rs", "content": "fn main() {}\n"}))?;
//! let grep = FsTool::new(FsOp::Grep, ws);
//! let out = grep.run(json!({"pattern": "fn \\w+"}))?;
//! assert_eq!(out["matches"][0]["path"], "src/lib.rs");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod fs;
mod http;
mod path;
pub mod shell;
mod skill;
mod workspace;

pub use error::FsError;
pub use fs::{FsOp, FsTool, MAX_EDIT_BYTES, MAX_LIST_ENTRIES, MAX_READ_BYTES, MAX_RESULTS};
pub use http::{HttpConfig, HttpError, HttpFetch};
pub use path::{MAX_NAME_BYTES, MAX_PATH_BYTES, PathError, check_relative_path};
pub use skill::{
    MAX_FRONT_MATTER_BRACKETS, MAX_SKILL_BYTES, SkillLoad, SkillLoadError, load_skills, parse_skill,
};
pub use workspace::{Workspace, WorkspaceError};

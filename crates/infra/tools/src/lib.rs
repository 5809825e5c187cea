//! rein's built-in tools — files and search, commands (`shell.run`), skills (`skill.load`)
//! — each confined to a workspace root, and skill loading.
//!
//! The file tools, search and skills are always built. `http.fetch` is behind the `http`
//! feature and `shell.run` (with its guard, the `shell` module) behind `shell`; both are default
//! features, and the facade `rein` turns them on as `tools-http` and `tools-shell`.
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

#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod fs;
#[cfg(feature = "http")]
mod http;
mod path;
#[cfg(feature = "shell")]
#[cfg_attr(docsrs, doc(cfg(feature = "shell")))]
pub mod shell;
mod skill;
mod workspace;

pub use error::FsError;
pub use fs::{FsOp, FsTool, MAX_EDIT_BYTES, MAX_LIST_ENTRIES, MAX_READ_BYTES, MAX_RESULTS};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use http::{HttpConfig, HttpError, HttpFetch};
pub use path::{MAX_NAME_BYTES, MAX_PATH_BYTES, PathError, check_relative_path};
pub use skill::{
    MAX_FRONT_MATTER_BRACKETS, MAX_SKILL_BYTES, SkillLoad, SkillLoadError, load_skills, parse_skill,
};
pub use workspace::{Workspace, WorkspaceError};

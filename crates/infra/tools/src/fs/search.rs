//! `fs.glob` and `fs.grep`: ripgrep's walker (`ignore`) and searcher (`grep-searcher`,
//! `grep-regex`), with every file opened through the workspace handle.
//!
//! The walker lists names under the workspace's canonical root and never follows symbolic
//! links; each file is then opened through the confined directory handle, so content is
//! only ever read from inside the workspace, even if the tree changes during the walk.

use std::path::{Path, PathBuf};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::read::dot;
use crate::Workspace;
use crate::error::FsError;
use crate::workspace::single_link;

/// The most results `fs.glob` and `fs.grep` return in one call.
pub const MAX_RESULTS: usize = 5000;

/// The longest line text `fs.grep` returns; longer lines are cut (at a character boundary).
const MAX_LINE_CHARS: usize = 500;

/// The largest compiled regular expression (bytes): a pattern beyond it is refused.
const REGEX_SIZE_LIMIT: usize = 8 * 1024 * 1024;

/// The input of `fs.glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobInput {
    /// A glob over paths relative to `path`, such as `**/*.rs` or `src/*.toml`.
    pattern: String,
    /// The directory to search, relative to the workspace (default: the workspace).
    #[serde(default = "dot")]
    path: String,
    /// The most paths to return.
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 5000))]
    max_results: usize,
}

/// The input of `fs.grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepInput {
    /// A regular expression (Rust `regex` syntax: runs in linear time; no look-around or
    /// backreferences).
    pattern: String,
    /// The directory or file to search, relative to the workspace (default: the workspace).
    #[serde(default = "dot")]
    path: String,
    /// Only search files whose path matches this glob, such as `*.rs`.
    #[serde(default)]
    glob: Option<String>,
    /// Match without regard to case.
    #[serde(default)]
    case_insensitive: bool,
    /// The most matching lines to return.
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 5000))]
    max_results: usize,
}

const fn default_max() -> usize {
    200
}

/// The walk base: the canonical directory `path` names, inside the workspace.
fn base(ws: &Workspace, path: &str) -> Result<PathBuf, FsError> {
    let rel = ws.check(path)?;
    let rel = if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel
    };
    // Resolves symbolic links inside the workspace; refuses one that leads out.
    let canonical = ws
        .dir()
        .canonicalize(&rel)
        .map_err(|e| FsError::io(path, e))?;
    Ok(ws.root().join(canonical))
}

fn walker(ws: &Workspace, path: &str, glob: Option<&str>) -> Result<WalkBuilder, FsError> {
    let absolute = base(ws, path)?;
    let mut builder = WalkBuilder::new(&absolute);
    builder
        .standard_filters(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(Ord::cmp);
    if let Some(glob) = glob {
        let mut overrides = OverrideBuilder::new(&absolute);
        let pattern = |e: ignore::Error| FsError::Pattern {
            pattern: glob.to_owned(),
            message: e.to_string(),
        };
        overrides.add(glob).map_err(pattern)?;
        builder.overrides(overrides.build().map_err(pattern)?);
    }
    Ok(builder)
}

/// `entry`'s path relative to the workspace root, `/`-separated.
fn relative(ws: &Workspace, entry: &Path) -> Option<PathBuf> {
    entry.strip_prefix(ws.root()).ok().map(Path::to_path_buf)
}

pub(crate) fn glob(ws: &Workspace, input: &GlobInput) -> Result<Value, FsError> {
    let max = input.max_results.clamp(1, MAX_RESULTS);
    let builder = walker(ws, &input.path, Some(&input.pattern))?;
    let mut paths = Vec::new();
    let mut truncated = false;
    for entry in builder.build() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(rel) = relative(ws, entry.path()) else {
            continue;
        };
        if paths.len() == max {
            truncated = true;
            break;
        }
        paths.push(rel.to_string_lossy().into_owned());
    }
    Ok(json!({
        "pattern": input.pattern,
        "path": input.path,
        "paths": paths,
        "truncated": truncated,
    }))
}

pub(crate) fn grep(ws: &Workspace, input: &GrepInput) -> Result<Value, FsError> {
    let max = input.max_results.clamp(1, MAX_RESULTS);
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(&input.pattern)
        .map_err(|e| FsError::Pattern {
            pattern: input.pattern.clone(),
            message: e.to_string(),
        })?;
    let builder = walker(ws, &input.path, input.glob.as_deref())?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut matches = Vec::new();
    let mut files = 0_u64;
    let mut skipped = Vec::new();
    let mut truncated = false;
    'walk: for entry in builder.build() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(rel) = relative(ws, entry.path()) else {
            continue;
        };
        let shown = rel.to_string_lossy().into_owned();
        // Opened through the confined handle: content only ever comes from inside.
        let file = match ws.dir().open(&rel) {
            Ok(file) => file.into_std(),
            Err(_) => {
                skipped.push(shown);
                continue;
            }
        };
        match file.metadata() {
            Ok(meta) if meta.is_file() && single_link(&shown, &meta).is_ok() => {}
            _ => {
                skipped.push(shown);
                continue;
            }
        }
        files += 1;
        let mut full = false;
        let sink = Lossy(|line, text: &str| {
            if matches.len() == max {
                full = true;
                return Ok(false);
            }
            let text = text.trim_end_matches(['\n', '\r']);
            let text: String = text.chars().take(MAX_LINE_CHARS).collect();
            matches.push(json!({"path": shown, "line": line, "text": text}));
            Ok(true)
        });
        if searcher.search_file(&matcher, &file, sink).is_err() {
            skipped.push(rel.to_string_lossy().into_owned());
        }
        if full {
            truncated = true;
            break 'walk;
        }
    }
    Ok(json!({
        "pattern": input.pattern,
        "path": input.path,
        "matches": matches,
        "files_searched": files,
        "skipped": skipped,
        "truncated": truncated,
    }))
}

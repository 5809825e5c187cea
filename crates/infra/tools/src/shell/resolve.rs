//! Which file a command's program is: an allow entry names a program on the search path
//! (rein's `PATH`, the workspace's folders and relative entries excluded), never a file
//! the agent can write; a program given by path must be that same file.
//!
//! A file is identified by its folder, symbolic links resolved, and its own name kept:
//! `/bin/cat` is `/usr/bin/cat` where `/bin` links to `/usr/bin`, while `/bin/cat` and
//! `/bin/wget` stay two programs where both link to one multi-call binary.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Argv, ShellGuard, ShellRejection};
use crate::shell::launcher::is_launcher;

impl ShellGuard {
    /// The file `argv`'s program names, once the word-level checks of
    /// [`check`](Self::check) have passed: a bare name is looked up on the search path
    /// (rein's `PATH` without relative entries and without folders inside `workspace`), a
    /// path is taken from `cwd`. Running the returned path runs what was checked.
    ///
    /// With an allow list, a program given by path must be the allowed program of its
    /// name on the search path (`tools/cat` is not `cat`); a denied program is refused
    /// under any path or link name; a path whose file is really a launcher is refused
    /// unless its name is allowed as one.
    ///
    /// # Errors
    /// [`ShellRejection::NotFound`], [`ShellRejection::Shadowed`],
    /// [`ShellRejection::Denied`] or [`ShellRejection::Launcher`].
    pub fn resolve(
        &self,
        argv: &Argv,
        cwd: &Path,
        workspace: &Path,
    ) -> Result<PathBuf, ShellRejection> {
        let written = &argv.words()[0];
        let name = argv.program();
        let dirs = search_path(std::env::var_os("PATH"), workspace);
        let not_found = || ShellRejection::NotFound {
            program: written.clone(),
        };
        let on_path = find_on(name, &dirs);
        let resolved = if written.contains('/') {
            identity(&cwd.join(written)).ok_or_else(not_found)?
        } else {
            on_path.clone().ok_or_else(not_found)?
        };
        let from_path = on_path.as_ref() == Some(&resolved);
        if self.has_allow_list() {
            // The word-level check passed, so `name` is allowed; it must be that program.
            match on_path {
                Some(allowed) if allowed == resolved => {}
                Some(allowed) => {
                    return Err(ShellRejection::Shadowed {
                        program: written.clone(),
                        name: name.to_owned(),
                        resolved,
                        allowed,
                    });
                }
                None => return Err(not_found()),
            }
        }
        let real = std::fs::canonicalize(&resolved).ok();
        for denied in self.denied() {
            // A denied program reached through a link of another name is still denied;
            // only a program whose real file has its own name counts (a multi-call binary
            // would otherwise deny all its names).
            let target = find_on(denied, &dirs).and_then(|p| std::fs::canonicalize(p).ok());
            if let (Some(target), Some(real)) = (target, &real)
                && target == *real
                && target
                    .file_name()
                    .is_some_and(|n| n.eq_ignore_ascii_case(denied))
            {
                return Err(ShellRejection::Denied {
                    program: name.to_owned(),
                });
            }
        }
        if written.contains('/')
            && !self.allows_launcher(name)
            && let Some(real_name) = real.as_deref().and_then(Path::file_name)
            && !from_path
            && is_launcher(&real_name.to_string_lossy())
        {
            // `./x` linking to an interpreter is that interpreter.
            return Err(ShellRejection::Launcher {
                program: name.to_owned(),
            });
        }
        Ok(resolved)
    }
}

/// The folders a bare program name is looked up in: `path`'s absolute entries outside
/// `workspace` (a relative entry would be relative to the command's folder, inside it).
pub(crate) fn search_path(path: Option<OsString>, workspace: &Path) -> Vec<PathBuf> {
    let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let Some(path) = path else {
        return Vec::new();
    };
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .filter(|dir| !dir.starts_with(&workspace))
        .collect()
}

/// The first executable file named `name` in `dirs`, as its [`identity`].
pub(crate) fn find_on(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().find_map(|dir| identity(&dir.join(name)))
}

/// `path`'s folder with its links resolved, joined with its own name, if `path` is an
/// executable regular file (links followed).
fn identity(path: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || !executable(&meta) {
        return None;
    }
    let name = path.file_name()?;
    let folder = std::fs::canonicalize(path.parent()?).ok()?;
    Some(folder.join(name))
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_path_leaves_out_relative_entries_and_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("bin");
        for folder in [ws.join("bin"), outside.clone()] {
            std::fs::create_dir_all(folder).unwrap();
        }
        let path = std::env::join_paths([
            PathBuf::from("tools"),
            PathBuf::from("."),
            ws.join("bin"),
            ws.clone(),
            outside.clone(),
        ])
        .unwrap();
        assert_eq!(
            search_path(Some(path), &ws),
            [outside.canonicalize().unwrap()]
        );
    }
}

//! A workspace next to an "outside" directory, with links that try to leave it.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_tools::{FsError, FsOp, FsTool, Workspace};
use serde_json::Value;

/// The content of every file outside the workspace.
pub const SECRET: &str = "secret";

/// A temp dir holding `ws/` (the workspace) and `outside/`.
#[derive(Debug)]
pub struct Fixture {
    pub tmp: tempfile::TempDir,
    pub ws: Workspace,
}

impl Fixture {
    /// The workspace root.
    pub fn root(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    /// The directory outside the workspace.
    pub fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    /// Runs `op` on `input`.
    pub fn run(&self, op: FsOp, input: Value) -> Result<Value, FsError> {
        FsTool::new(op, self.ws.clone()).run(input)
    }

    /// Every file and directory outside the workspace, with file contents.
    pub fn outside_snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut out = BTreeMap::new();
        snapshot(&self.outside(), &self.outside(), &mut out);
        // The temp dir itself: nothing may appear next to `ws` and `outside`.
        for entry in std::fs::read_dir(self.tmp.path()).unwrap() {
            out.insert(PathBuf::from(entry.unwrap().file_name()), None);
        }
        out
    }
}

fn snapshot(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path.strip_prefix(base).unwrap().to_path_buf();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            out.insert(rel, None);
            snapshot(base, &path, out);
        } else {
            out.insert(rel, Some(std::fs::read(&path).unwrap()));
        }
    }
}

/// The fixture: `outside/{secret.txt, dir/secret.txt}`, and in `ws/`: `a.txt`,
/// `sub/b.txt`, links out (relative, absolute, `/proc/self/root`, `/etc`, dangling,
/// through `..`), a hard link to `outside/secret.txt`, and links that stay inside.
pub fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(outside.join("dir/secret.txt"), SECRET).unwrap();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(root.join("sub/b.txt"), "beta\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink("../outside/secret.txt", root.join("link_out_file")).unwrap();
        symlink("../outside", root.join("link_out_dir")).unwrap();
        symlink(outside.join("secret.txt"), root.join("abs_link")).unwrap();
        symlink(&outside, root.join("abs_dir")).unwrap();
        symlink("/proc/self/root", root.join("proc_root")).unwrap();
        symlink("/etc", root.join("etc_link")).unwrap();
        symlink("../outside/nothing.txt", root.join("dangling_out")).unwrap();
        symlink("../..", root.join("sub/upup")).unwrap();
        symlink("..", root.join("sub/up")).unwrap();
        symlink("a.txt", root.join("inside_link")).unwrap();
        std::fs::hard_link(outside.join("secret.txt"), root.join("hard")).unwrap();
    }
    let ws = Workspace::open(&root).unwrap();
    Fixture { tmp, ws }
}

//! File helpers shared by the filesystem stores: refusing foreign files, atomic replacement,
//! directory fsync, unique temporary names, and writing over a torn last line.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What is at a path the store wants to open as one of its own files.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A regular file, opened; and its metadata taken through the open handle.
    File(File, Metadata),
    /// Nothing.
    Missing,
    /// Something the store never writes there: a symbolic link, a directory, a device.
    Foreign(&'static str),
}

/// Opens `path` with `options` only if it is a regular file, never following a symbolic
/// link at the final component.
///
/// The kind is checked with `lstat` before opening, and on Unix the opened file's device
/// and inode are compared with what `lstat` saw, so a link swapped in between is caught
/// too ([`Opened::Foreign`]).
pub(crate) fn open_regular(path: &Path, options: &OpenOptions) -> io::Result<Opened> {
    let before = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(e) => return Err(e),
    };
    if !before.file_type().is_file() {
        return Ok(Opened::Foreign(describe(&before)));
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(e) => return Err(e),
    };
    let after = file.metadata()?;
    if !after.file_type().is_file() || !same_file(&before, &after) {
        return Ok(Opened::Foreign(
            "a file that was replaced while it was opened",
        ));
    }
    Ok(Opened::File(file, after))
}

/// Checks that `dir` is a real directory (not a symbolic link to one).
///
/// Returns `Ok(None)` when it is, `Ok(Some(what))` when something else is there, and
/// `Err(NotFound)` when nothing is.
pub(crate) fn check_dir(dir: &Path) -> io::Result<Option<&'static str>> {
    let meta = fs::symlink_metadata(dir)?;
    Ok((!meta.file_type().is_dir()).then(|| describe(&meta)))
}

/// Creates `dir` if it is missing, then checks it with [`check_dir`]. Returns whether it
/// was created. (One `lstat` when it exists: the common case costs no `mkdir`.)
pub(crate) fn ensure_dir(dir: &Path) -> io::Result<Result<bool, &'static str>> {
    match check_dir(dir) {
        Ok(None) => return Ok(Ok(false)),
        Ok(Some(found)) => return Ok(Err(found)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let created = match fs::create_dir(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(e),
    };
    Ok(match check_dir(dir)? {
        None => Ok(created),
        Some(found) => Err(found),
    })
}

/// Reads at most `limit` bytes of `file` (its length as stat reported, usually).
pub(crate) fn read_up_to(file: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let capacity = usize::try_from(limit.min(64 * 1024 * 1024)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether a temporary file is forced to disk before it is moved into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sync {
    /// `fdatasync` it: after a crash the moved file is whole, never empty or partial (its
    /// data and the size needed to read it back are on disk; timestamps need not be).
    Data,
    /// Leave it to the OS: only for content verified on every read, or a cache rebuilt
    /// from data that is synced (run snapshots).
    Relaxed,
}

/// Writes `bytes` to a new temporary file beside `target`, syncs it to disk per `sync`, and
/// returns its path. The caller renames or links it into place; on any error the temporary
/// is removed.
pub(crate) fn write_temp(target: &Path, bytes: &[u8], sync: Sync) -> io::Result<PathBuf> {
    let temp = temp_path(target);
    let written = (|| {
        // `create_new` is O_CREAT|O_EXCL: it never follows or reuses whatever is at `temp`.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        match sync {
            Sync::Data => file.sync_data(),
            Sync::Relaxed => Ok(()),
        }
    })();
    match written {
        Ok(()) => Ok(temp),
        Err(e) => {
            remove_quietly(&temp);
            Err(e)
        }
    }
}

/// Replaces `target` with `bytes` atomically: temp file, fsync (per `sync`), rename. Readers
/// see the old content or the new, never a mix. Does not sync the directory (see
/// [`sync_dir`]).
pub(crate) fn replace(target: &Path, bytes: &[u8], sync: Sync) -> io::Result<()> {
    let temp = write_temp(target, bytes, sync)?;
    fs::rename(&temp, target).inspect_err(|_| remove_quietly(&temp))
}

/// Puts `bytes` at `target` unless something is already there, atomically: the first
/// writer wins and later ones keep what it wrote. Returns whether this call wrote it.
///
/// Uses a hard link, which fails instead of replacing; on filesystems without hard links
/// it falls back to a rename (callers only use this for content-addressed data, where two
/// writers write the same bytes).
pub(crate) fn create_once(target: &Path, bytes: &[u8], sync: Sync) -> io::Result<bool> {
    let temp = write_temp(target, bytes, sync)?;
    let outcome = match fs::hard_link(&temp, target) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(_) => fs::rename(&temp, target).map(|()| true),
    };
    remove_quietly(&temp);
    outcome
}

/// Makes the entries of `dir` (a file just created, renamed or linked) durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the rename itself.
        let _ = dir;
        Ok(())
    }
}

/// Whether `name` is one of the temporary files [`write_temp`] creates.
#[expect(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the names are ours, always lowercase"
)]
pub(crate) fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// A fresh temporary path beside `target`: `.<file name>.<pid>.<n>.tmp`, unique across
/// the threads and processes that share the directory.
fn temp_path(target: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Removes `path`, ignoring failure: used to clean up temporaries on an error path that
/// already reports the error that matters.
fn remove_quietly(path: &Path) {
    let _ = fs::remove_file(path);
}

/// A word for what a non-regular path is, for error messages.
fn describe(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        "a file"
    } else {
        "a special file"
    }
}

/// Whether two metadata describe the same file.
#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

/// Whether two metadata describe the same file (best effort without inode numbers).
#[cfg(not(unix))]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// Writes `line` at `at`, over the torn line the file (`on_disk` bytes long) ends in, then
/// cuts what is left of the torn line (a ledger's torn tail, cut in one write with the entry
/// that follows it). The ledger's own handle appends (`O_APPEND`), so a
/// second, positioned handle does this one write. Stopped after the write, the file ends in
/// the new line and a shorter torn line, which the next open finds; stopped before, in the
/// torn line as it was: either way, a cut is never left unreported.
pub(crate) fn write_over_torn(path: &Path, at: u64, on_disk: u64, line: &[u8]) -> io::Result<()> {
    let mut file = match open_regular(path, OpenOptions::new().write(true))? {
        Opened::File(file, _) => file,
        Opened::Missing => {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "the ledger file was removed while the store had it open",
            ));
        }
        Opened::Foreign(found) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("it was replaced by {found} while the store had it open"),
            ));
        }
    };
    file.seek(SeekFrom::Start(at))?;
    file.write_all(line)?;
    let end = at + line.len() as u64;
    if end < on_disk {
        file.set_len(end)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Opened {
        open_regular(path, OpenOptions::new().read(true)).unwrap()
    }

    #[test]
    fn open_regular_tells_files_from_everything_else() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"x").unwrap();
        assert!(matches!(read(&file), Opened::File(_, meta) if meta.len() == 1));
        assert!(matches!(read(&dir.path().join("missing")), Opened::Missing));
        assert!(matches!(read(dir.path()), Opened::Foreign("a directory")));
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert!(matches!(read(&link), Opened::Foreign("a symbolic link")));
            assert_eq!(check_dir(&link).unwrap(), Some("a symbolic link"));
        }
        assert_eq!(check_dir(dir.path()).unwrap(), None);
    }

    #[test]
    fn create_once_keeps_the_first_and_replace_swaps_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        assert!(create_once(&target, b"first", Sync::Data).unwrap());
        assert!(!create_once(&target, b"second", Sync::Relaxed).unwrap());
        assert_eq!(fs::read(&target).unwrap(), b"first");
        replace(&target, b"third", Sync::Data).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"third");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["t"], "no temporary file is left behind");
    }

    #[test]
    fn temp_names_are_hidden_unique_and_recognised() {
        let target = Path::new("/store/runs/r.json");
        let (a, b) = (temp_path(target), temp_path(target));
        assert_ne!(a, b);
        assert_eq!(a.parent(), target.parent());
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(".r.json.") && is_temp(name), "{name}");
        assert!(!is_temp("r.json"));
    }

    #[test]
    fn read_up_to_stops_at_the_limit() {
        assert_eq!(read_up_to(&b"abcdef"[..], 3).unwrap(), b"abc");
        assert_eq!(read_up_to(&b"ab"[..], 3).unwrap(), b"ab");
    }
}

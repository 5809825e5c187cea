//! The filesystem run index: summaries kept while a run's files keep their stamps, made
//! again when a ledger grows or a snapshot is replaced, runs gone forgotten, a damaged
//! index rebuilt (and said why), and threads refreshing at once leaving a whole index.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use rein_run::RunId;
use rein_storage::{FsLayout, FsRunIndex};

/// A data directory with a ledger (`lines` lines) for each of `runs`.
fn data_dir(runs: &[(&str, usize)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ledgers")).unwrap();
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    for (id, lines) in runs {
        std::fs::write(ledger(dir.path(), id), "{}\n".repeat(*lines)).unwrap();
    }
    dir
}

fn ledger(root: &Path, id: &str) -> std::path::PathBuf {
    FsLayout::new(root).ledger(&id.parse().unwrap())
}

/// Refreshes the index of `root`, summarizing a run as its ledger's line count; returns
/// the summaries by id and how many were made.
fn check(root: &Path) -> (Vec<(String, usize)>, usize, Option<String>) {
    let index = FsRunIndex::new(&FsLayout::new(root));
    let made = AtomicUsize::new(0);
    let refreshed = index
        .refresh(|id: &RunId| {
            made.fetch_add(1, Ordering::Relaxed);
            std::fs::read_to_string(ledger(root, id.as_str()))
                .map_or(0, |text| text.lines().count())
        })
        .unwrap();
    let runs = refreshed
        .runs
        .iter()
        .map(|r| (r.id.to_string(), r.summary))
        .collect();
    (runs, made.into_inner(), refreshed.rebuilt)
}

#[test]
fn summaries_are_made_again_only_when_a_stamp_moves() {
    let dir = data_dir(&[("a", 2), ("b", 3)]);
    let (runs, made, rebuilt) = check(dir.path());
    assert_eq!(runs, [("a".into(), 2), ("b".into(), 3)]);
    assert_eq!((made, rebuilt.as_deref()), (2, Some("there was none")));
    assert_eq!(check(dir.path()), (runs, 0, None));

    // An append moves the ledger's stamp.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(ledger(dir.path(), "a"))
        .unwrap();
    file.write_all(b"{}\n").unwrap();
    let (runs, made, _) = check(dir.path());
    assert_eq!((runs[0].1, made), (3, 1));

    // A snapshot replaced (a new file) moves the run's stamp too; a snapshot alone is a run.
    let snapshot = FsLayout::new(dir.path()).snapshot(&"b".parse().unwrap());
    std::fs::write(&snapshot, "{}").unwrap();
    std::fs::write(
        FsLayout::new(dir.path()).snapshot(&"c".parse().unwrap()),
        "{}",
    )
    .unwrap();
    let (runs, made, _) = check(dir.path());
    assert_eq!(runs.len(), 3);
    assert_eq!(made, 2, "b and the new c");

    // A run whose files are gone is forgotten.
    std::fs::remove_file(ledger(dir.path(), "a")).unwrap();
    let (runs, made, _) = check(dir.path());
    assert_eq!(made, 0);
    assert_eq!(
        runs.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["b", "c"]
    );
    let stored = std::fs::read_to_string(FsLayout::new(dir.path()).index()).unwrap();
    assert!(!stored.contains("\"a\""), "{stored}");
}

#[test]
fn a_damaged_index_is_rebuilt_and_says_why() {
    let dir = data_dir(&[("a", 1)]);
    let path = FsLayout::new(dir.path()).index();
    for (stored, why) in [
        ("", "it was empty"),
        ("{\"rein_run_index\":7}\n", "it has format 7, not 1"),
        ("[]\n", "its first line is not an index header"),
        (
            "{\"rein_run_index\":1}\n{nope\n",
            "line 2 is not an index entry",
        ),
    ] {
        std::fs::write(&path, stored).unwrap();
        let (runs, made, rebuilt) = check(dir.path());
        assert_eq!((runs.len(), made), (1, 1));
        let rebuilt = rebuilt.unwrap();
        assert!(rebuilt.starts_with(why), "{rebuilt}");
        assert_eq!(check(dir.path()).1, 0, "rewritten whole");
    }
}

#[test]
fn forgetting_runs_drops_them_from_the_index() {
    let dir = data_dir(&[("a", 1), ("b", 1)]);
    check(dir.path());
    let index = FsRunIndex::new(&FsLayout::new(dir.path()));
    index.forget::<usize>(&["a".parse().unwrap()]).unwrap();
    let stored = std::fs::read_to_string(index.path()).unwrap();
    assert_eq!(stored.lines().count(), 2, "{stored}");
    assert!(stored.contains("\"b\"") && !stored.contains("\"a\""));
}

#[test]
fn threads_refreshing_at_once_leave_a_whole_index() {
    let runs: Vec<(String, usize)> = (0..40).map(|i| (format!("run-{i:02}"), i % 5)).collect();
    let named: Vec<(&str, usize)> = runs.iter().map(|(id, n)| (id.as_str(), *n)).collect();
    let dir = data_dir(&named);
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| {
                for _ in 0..5 {
                    std::fs::remove_file(FsLayout::new(dir.path()).index()).ok();
                    let (listed, _, _) = check(dir.path());
                    assert_eq!(listed.len(), 40);
                }
            });
        }
    });
    let (listed, made, rebuilt) = check(dir.path());
    assert_eq!(
        (made, rebuilt),
        (0, None),
        "the last index written is whole"
    );
    assert_eq!(listed, runs);
}

#[test]
fn an_index_that_cannot_be_written_loses_only_the_cache() {
    let dir = data_dir(&[("a", 2)]);
    // Something the index cannot replace: a directory in its place.
    std::fs::create_dir(FsLayout::new(dir.path()).index()).unwrap();
    let index = FsRunIndex::new(&FsLayout::new(dir.path()));
    let refreshed = index.refresh(|_| 1_usize).unwrap();
    assert_eq!(refreshed.runs.len(), 1);
    assert!(refreshed.rebuilt.unwrap().starts_with("it is a directory"));
    let unsaved = refreshed.unsaved.unwrap().to_string();
    assert!(
        unsaved.starts_with("cannot write the run index") && unsaved.contains("writable"),
        "{unsaved}"
    );
}

#[test]
fn a_kept_index_is_refreshed_by_its_stamps_without_reading_the_file() {
    let dir = data_dir(&[("a", 1), ("b", 2)]);
    let index = FsRunIndex::new(&FsLayout::new(dir.path()));
    let lines = |id: &RunId| {
        std::fs::read_to_string(ledger(dir.path(), id.as_str())).map_or(0, |t| t.lines().count())
    };
    let kept = index.refresh(lines).unwrap().runs;
    // The file is not what a kept index is refreshed from: damaging it changes nothing.
    std::fs::write(index.path(), "not an index").unwrap();
    let again = index
        .refresh_kept(kept, |_: &RunId| -> usize {
            unreachable!("nothing changed")
        })
        .unwrap();
    assert_eq!((again.reread, again.rebuilt.as_deref()), (0, None));

    // A grown ledger, a new run and a run gone are all seen by their stamps.
    std::fs::write(ledger(dir.path(), "a"), "{}\n{}\n{}\n").unwrap();
    std::fs::write(ledger(dir.path(), "c"), "{}\n").unwrap();
    std::fs::remove_file(ledger(dir.path(), "b")).unwrap();
    let moved = index.refresh_kept(again.runs, lines).unwrap();
    let runs: Vec<(String, usize)> = moved
        .runs
        .iter()
        .map(|r| (r.id.to_string(), r.summary))
        .collect();
    assert_eq!(runs, [("a".into(), 3), ("c".into(), 1)]);
    assert_eq!(moved.reread, 2);
    // Written back whole when anything changed: the next reader of the file finds it.
    assert_eq!(check(dir.path()), (runs, 0, None));
}

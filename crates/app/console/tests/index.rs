//! The runs list reads the console's run index (`console-index.jsonl`): a run whose files
//! did not change is not read again, one whose ledger or snapshot changed is; the CLI's
//! `index.jsonl` is left alone.

mod support;

use std::io::{Seek as _, SeekFrom, Write as _};

use support::{console, get, waiting_for_answer};

#[tokio::test]
async fn the_list_reads_only_runs_whose_files_changed() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let id = waiting_for_answer(dir.path(), "goal AAAA").await;
    let app = console(dir.path(), None, false).router();
    let first = get(&app, "/", None).await.body;
    assert!(first.contains("goal AAAA"), "{first}");
    assert!(dir.path().join("console-index.jsonl").is_file());
    assert!(
        !dir.path().join("index.jsonl").exists(),
        "the CLI's index is not the console's"
    );

    // The snapshot's bytes change but its stamp (length, modification time, inode) does
    // not: the listing keeps what the index holds, so it did not read the snapshot again.
    let snapshot = dir.path().join("runs").join(format!("{id}.json"));
    let modified = std::fs::metadata(&snapshot)
        .and_then(|m| m.modified())
        .expect("a modification time");
    let text = std::fs::read_to_string(&snapshot).expect("the snapshot");
    let at = text.find("goal AAAA").expect("the goal in the snapshot");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&snapshot)
        .expect("opened in place");
    file.seek(SeekFrom::Start(u64::try_from(at).expect("an offset")))
        .and_then(|_| file.write_all(b"goal BBBB"))
        .and_then(|()| file.set_modified(modified))
        .expect("rewritten in place");
    drop(file);
    let cached = get(&app, "/", None).await.body;
    assert!(cached.contains("goal AAAA"), "{cached}");

    // Once its stamp changes, the run is read again.
    let later = modified + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&snapshot)
        .and_then(|f| f.set_modified(later))
        .expect("touched");
    let fresh = get(&app, "/", None).await.body;
    assert!(fresh.contains("goal BBBB"), "{fresh}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_keeps_its_index_in_memory_and_concurrent_listings_see_every_new_run() {
    let dir = tempfile::tempdir().expect("a temp dir");
    waiting_for_answer(dir.path(), "goal one").await;
    let app = console(dir.path(), None, false).router();
    assert!(get(&app, "/", None).await.body.contains("1 run · page 1"));

    // The file is only for the next console: this one neither reads nor parses it again
    // (a damaged one stays as it is while nothing changed) and still lists every run.
    let file = dir.path().join("console-index.jsonl");
    std::fs::write(&file, "damaged").expect("written");
    let again = get(&app, "/", None).await.body;
    assert!(again.contains("goal one"), "{again}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "damaged");

    // Listings at once share the refreshes under way, and each still sees the runs that
    // were written before it was asked for.
    waiting_for_answer(dir.path(), "goal two").await;
    let listings: Vec<_> = (0..16)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { get(&app, "/", None).await.body })
        })
        .collect();
    for listing in listings {
        let body = listing.await.expect("a listing");
        assert!(
            body.contains("2 runs · page 1") && body.contains("goal two"),
            "{body}"
        );
    }
    let rewritten = std::fs::read_to_string(&file).expect("read");
    assert!(rewritten.contains("goal two"), "written back once changed");
}

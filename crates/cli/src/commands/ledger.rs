//! `rein ledger verify` and `rein ledger show`: read a ledger file straight from disk.

use std::path::Path;

use rein::RunId;
use rein::ledger::{Entry, TornTail};

use super::find_ledger;
use crate::cli::{LedgerShowArgs, LedgerVerifyArgs};
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::ledger_file::LedgerFile;
use crate::ledger_stream::StreamedLedger;
use crate::render::{describe, iso};

/// `rein ledger verify`.
pub(crate) fn verify(verify: &LedgerVerifyArgs) -> CliResult {
    let args = &verify.ledger;
    let data = DataDir::new(&args.data.data_dir)?;
    let (path, expected, data) = find_ledger(&args.target, &data)?;
    if !verify.tree {
        return verify_streaming(&path, expected.as_ref(), &data);
    }
    let file = LedgerFile::read(&path, expected.as_ref(), &data)?;
    if let Some(torn) = file.torn {
        outln!("{}", torn_note(torn));
    }
    let run = file
        .run_id(expected.as_ref())
        .map_or_else(|| "?".to_owned(), |id| id.to_string());
    match &file.verdict {
        Ok(()) => {
            let last = file.entries.last().map(Entry::hash);
            outln!(
                "ledger {}: run {run}, {} entries, hash chain intact — verified ✓",
                path.display(),
                file.entries.len()
            );
            if let Some(last) = last {
                outln!("last hash {last}");
            }
            outln!("{}", file.anchor.describe(&data));
            if verify.tree
                && let Some(id) = file.run_id(expected.as_ref())
            {
                let tree = crate::tree::read(&id, &file.entries, &data)?;
                outln!(
                    "tree of {} runs: every ledger verified, every child ending at the head its parent recorded ✓",
                    tree.size()
                );
                out!("{}", crate::tree::lines(&tree));
            }
            Ok(Exit::Ok)
        }
        Err(broken) => Err(CliError::new(
            Exit::LedgerBroken,
            format!(
                "ledger {} (run {run}) failed verification ✗: {broken}",
                path.display()
            ),
        )),
    }
}

/// `rein ledger verify` of one ledger: read and verified line by line, so a ledger of any
/// length verifies in the memory of its largest entries.
fn verify_streaming(path: &Path, expected: Option<&RunId>, data: &DataDir) -> CliResult {
    let file = StreamedLedger::read(path, expected, data)?;
    if let Some(torn) = file.torn {
        outln!("{}", torn_note(torn));
    }
    let run = file
        .run
        .as_ref()
        .map_or_else(|| "?".to_owned(), ToString::to_string);
    match &file.verdict {
        Ok(()) => {
            outln!(
                "ledger {}: run {run}, {} entries, hash chain intact — verified ✓",
                path.display(),
                file.count
            );
            if let Some(head) = file.head {
                outln!("last hash {}", head.hash);
            }
            outln!("{}", file.anchor.describe(data));
            if let (Some(link), Some(id)) = (file.follows.clone(), file.run.as_ref()) {
                let earlier = crate::conversation::check(id, link, data)?;
                outln!(
                    "conversation of {} runs: every earlier ledger verified, each ending at the head the run after it recorded ✓",
                    earlier.len() + 1
                );
                for run in earlier {
                    outln!("  {run} ✓");
                }
            }
            Ok(Exit::Ok)
        }
        Err(broken) => Err(CliError::new(
            Exit::LedgerBroken,
            format!(
                "ledger {} (run {run}) failed verification ✗: {broken}",
                path.display()
            ),
        )),
    }
}

/// The note on a torn final line.
fn torn_note(torn: TornTail) -> String {
    format!(
        "note: line {} ({} bytes) is a torn final write (the process died while writing it); it is not part of the chain and is cut when the run resumes",
        torn.line, torn.bytes
    )
}

/// `rein ledger show`.
pub(crate) fn show(args: &LedgerShowArgs) -> CliResult {
    let data = DataDir::new(&args.ledger.data.data_dir)?;
    let (path, expected, data) = find_ledger(&args.ledger.target, &data)?;
    let file = LedgerFile::read(&path, expected.as_ref(), &data)?;
    if args.json {
        let text = serde_json::to_string_pretty(&file.entries)
            .map_err(|e| CliError::new(Exit::Failed, format!("cannot print the ledger: {e}")))?;
        outln!("{text}");
    } else if !file.entries.is_empty() {
        timeline(&file.entries, &path.display().to_string());
        if let Some(torn) = file.torn {
            outln!(
                "   …  a torn final line {} ({} bytes) is not shown",
                torn.line,
                torn.bytes
            );
        }
        if file.verdict.is_ok() {
            outln!("hash chain intact — verified ✓");
        }
    }
    match &file.verdict {
        Ok(()) => Ok(Exit::Ok),
        Err(broken) => Err(CliError::new(
            Exit::LedgerBroken,
            format!("ledger {} failed verification ✗: {broken}", path.display()),
        )),
    }
}

/// Prints `entries` (not empty) as a timeline: a header naming the run and `source`, then
/// one line per entry with its time since the first.
pub(super) fn timeline(entries: &[Entry], source: &str) {
    let Some(first) = entries.first() else { return };
    let start = first.at().as_unix_millis();
    outln!(
        "run {} — {} entries — started {} — {source}",
        first.run_id(),
        entries.len(),
        iso(start),
    );
    outln!(" seq      time  state     event");
    for entry in entries {
        let offset = entry.at().as_unix_millis().saturating_sub(start);
        let time = format!("+{}.{:03}s", offset / 1000, offset % 1000);
        outln!(
            "{:>4}  {time:>8}  {:<8}  {}",
            entry.seq(),
            entry.state().as_str(),
            describe(entry.event())
        );
    }
}

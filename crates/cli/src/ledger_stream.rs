//! Verifying a ledger file as it is read, line by line, in memory that does not grow with
//! the ledger: what `rein ledger verify` does, with the verdicts and messages of reading it
//! whole ([`LedgerFile::read`]).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use rein::RunId;
use rein::ledger::{ChainVerifier, LedgerLines, TornTail};
use rein::run::LedgerHead;

use crate::datadir::DataDir;
use crate::exit::CliError;
use crate::ledger_file::{Anchor, Broken, LedgerFile};

/// A ledger file verified as it was read.
#[derive(Debug)]
pub(crate) struct StreamedLedger {
    /// The run the ledger belongs to: the one expected, else its first entry's.
    pub(crate) run: Option<RunId>,
    /// How many entries were read.
    pub(crate) count: u64,
    /// The last entry read.
    pub(crate) head: Option<LedgerHead>,
    /// A torn final line (see [`LedgerFile::torn`]).
    pub(crate) torn: Option<TornTail>,
    /// Whether the chain verifies, and reaches its run snapshot's head.
    pub(crate) verdict: Result<(), Broken>,
    /// What the ledger was checked against besides itself.
    pub(crate) anchor: Anchor,
    /// The run this one follows up on, as its `follow_up_of` entry names it.
    pub(crate) follows: Option<crate::conversation::Link>,
}

/// How much of a ledger file is read at a time.
const BUFFER: usize = 256 * 1024;

impl StreamedLedger {
    /// Reads and verifies the ledger at `path` as [`LedgerFile::read`] does, holding one
    /// line and two entries at a time.
    ///
    /// # Errors
    /// As [`LedgerFile::read`].
    pub(crate) fn read(
        path: &Path,
        expected: Option<&RunId>,
        data: &DataDir,
    ) -> Result<Self, CliError> {
        let anchor = LedgerFile::anchor(path, expected, data);
        let cannot_read = |e: std::io::Error| {
            let what = if e.kind() == std::io::ErrorKind::NotFound {
                "no such file".to_owned()
            } else {
                e.to_string()
            };
            CliError::bad_input(format!("cannot read ledger {}: {what}", path.display()))
        };
        let gone = |missing: bool| -> Option<Self> {
            let Anchor::Head(snapshot, head) = &anchor else {
                return None;
            };
            Some(Self {
                run: expected.cloned(),
                count: 0,
                head: None,
                torn: None,
                verdict: Err(Broken::Gone {
                    snapshot: snapshot.clone(),
                    head: *head,
                    missing,
                }),
                anchor: anchor.clone(),
                follows: None,
            })
        };
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return gone(true).ok_or_else(|| cannot_read(e));
            }
            Err(e) => return Err(cannot_read(e)),
        };
        let not_a_ledger = |why: String| {
            CliError::bad_input(format!(
                "{} is not a rein ledger: {why}; a ledger has one JSON entry per line, as `rein run` writes under DATA_DIR/ledgers/",
                path.display()
            ))
        };

        let mut reader = BufReader::with_capacity(BUFFER, file);
        let mut line = Vec::new();
        let mut number = 0_u64;
        let mut blank = true;
        let mut torn = None;
        let mut first_bad = None;
        let mut unreadable = None;
        let mut verifier: Option<ChainVerifier> = None;
        let mut run = expected.cloned();
        let mut follows = None;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).map_err(cannot_read)? == 0 {
                break;
            }
            blank &= line.iter().all(u8::is_ascii_whitespace);
            let Some(body) = line.strip_suffix(b"\n") else {
                torn = Some(TornTail {
                    line: number + 1,
                    bytes: line.len() as u64,
                });
                break;
            };
            number += 1;
            if unreadable.is_some() || first_bad.is_some() {
                // Past a line that is not an entry: read on only for the torn tail, and to
                // tell an empty file from one that is not a ledger.
                continue;
            }
            match LedgerLines::parse(number, body) {
                Ok(entry) => {
                    if number <= 4 && follows.is_none() {
                        follows = crate::conversation::Link::of(&entry);
                    }
                    let verifier = verifier.get_or_insert_with(|| {
                        let id = run.get_or_insert_with(|| entry.run_id().clone()).clone();
                        match &anchor {
                            Anchor::Head(_, head) => ChainVerifier::new(id).with_anchor(*head),
                            _ => ChainVerifier::new(id),
                        }
                    });
                    verifier.push(entry);
                }
                Err(e) if number == 1 => first_bad = Some(e.source.to_string()),
                Err(e) => {
                    unreadable = Some(Broken::Unreadable {
                        line: e.line,
                        reason: e.source.to_string(),
                    });
                }
            }
        }
        if blank {
            return gone(false).ok_or_else(|| not_a_ledger("it is empty".to_owned()));
        }
        if let Some(reason) = first_bad {
            return Err(not_a_ledger(format!(
                "line 1 is not a ledger entry ({reason})"
            )));
        }
        let Some(verifier) = verifier else {
            return Err(not_a_ledger(
                "it has no complete line: its only line ends without a newline (a write cut short)"
                    .to_owned(),
            ));
        };
        let verified = verifier.finish();
        let verdict = match unreadable {
            Some(broken) => Err(broken),
            None => match (verified.result, &anchor) {
                (Err(e), _) => Err(Broken::Chain(e)),
                (Ok(()), Anchor::Head(snapshot, head)) if verified.reaches != Some(true) => {
                    Err(Broken::BehindSnapshot {
                        snapshot: snapshot.clone(),
                        head: *head,
                        last: verified.head.map_or(0, |h| h.seq),
                    })
                }
                (Ok(()), _) => Ok(()),
            },
        };
        Ok(Self {
            run,
            count: verified.count,
            head: verified.head,
            torn,
            verdict,
            anchor,
            follows,
        })
    }
}

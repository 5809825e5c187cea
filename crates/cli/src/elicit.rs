//! `TerminalElicitor`: an MCP server's questions asked of the person at rein's terminal —
//! the question and the form's schema on stderr, the answer as one line on stdin (a JSON
//! object, `decline`, or an empty line to cancel).

use std::io::{BufRead as _, Read as _};
use std::sync::{Mutex, OnceLock};

use rein::tool::{ElicitAnswer, Elicitation, Elicitor};
use tokio::sync::{mpsc, oneshot};

/// The longest answer line read, in bytes; a longer one is cut, fails to parse and cancels.
const MAX_LINE: u64 = 64 * 1024;

/// Asks on stderr, reads the answer from stdin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TerminalElicitor;

/// One reader of stdin for the whole process, on a thread of its own: a read blocked on a
/// terminal nobody answers must not hold the runtime at exit, and a question that timed
/// out must not take the next question's answer. Each question queues a reply slot.
fn reader() -> &'static Mutex<mpsc::UnboundedSender<oneshot::Sender<Option<String>>>> {
    static READER: OnceLock<Mutex<mpsc::UnboundedSender<oneshot::Sender<Option<String>>>>> =
        OnceLock::new();
    READER.get_or_init(|| {
        let (tx, mut rx) = mpsc::unbounded_channel::<oneshot::Sender<Option<String>>>();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            while let Some(slot) = rx.blocking_recv() {
                let mut line = String::new();
                let read = stdin.lock().take(MAX_LINE).read_line(&mut line);
                // A slot whose question timed out is dropped: its line is consumed unanswered.
                let _ = slot.send(matches!(read, Ok(n) if n > 0).then_some(line));
            }
        });
        Mutex::new(tx)
    })
}

impl Elicitor for TerminalElicitor {
    fn elicit(&self, question: Elicitation) -> rein::mcp::BoxFuture<'_, ElicitAnswer> {
        Box::pin(async move {
            eprintln!(
                "rein: {} asks: {}\nrein: answer with one line: a JSON object matching {} — or `decline`, or an empty line to cancel",
                question.asker, question.message, question.schema
            );
            let (slot, answer) = oneshot::channel();
            let queued = reader().lock().is_ok_and(|tx| tx.send(slot).is_ok());
            if !queued {
                return ElicitAnswer::Cancel;
            }
            match answer.await.ok().flatten() {
                Some(line) => parse(line.trim()),
                None => ElicitAnswer::Cancel,
            }
        })
    }
}

/// An answer line: `decline`, a JSON object (accept), anything else (cancel).
fn parse(line: &str) -> ElicitAnswer {
    if line.eq_ignore_ascii_case("decline") {
        return ElicitAnswer::Decline;
    }
    match serde_json::from_str::<rein::Value>(line) {
        Ok(value) if value.is_object() => ElicitAnswer::Accept(value),
        _ => ElicitAnswer::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_object_a_decline_or_a_cancel() {
        assert_eq!(
            parse(r#"{"name": "Ada"}"#),
            ElicitAnswer::Accept(rein::json!({"name": "Ada"}))
        );
        assert_eq!(parse("Decline"), ElicitAnswer::Decline);
        assert_eq!(parse(""), ElicitAnswer::Cancel);
        assert_eq!(parse("[1]"), ElicitAnswer::Cancel);
    }
}

//! A model's reply on the terminal as it streams in: its prose after `  model: `, each
//! call's arguments after `  model calls NAME: `, the line ended when the call ends or a
//! progress line needs the terminal.

use rein::RunEvent;
use rein::run::ModelDelta;

/// Where the reply being shown stands.
#[derive(Debug, Default)]
pub(crate) struct LiveReply {
    /// A line of the reply is open (no newline printed after it yet).
    open: bool,
    /// The call whose arguments are being shown, by its index in the reply.
    call: Option<u32>,
}

impl LiveReply {
    /// What to print for `event`: a piece of the reply (no newline after it), the end of
    /// the reply's line when its call starts again or ends, or nothing for events that are
    /// not about the reply.
    pub(crate) fn text(&mut self, event: &RunEvent) -> Option<String> {
        match event {
            RunEvent::ModelDelta(piece) => Some(self.piece(&piece.delta)),
            RunEvent::ModelCallStarted(_) | RunEvent::ModelCallEnded(_) => {
                self.close().map(str::to_owned)
            }
            _ => None,
        }
    }

    /// What to print for `delta`, a piece of the reply.
    fn piece(&mut self, delta: &ModelDelta) -> String {
        let mut out = String::new();
        if !self.open {
            out.push_str("  model: ");
            self.open = true;
        }
        match delta {
            ModelDelta::Text(text) => {
                if self.call.take().is_some() {
                    out.push_str("\n  model: ");
                }
                out.push_str(&printable(text));
            }
            ModelDelta::ToolArguments { index, name, piece } => {
                if self.call != Some(*index) {
                    out.push_str(&format!("\n  model calls {}: ", printable(name)));
                    self.call = Some(*index);
                }
                out.push_str(&printable(piece));
            }
            // A kind of piece this version does not know: not shown.
            _ => {}
        }
        out
    }

    /// Ends the reply's open line, if one is open: what to print first.
    pub(crate) fn close(&mut self) -> Option<&'static str> {
        self.call = None;
        std::mem::take(&mut self.open).then_some("\n")
    }
}

/// `text` safe for a terminal: control characters (escape sequences a model could write)
/// dropped, line breaks indented under the reply.
fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\n    "),
            '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_shown_as_it_streams_in_one_line_per_call() {
        let mut live = LiveReply::default();
        let pieces = [
            ModelDelta::Text("Reading".into()),
            ModelDelta::Text(" first.".into()),
            ModelDelta::ToolArguments {
                index: 0,
                name: "fs_read".into(),
                piece: "{\"path\":".into(),
            },
            ModelDelta::ToolArguments {
                index: 0,
                name: "fs_read".into(),
                piece: "\"a\"}".into(),
            },
            ModelDelta::ToolArguments {
                index: 1,
                name: "fs_list".into(),
                piece: "{}".into(),
            },
        ];
        let mut shown: String = pieces.iter().map(|p| live.piece(p)).collect();
        shown.extend(live.close());
        assert_eq!(
            shown,
            "  model: Reading first.\n  model calls fs_read: {\"path\":\"a\"}\n  model calls fs_list: {}\n"
        );
        assert_eq!(live.close(), None, "closed once");
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(printable("a\u{1b}[2Jb\r\nc\td"), "a[2Jb\n    c\td");
    }
}

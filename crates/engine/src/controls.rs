//! The run handle's control messages, taken at the driver's safe points: steering notes,
//! interrupts and narrowings (`drain_controls`), and the steering notes that arrived while the
//! planner decided (`unread_steering`), recorded before the step's decision is judged.

use rein_ledger::{EntryKind, InterruptKind};
use tokio::sync::mpsc;

use crate::driver::Driver;
use crate::error::EngineError;
use crate::handle::Control;

impl Driver {
    /// Records every control message waiting (those held back first), in order.
    pub(crate) async fn drain_controls(&mut self) -> Result<(), EngineError> {
        loop {
            let Some(controls) = self.inbox.as_mut() else {
                return Ok(());
            };
            let control = if controls.held.is_empty() {
                match controls.rx.as_mut().map(mpsc::UnboundedReceiver::try_recv) {
                    Some(Ok(control)) => control,
                    None | Some(Err(_)) => return Ok(()),
                }
            } else {
                controls.held.remove(0)
            };
            match control {
                Control::Steer(note) => self.rec.record(EntryKind::Steering { note }).await?,
                Control::Interrupt if !self.interrupting => {
                    self.interrupting = true;
                    self.rec
                        .record(EntryKind::Interrupt {
                            kind: InterruptKind::Graceful,
                        })
                        .await?;
                }
                Control::Interrupt => {}
                Control::Narrow(narrowing, reply) => {
                    let narrowed = self.narrow(&narrowing).await?;
                    // A caller that stopped waiting still finds the narrowing in the ledger.
                    let _ = reply.send(narrowed);
                }
            }
        }
    }

    /// The steering notes that arrived while the planner decided, recorded (the other
    /// controls keep their place, for the next step); the last one, cut short, if any.
    pub(crate) async fn unread_steering(&mut self) -> Result<Option<String>, EngineError> {
        let Some(inbox) = self.inbox.as_mut() else {
            return Ok(None);
        };
        let Some(rx) = inbox.rx.as_mut() else {
            return Ok(None);
        };
        let mut notes = Vec::new();
        while let Ok(control) = rx.try_recv() {
            match control {
                Control::Steer(note) => notes.push(note),
                other => inbox.held.push(other),
            }
        }
        let mut last = None;
        for note in notes {
            last = Some(cut(&note, 300));
            self.rec.record(EntryKind::Steering { note }).await?;
        }
        Ok(last)
    }
}

/// `text`, cut to at most `max` bytes (at a character boundary) with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}…", &text[..at])
}

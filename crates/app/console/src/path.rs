//! A run's path through the state machine, from its ledger (the stays `rein inspect`
//! draws, read by the same `RunPath`: each state entered, why, and the tools called there),
//! drawn as SVG on the server.

use std::fmt::Write as _;

use rein::State;
use rein::ledger::{CallOutcome, Entry, RunPath};

use crate::html::{esc, one_line};

/// At most this many stays are drawn; the rest are counted.
const MAX_VISITS: usize = 120;
/// Stays per row of the drawing.
const PER_ROW: usize = 5;
const BOX_W: usize = 170;
const BOX_H: usize = 92;
const GAP_X: usize = 40;
const GAP_Y: usize = 34;

/// The path of the run whose ledger is `entries`, as an SVG element.
pub(crate) fn svg(entries: &[Entry]) -> String {
    let visits = RunPath::of(entries).stays;
    let drawn = &visits[..visits.len().min(MAX_VISITS)];
    let rows = drawn.len().div_ceil(PER_ROW).max(1);
    let width = PER_ROW * (BOX_W + GAP_X);
    let height = rows * (BOX_H + GAP_Y) + 10;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"the run's path through the state machine\" font-family=\"system-ui,sans-serif\" font-size=\"12\">"
    );
    for (i, visit) in drawn.iter().enumerate() {
        let (x, y) = at(i);
        let color = match visit.state {
            State::Done => "#d9f2df",
            State::Failed => "#f8d7da",
            _ => "#e8eef9",
        };
        let _ = write!(
            out,
            "<g><title>{}</title><rect x=\"{x}\" y=\"{y}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"8\" fill=\"{color}\" stroke=\"#5b6b8c\"/>\
<text x=\"{}\" y=\"{}\" font-weight=\"600\">{}. {}</text>",
            esc(visit.via.text()),
            x + 8,
            y + 17,
            i + 1,
            visit.state
        );
        let mut line_y = y + 34;
        if !visit.via.text().is_empty() {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{line_y}\" fill=\"#444\">{}</text>",
                x + 8,
                esc(&one_line(visit.via.text(), 24))
            );
            line_y += 16;
        }
        let shown = visit.tools.len().min(3);
        for tool in &visit.tools[..shown] {
            let name = if tool.outcome == CallOutcome::Denied {
                format!("{} (denied)", tool.tool)
            } else {
                tool.tool.clone()
            };
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{line_y}\">{} {}</text>",
                x + 8,
                if tool.ok() { "✓" } else { "✗" },
                esc(&one_line(&name, 20))
            );
            line_y += 15;
        }
        if visit.tools.len() > shown {
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" fill=\"#444\">+{} more</text>",
                x + 100,
                y + BOX_H - 6,
                visit.tools.len() - shown
            );
        }
        out.push_str("</g>");
        if i + 1 < drawn.len() {
            let (nx, ny) = at(i + 1);
            let (x1, y1, x2, y2) = if ny == y {
                (x + BOX_W, y + BOX_H / 2, nx, ny + BOX_H / 2)
            } else {
                (x + BOX_W / 2, y + BOX_H, nx + BOX_W / 2, ny)
            };
            let _ = write!(
                out,
                "<line x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" stroke=\"#5b6b8c\" stroke-width=\"1.5\"/>"
            );
        }
    }
    out.push_str("</svg>");
    if visits.len() > drawn.len() {
        let _ = write!(
            out,
            "<p>… and {} more stays (the timeline below has them all)</p>",
            visits.len() - drawn.len()
        );
    }
    out
}

/// Where stay `i` is drawn: rows left to right.
const fn at(i: usize) -> (usize, usize) {
    (
        (i % PER_ROW) * (BOX_W + GAP_X) + 5,
        (i / PER_ROW) * (BOX_H + GAP_Y) + 5,
    )
}

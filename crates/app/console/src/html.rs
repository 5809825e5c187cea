//! HTML: escaping (every value from a run, a ledger, a tool or a query goes through
//! [`esc`]), the page frame, and the one small script the pages use.

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

/// `text` escaped for HTML text and attribute values (double-quoted).
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` on one line, cut to `max` characters with an ellipsis (then escaped by the caller).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `value` as pretty JSON, cut at `max` bytes (on a character boundary).
pub(crate) fn json_text(value: &impl serde::Serialize, max: usize) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} bytes in all)", &text[..end], text.len())
}

/// A whole page: `title` (escaped here) and `body` (already HTML).
pub(crate) fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{} · rein</title><style>{STYLE}</style></head><body>\
<nav><a href=\"/\">runs</a> <a href=\"/inbox\" accesskey=\"i\">inbox</a> <a href=\"/login\">operator</a></nav>\
<main id=\"live\">{body}</main><script src=\"/static/console.js\"></script></body></html>",
        esc(title)
    ))
}

/// Headers on every response: only this server's script and forms, no framing (a page with
/// approve buttons must not be framed by another site), no referrer, no type sniffing.
pub(crate) async fn protect(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// `GET /static/console.js`: live updates of a run's page over server-sent events, and
/// keyboard shortcuts in the inbox. Plain JavaScript, no build step.
pub(crate) async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
}

const SCRIPT: &str = r#"// rein console: live run pages, keyboard-usable inbox.
(function () {
  var live = document.querySelector("[data-events]");
  if (live && window.EventSource) {
    // The number of ledger entries the page shows; every event carries the current one.
    var shown = live.getAttribute("data-entries");
    var refresh = function () {
      fetch(location.href, { headers: { "Accept": "text/html" } })
        .then(function (r) { return r.text(); })
        .then(function (text) {
          var doc = new DOMParser().parseFromString(text, "text/html");
          var fresh = doc.getElementById("live");
          if (fresh) { document.getElementById("live").replaceWith(fresh); }
        });
    };
    var source = new EventSource(live.getAttribute("data-events"));
    ["hello", "entries", "end"].forEach(function (name) {
      source.addEventListener(name, function (e) {
        // The end always refreshes: the run's snapshot may be saved after its last entry.
        if (e.data !== shown || name === "end") { shown = e.data; refresh(); }
        if (name === "end") { source.close(); }
      });
    });
  }
  document.addEventListener("keydown", function (e) {
    if (e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA") { return; }
    var items = Array.prototype.slice.call(document.querySelectorAll(".item"));
    if (!items.length) { return; }
    var at = items.indexOf(document.activeElement && document.activeElement.closest(".item"));
    if (e.key === "j") { items[Math.min(at + 1, items.length - 1)].focus(); }
    if (e.key === "k") { items[Math.max(at - 1, 0)].focus(); }
  });
})();
"#;

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}\
nav{background:#20232a;padding:.6em 1em}nav a{color:#fff;margin-right:1.2em;text-decoration:none}\
main{padding:1em;max-width:72em;margin:auto}table{border-collapse:collapse;width:100%}\
td,th{text-align:left;padding:.3em .5em;border-bottom:1px solid #ddd;vertical-align:top}\
th{font-weight:600}.child td:first-child{padding-left:2em}pre{white-space:pre-wrap;word-break:break-all;\
background:#f0f0f0;padding:.5em;max-height:30em;overflow:auto}.ok{color:#176f2c}.broken,.error{color:#b00020}\
.waiting{color:#8a5a00;font-weight:600}.item{border:1px solid #ccc;border-radius:6px;padding:.6em;margin:.8em 0;background:#fff}\
.item:focus{outline:3px solid #4a7bd0}form.inline{display:inline}input[type=text]{width:18em;max-width:100%}\
button{padding:.3em .9em}.note{background:#eef4ff;padding:.5em}svg{max-width:100%;height:auto}\
@media (max-width:40em){td,th{padding:.2em}.wide{display:none}}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            esc(r#"<script>alert("x")</script>&'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"
        );
    }

    #[test]
    fn long_text_is_cut_on_a_character() {
        assert_eq!(one_line("a\nb  c", 10), "a b c");
        assert_eq!(one_line("ééééé", 3), "éé…");
        assert!(json_text(&"é".repeat(100), 11).starts_with("\"éééé"));
    }
}

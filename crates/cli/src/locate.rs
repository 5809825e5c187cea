//! Where things are in a JSON text: JSON paths (`tools[2].behavior`), and a small scanner
//! that maps a path to its line and column, or a line and column to the innermost path.
//!
//! Only used to explain errors, so it favours clarity over speed, and it is tolerant: on a
//! text it cannot scan it simply knows less.

use std::fmt;

/// A path into a JSON document, written the way people read it: `policies.budgets.steps`,
/// `tools[0].annotations`, `policies.eligibility.allow.act["fs.write"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JsonPath(Vec<Segment>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// The document itself.
    pub(crate) const fn root() -> Self {
        Self(Vec::new())
    }

    /// This path, then key `key`.
    pub(crate) fn key(&self, key: impl Into<String>) -> Self {
        let mut path = self.clone();
        path.0.push(Segment::Key(key.into()));
        path
    }

    /// This path, then index `index`.
    pub(crate) fn index(&self, index: usize) -> Self {
        let mut path = self.clone();
        path.0.push(Segment::Index(index));
        path
    }

    /// Whether this is the document itself.
    pub(crate) const fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(the whole file)");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Key(k) if is_identifier(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => write!(f, "[{}]", serde_json::Value::from(k.as_str()))?,
            }
        }
        Ok(())
    }
}

fn is_identifier(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A line and column, both from 1 (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// The deepest nesting of arrays and objects a scenario file may have. `serde_json` refuses
/// more than 128 levels with a message about types; files are checked against this bound
/// first, in one pass that builds nothing, so a hostile file (`[[[[…`) costs neither memory
/// nor stack.
pub(crate) const MAX_DEPTH: usize = 100;

/// The byte offset of the first `[` or `{` of `text` that opens level `limit + 1`, if any.
/// Brackets inside strings do not count. One pass, no allocation, whatever the text.
pub(crate) fn first_too_deep(text: &str, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, &b) in text.as_bytes().iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(offset);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The byte offset in `text` of a line and column as `serde_json` reports them.
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let rest = &text[line_start.min(text.len())..];
    let within: usize = rest
        .chars()
        .take(column.saturating_sub(1))
        .map(char::len_utf8)
        .sum();
    line_start + within
}

/// The line and column of byte `offset` of `text`.
pub(crate) fn position_at(text: &str, offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        line,
        column: before[line_start..].chars().count() + 1,
    }
}

/// The values of a JSON text with their byte spans, as a tree: each value knows its parent
/// and its key or index there, so a value costs one small record, not a copy of its path.
#[derive(Debug)]
pub(crate) struct SpanIndex<'a> {
    text: &'a str,
    spans: Vec<Span>,
}

/// One value: where it is in its parent, and its bytes (`end` is `None` when the text
/// stopped being JSON inside it).
#[derive(Debug)]
struct Span {
    parent: Option<usize>,
    segment: Option<Segment>,
    start: usize,
    end: Option<usize>,
}

impl<'a> SpanIndex<'a> {
    /// Scans `text`; stops quietly where it stops being JSON, or nests deeper than
    /// [`MAX_DEPTH`].
    pub(crate) fn new(text: &'a str) -> Self {
        Self::until(text, usize::MAX)
    }

    /// Scans `text` as far as byte `stop`: no value that starts after it is recorded, so
    /// explaining an error early in a large file costs what comes before it. Values still
    /// open at the stop count as running to the end of the text.
    pub(crate) fn until(text: &'a str, stop: usize) -> Self {
        let mut scanner = Scanner {
            bytes: text.as_bytes(),
            pos: 0,
            stop,
            spans: Vec::new(),
        };
        let _ = scanner.value(None, None, 0);
        Self {
            text,
            spans: scanner.spans,
        }
    }

    /// Where the value at `path` starts (finished or not), or where its closest scanned
    /// ancestor starts.
    pub(crate) fn position_of(&self, path: &JsonPath) -> Option<Position> {
        let mut current = self.spans.first().map(|_| 0)?;
        for segment in &path.0 {
            let Some(child) = self.child(current, segment) else {
                break;
            };
            current = child;
        }
        Some(position_at(self.text, self.spans[current].start))
    }

    /// The innermost value whose span holds byte `offset` (the end of a span counts; a
    /// value the scan did not finish runs to the end of the text).
    pub(crate) fn path_at(&self, offset: usize) -> Option<JsonPath> {
        self.spans
            .iter()
            .enumerate()
            .map(|(i, span)| (i, span.start, span.end.unwrap_or(self.text.len())))
            .filter(|&(_, start, end)| start <= offset && offset <= end)
            .min_by_key(|&(_, start, end)| end - start)
            .map(|(i, _, _)| self.path_of(i))
    }

    /// The index of the element of the array at `path` whose value is the string `text`.
    pub(crate) fn find_string_in(&self, path: &JsonPath, text: &str) -> Option<usize> {
        let array = self.find(path)?;
        self.spans.iter().find_map(|span| {
            let Some(Segment::Index(i)) = span.segment else {
                return None;
            };
            (span.parent == Some(array)
                && serde_json::from_str::<String>(self.text.get(span.start..span.end?)?).ok()?
                    == text)
                .then_some(i)
        })
    }

    /// The path and text of the first whole number inside the value at `path` too large for
    /// 64 bits whose value is `value`: serde reads such a number as a float, and a value it
    /// buffers (a tagged enum, such as a decision) reports it at the end of the whole value.
    pub(crate) fn huge_integer_in(
        &self,
        path: &JsonPath,
        value: f64,
    ) -> Option<(JsonPath, &'a str)> {
        let outer = &self.spans[self.find(path)?];
        let (from, to) = (outer.start, outer.end?);
        self.spans.iter().enumerate().find_map(|(i, span)| {
            let end = span.end?;
            if span.start < from || end > to {
                return None;
            }
            let text = self.text.get(span.start..end)?;
            let digits = text.strip_prefix('-').unwrap_or(text);
            let huge = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && text.parse::<u64>().is_err()
                && text.parse::<i64>().is_err();
            (huge && text.parse::<f64>().ok() == Some(value)).then(|| (self.path_of(i), text))
        })
    }

    /// The text of the value at `path`, if it was scanned whole.
    pub(crate) fn text_of(&self, path: &JsonPath) -> Option<&'a str> {
        let span = &self.spans[self.find(path)?];
        self.text.get(span.start..span.end?)
    }

    /// The span at `path`, whole or not.
    fn find(&self, path: &JsonPath) -> Option<usize> {
        let mut current = self.spans.first().map(|_| 0)?;
        for segment in &path.0 {
            current = self.child(current, segment)?;
        }
        Some(current)
    }

    fn child(&self, parent: usize, segment: &Segment) -> Option<usize> {
        // Children come after their parent, in order.
        self.spans
            .iter()
            .enumerate()
            .skip(parent + 1)
            .find(|(_, span)| span.parent == Some(parent) && span.segment.as_ref() == Some(segment))
            .map(|(i, _)| i)
    }

    fn path_of(&self, mut index: usize) -> JsonPath {
        let mut segments = Vec::new();
        loop {
            let span = &self.spans[index];
            if let Some(segment) = &span.segment {
                segments.push(segment.clone());
            }
            match span.parent {
                Some(parent) => index = parent,
                None => break,
            }
        }
        segments.reverse();
        JsonPath(segments)
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// No value starting after this byte is scanned.
    stop: usize,
    spans: Vec<Span>,
}

impl Scanner<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Scans one value at nesting `depth`; recursion stops at [`MAX_DEPTH`].
    fn value(
        &mut self,
        parent: Option<usize>,
        segment: Option<Segment>,
        depth: usize,
    ) -> Option<()> {
        self.skip_ws();
        if self.pos > self.stop {
            return None;
        }
        let start = self.pos;
        let first = self.peek()?;
        let me = self.spans.len();
        self.spans.push(Span {
            parent,
            segment,
            start,
            end: None,
        });
        match first {
            b'{' | b'[' if depth >= MAX_DEPTH => return None,
            b'{' => {
                self.pos += 1;
                self.skip_ws();
                if self.peek()? == b'}' {
                    self.pos += 1;
                } else {
                    loop {
                        self.skip_ws();
                        let key_start = self.pos;
                        self.string()?;
                        let key = std::str::from_utf8(&self.bytes[key_start..self.pos]).ok()?;
                        let key: String = serde_json::from_str(key).ok()?;
                        self.skip_ws();
                        (self.peek()? == b':').then_some(())?;
                        self.pos += 1;
                        self.value(Some(me), Some(Segment::Key(key)), depth + 1)?;
                        self.skip_ws();
                        match self.peek()? {
                            b',' => self.pos += 1,
                            b'}' => {
                                self.pos += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                self.skip_ws();
                if self.peek()? == b']' {
                    self.pos += 1;
                } else {
                    let mut i = 0;
                    loop {
                        self.value(Some(me), Some(Segment::Index(i)), depth + 1)?;
                        i += 1;
                        self.skip_ws();
                        match self.peek()? {
                            b',' => self.pos += 1,
                            b']' => {
                                self.pos += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
            }
            b'"' => self.string()?,
            _ => {
                while let Some(b) = self.peek() {
                    if b.is_ascii_whitespace() || matches!(b, b',' | b']' | b'}') {
                        break;
                    }
                    self.pos += 1;
                }
                (self.pos > start).then_some(())?;
            }
        }
        self.spans[me].end = Some(self.pos);
        Some(())
    }

    fn string(&mut self) -> Option<()> {
        (self.peek()? == b'"').then_some(())?;
        self.pos += 1;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "{\n  \"a\": {\"b\": [1, \"x\", {\"c\": true}]},\n  \"fs.read\": \"é\"\n}";

    #[test]
    fn paths_read_like_javascript() {
        let path = JsonPath::root().key("tools").index(2).key("behavior");
        assert_eq!(path.to_string(), "tools[2].behavior");
        let path = JsonPath::root().key("allow").key("fs.write");
        assert_eq!(path.to_string(), "allow[\"fs.write\"]");
        assert_eq!(JsonPath::root().to_string(), "(the whole file)");
    }

    #[test]
    fn positions_of_paths_and_paths_at_positions() {
        let index = SpanIndex::new(TEXT);
        let c = JsonPath::root().key("a").key("b").index(2).key("c");
        assert_eq!(
            index.position_of(&c),
            Some(Position {
                line: 2,
                column: 29
            })
        );
        let offset = offset_of(TEXT, 2, 29);
        assert_eq!(index.path_at(offset), Some(c));
        // An unknown path falls back to its closest ancestor.
        let missing = JsonPath::root().key("a").key("zzz");
        assert_eq!(
            index.position_of(&missing),
            Some(Position { line: 2, column: 8 })
        );
        let b = JsonPath::root().key("a").key("b");
        assert_eq!(index.find_string_in(&b, "x"), Some(1));
        assert_eq!(
            index.position_of(&JsonPath::root().key("fs.read")),
            Some(Position {
                line: 3,
                column: 14
            })
        );
    }

    #[test]
    fn depth_is_measured_outside_strings_without_building_anything() {
        assert_eq!(first_too_deep("[[1]]", 2), None);
        assert_eq!(first_too_deep("[[[1]]]", 2), Some(2));
        assert_eq!(first_too_deep(r#"{"a": "[[[[\"[[["}"#, 1), None);
        let deep = "[".repeat(50_000);
        assert_eq!(first_too_deep(&deep, MAX_DEPTH), Some(MAX_DEPTH));
        // The locator stops at the bound instead of recursing 50 000 levels.
        let index = SpanIndex::new(&deep);
        assert!(index.spans.len() <= MAX_DEPTH + 1);
        assert_eq!(position_at("ab\ncé\nd", 6), Position { line: 2, column: 3 });
    }

    #[test]
    fn broken_text_is_scanned_as_far_as_it_goes() {
        let index = SpanIndex::new("{\"a\": 1, \"b\": [1,");
        assert!(index.position_of(&JsonPath::root().key("a")).is_some());
        // An unfinished value still has a start.
        assert_eq!(
            index.position_of(&JsonPath::root().key("b")),
            Some(Position {
                line: 1,
                column: 15
            })
        );
        assert_eq!(SpanIndex::new("").position_of(&JsonPath::root()), None);
    }
}

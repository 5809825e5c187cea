//! `ToolGlob`: which tools a hook is asked about, as a glob over tool names (`*` any run of
//! characters, `?` one character, everything else itself).

use std::fmt;
use std::str::FromStr;

/// A glob over tool names: `*` matches any run of characters (dots included), `?` one
/// character, any other character itself. Parsed with [`str::parse`].
///
/// ```
/// use rein_engine::hook::ToolGlob;
/// let fs: ToolGlob = "fs.*".parse()?;
/// assert!(fs.matches("fs.read"));
/// assert!(!fs.matches("shell"));
/// assert!("fs.[".parse::<ToolGlob>().is_err());
/// # Ok::<(), rein_engine::hook::GlobError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGlob {
    pattern: String,
}

/// Why a glob over tool names was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GlobError {
    /// The pattern is empty.
    #[error("the tool glob is empty; use `*` to match every tool")]
    Empty,
    /// The pattern holds a character no tool name has and the glob does not support.
    #[error(
        "the tool glob {pattern:?} holds {found:?}, which is not supported: use letters, digits, \
         `.`, `_`, `-`, `*` (any run of characters) and `?` (one character)"
    )]
    Unsupported {
        /// The pattern.
        pattern: String,
        /// The character refused.
        found: char,
    },
}

impl ToolGlob {
    /// The pattern, as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `name` matches.
    #[must_use]
    pub fn matches(&self, name: &str) -> bool {
        // A tool's name is ASCII, and so is almost every pattern: matched byte by byte then,
        // with nothing allocated (a hook's tools are matched at every tool point).
        if self.pattern.is_ascii() && name.is_ascii() {
            return wildcard(self.pattern.as_bytes(), name.as_bytes(), b'*', b'?');
        }
        let pattern: Vec<char> = self.pattern.chars().collect();
        let name: Vec<char> = name.chars().collect();
        wildcard(&pattern, &name, '*', '?')
    }
}

/// Whether `name` matches `pattern`, where `star` matches any run of characters and `one`
/// any one character. Iterative, with one backtrack point: linear in practice,
/// O(pattern × name) at worst, no recursion.
fn wildcard<C: Copy + PartialEq>(pattern: &[C], name: &[C], star: C, one: C) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut starred: Option<(usize, usize)> = None;
    while let Some(&c) = name.get(n) {
        match pattern.get(p) {
            Some(&s) if s == star => {
                starred = Some((p, n));
                p += 1;
            }
            Some(&s) if s == one || s == c => {
                p += 1;
                n += 1;
            }
            _ => match starred {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    starred = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&s| s == star)
}

impl FromStr for ToolGlob {
    type Err = GlobError;

    fn from_str(pattern: &str) -> Result<Self, Self::Err> {
        if pattern.is_empty() {
            return Err(GlobError::Empty);
        }
        if let Some(found) = pattern.chars().find(|c| {
            !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '*' | '?' | '/' | ':'))
        }) {
            return Err(GlobError::Unsupported {
                pattern: pattern.to_owned(),
                found,
            });
        }
        Ok(Self {
            pattern: pattern.to_owned(),
        })
    }
}

impl fmt::Display for ToolGlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &str, name: &str, expect: bool) {
        let glob: ToolGlob = pattern.parse().expect("a valid glob");
        assert_eq!(glob.matches(name), expect, "{pattern} against {name}");
    }

    #[test]
    fn stars_and_question_marks_match_as_globs_do() {
        check("*", "anything.at_all", true);
        check("fs.*", "fs.read", true);
        check("fs.*", "fs.", true);
        check("fs.*", "fsx", false);
        check("*.write", "fs.write", true);
        check("*.write", "fs.writer", false);
        check("f?.read", "fs.read", true);
        check("a*b*c", "axxbyyc", true);
        check("a*b*c", "axxbyy", false);
        check("shell", "shell", true);
        check("shell", "shells", false);
        // Non-ASCII letters are matched as characters, `?` taking one whole character.
        check("ö?", "öä", true);
        check("*ä", "fs.ä", true);
        check("f?", "fä", true);
        check("fö", "fä", false);
    }

    #[test]
    fn a_pattern_with_brackets_or_nothing_is_refused() {
        assert_eq!("".parse::<ToolGlob>(), Err(GlobError::Empty));
        assert!(matches!(
            "fs.[ab]".parse::<ToolGlob>(),
            Err(GlobError::Unsupported { found: '[', .. })
        ));
    }
}

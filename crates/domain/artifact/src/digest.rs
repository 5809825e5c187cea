//! SHA-256 hex text shared by `ArtifactId` and `Checksum`: hashing, encoding, strict parsing.

use sha2::{Digest as _, Sha256};

/// What is wrong with the hex digits of an [`ArtifactId`](crate::ArtifactId) or a
/// [`Checksum`](crate::Checksum).
///
/// Only exactly 64 lowercase hex digits (`0-9`, `a-f`) are a SHA-256 digest in rein. Nothing
/// else is accepted, so no digest text can ever spell a path separator or `..`.
///
/// ```
/// use rein_artifact::{ArtifactId, DigestProblem};
///
/// let err = "../etc/passwd".parse::<ArtifactId>().unwrap_err();
/// assert_eq!(err.problem, DigestProblem::InvalidCharacter { found: '.', at: 0 });
/// let err = "ab".parse::<ArtifactId>().unwrap_err();
/// assert_eq!(err.problem, DigestProblem::WrongLength { len: 2 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum DigestProblem {
    /// The text is empty.
    #[error("it is empty")]
    Empty,
    /// The text holds a character other than a lowercase hex digit.
    #[error("character {found:?} at position {at} is not a lowercase hex digit")]
    InvalidCharacter {
        /// The first offending character.
        found: char,
        /// Its position, counted in characters from 0.
        at: usize,
    },
    /// The text is made of lowercase hex digits but not exactly 64 of them.
    #[error("it has {len} hex digits, not 64")]
    WrongLength {
        /// How many hex digits it has.
        len: usize,
    },
}

/// The number of hex digits in a SHA-256 digest.
pub(crate) const HEX_LEN: usize = 64;

/// The longest excerpt of a rejected value that an error message repeats.
const MAX_ECHO_CHARS: usize = 80;

/// The SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The 64 lowercase hex digits of `digest`.
pub(crate) fn encode(digest: &[u8; 32]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(HEX_LEN);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// Parses exactly 64 lowercase hex digits.
pub(crate) fn parse(text: &str) -> Result<[u8; 32], DigestProblem> {
    if text.is_empty() {
        return Err(DigestProblem::Empty);
    }
    if let Some((at, found)) = text
        .chars()
        .enumerate()
        .find(|&(_, c)| !matches!(c, '0'..='9' | 'a'..='f'))
    {
        return Err(DigestProblem::InvalidCharacter { found, at });
    }
    // Only ASCII is left, so bytes and characters agree.
    if text.len() != HEX_LEN {
        return Err(DigestProblem::WrongLength { len: text.len() });
    }
    Ok(decode_valid(text))
}

/// Decodes text that [`parse`] has already accepted. Total: never panics, whatever the input.
pub(crate) fn decode_valid(text: &str) -> [u8; 32] {
    let nibble = |c: u8| {
        if c.is_ascii_digit() {
            c.wrapping_sub(b'0')
        } else {
            c.wrapping_sub(b'a').wrapping_add(10)
        }
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        *byte = (nibble(pair[0]) << 4) | nibble(pair[1]);
    }
    out
}

/// A rejected value as an error message repeats it: whole when short, otherwise its first
/// 80 characters followed by `…`.
pub(crate) fn echo(value: &str) -> String {
    let mut chars = value.chars();
    let mut out: String = chars.by_ref().take(MAX_ECHO_CHARS).collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vectors() {
        assert_eq!(
            encode(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            encode(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn parse_names_the_first_problem() {
        for (text, problem) in [
            ("", DigestProblem::Empty),
            ("..", DigestProblem::InvalidCharacter { found: '.', at: 0 }),
            (
                "ab/cd",
                DigestProblem::InvalidCharacter { found: '/', at: 2 },
            ),
            ("abé", DigestProblem::InvalidCharacter { found: 'é', at: 2 }),
            ("ABC", DigestProblem::InvalidCharacter { found: 'A', at: 0 }),
            ("abc", DigestProblem::WrongLength { len: 3 }),
        ] {
            assert_eq!(parse(text), Err(problem), "{text:?}");
        }
    }

    #[test]
    fn echo_cuts_long_values() {
        assert_eq!(echo("short"), "short");
        assert_eq!(echo(&"x".repeat(80)), "x".repeat(80));
        assert_eq!(echo(&"é".repeat(81)), format!("{}…", "é".repeat(80)));
    }

    proptest! {
        #[test]
        fn encode_then_parse_is_identity(bytes in any::<[u8; 32]>()) {
            let text = encode(&bytes);
            prop_assert_eq!(text.len(), HEX_LEN);
            prop_assert_eq!(parse(&text), Ok(bytes));
        }

        #[test]
        fn parse_accepts_only_64_lowercase_hex_digits(text in "[0-9a-fA-F./\\\\:]{0,70}|\\PC*") {
            let lower_hex = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
            let ok = text.len() == HEX_LEN && text.bytes().all(lower_hex);
            prop_assert_eq!(parse(&text).is_ok(), ok);
        }
    }
}

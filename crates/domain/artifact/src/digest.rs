//! SHA-256 digest text for `ArtifactId` and `Checksum`. Hashing, writing and parsing the
//! 64 hex digits are `rein_tool::Digest`'s (the workspace's one digest type); what is
//! artifact-specific is how an error message repeats a rejected value.

use rein_tool::Digest;
pub use rein_tool::DigestProblem;

/// The longest excerpt of a rejected value that an error message repeats.
const MAX_ECHO_CHARS: usize = 80;

/// The SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    *Digest::of_bytes(bytes).as_bytes()
}

/// Parses exactly 64 lowercase hex digits.
pub(crate) fn parse(text: &str) -> Result<[u8; 32], DigestProblem> {
    Digest::from_hex(text).map(|digest| *digest.as_bytes())
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

    #[test]
    fn known_vectors() {
        assert_eq!(
            Digest::from_bytes(sha256(b"abc")).to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(parse(&"ab".repeat(32)), Ok([0xab; 32]));
    }

    #[test]
    fn echo_cuts_long_values() {
        assert_eq!(echo("short"), "short");
        let long = "x".repeat(100);
        assert_eq!(echo(&long), format!("{}…", "x".repeat(80)));
    }
}

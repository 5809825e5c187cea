//! Strings and integers as compact JSON: a string escaped exactly as `serde_json` escapes it,
//! looked at eight bytes at a time; an integer two digits at a time.

/// What a byte becomes inside a JSON string: 0 for itself, else the letter after `\`
/// (`u` for `\u00XX`). `serde_json`'s table, the same escapes.
pub(super) static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends `s` as a JSON string, escaped as `serde_json` escapes it.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Most strings in an entry (names, hex digests, prose) have nothing to escape: one
    // copy.
    if needs_escape(bytes) {
        escaped(out, bytes);
    } else {
        out.extend_from_slice(bytes);
    }
    out.push(b'"');
}

/// Appends the inside of a JSON string holding `bytes`, some of which are escaped.
#[cold]
pub(super) fn escaped(out: &mut Vec<u8>, mut bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    loop {
        let clean = clean_prefix(bytes);
        out.extend_from_slice(&bytes[..clean]);
        let Some((&b, tail)) = bytes[clean..].split_first() else {
            return;
        };
        match ESCAPE[usize::from(b)] {
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
            escape => out.extend_from_slice(&[b'\\', escape]),
        }
        bytes = tail;
    }
}

/// 1 in every byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `x` is a control character, `"` or `\`: exact as a yes or no.
/// Each test sets the high bit of a byte where it holds (and may set it above a byte where
/// it holds, never elsewhere), so their union is exact too; one branch for the three.
const fn any_to_escape(x: u64) -> bool {
    /// The high bit of each byte of `x` below `n` (n <= 0x80), and maybe above one.
    const fn below(x: u64, n: u8) -> u64 {
        x.wrapping_sub(ONES * n as u64) & !x
    }
    const fn equal(x: u64, b: u8) -> u64 {
        below(x ^ (ONES * b as u64), 1)
    }
    (below(x, 0x20) | equal(x, b'"') | equal(x, b'\\')) & HIGH != 0
}

/// Whether any byte of `bytes` is escaped in a JSON string. Words of eight bytes, the
/// last one overlapping the one before; a string shorter than a word is read as one word
/// made of its first and last four bytes (or two, or its one byte repeated), which overlap
/// and cover it: no byte is looked at on its own.
pub(super) fn needs_escape(bytes: &[u8]) -> bool {
    let word = if let Some(last) = bytes.last_chunk::<8>() {
        let mut words = bytes.chunks_exact(8);
        if words.any(|w| <[u8; 8]>::try_from(w).is_ok_and(|w| any_to_escape(u64::from_le_bytes(w))))
        {
            return true;
        }
        u64::from_le_bytes(*last)
    } else if let (Some(first), Some(last)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*first)) | u64::from(u32::from_le_bytes(*last)) << 32
    } else if let (Some(first), Some(last)) = (bytes.first_chunk::<2>(), bytes.last_chunk::<2>()) {
        let half =
            u64::from(u16::from_le_bytes(*first)) | u64::from(u16::from_le_bytes(*last)) << 16;
        half | half << 32
    } else if let Some(&b) = bytes.first() {
        ONES * u64::from(b)
    } else {
        return false;
    };
    any_to_escape(word)
}

/// How many bytes at the start of `bytes` go into a JSON string as they are: eight bytes
/// at a time while none of them needs escaping, then byte by byte.
pub(super) fn clean_prefix(bytes: &[u8]) -> usize {
    let mut clean = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        if any_to_escape(u64::from_le_bytes(word)) {
            break;
        }
        clean += 8;
    }
    clean
        + bytes[clean..]
            .iter()
            .position(|&b| ESCAPE[usize::from(b)] != 0)
            .unwrap_or(bytes.len() - clean)
}

/// The two decimal digits of every number below 100.
static PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0; 2]; 100];
    let mut n = 0;
    while n < 100 {
        // Both are below 10: the casts keep every bit.
        pairs[n] = [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8];
        n += 1;
    }
    pairs
};

/// Appends `n` in decimal.
pub(crate) fn unsigned(out: &mut Vec<u8>, mut n: u64) {
    if n < 10 {
        // Below 10: the cast keeps every bit.
        out.push(b'0' + n as u8);
        return;
    }
    // Two digits at a time, from the last.
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while n >= 100 {
        at -= 2;
        // `n % 100` is below 100: the cast keeps every bit.
        digits[at..at + 2].copy_from_slice(&PAIRS[(n % 100) as usize]);
        n /= 100;
    }
    if n >= 10 {
        at -= 2;
        // Below 100: the cast keeps every bit.
        digits[at..at + 2].copy_from_slice(&PAIRS[n as usize]);
    } else {
        at -= 1;
        // Below 10: the cast keeps every bit.
        digits[at] = b'0' + n as u8;
    }
    out.extend_from_slice(&digits[at..]);
}

pub(super) fn signed(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    unsigned(out, n.unsigned_abs());
}

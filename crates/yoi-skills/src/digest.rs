//! Content digests: lowercase hex SHA-256.

use sha2::{Digest, Sha256};

/// The hex SHA-256 of `bytes`; a skill's digest is this over its `SKILL.md` bytes exactly as
/// stored (no newline or BOM normalisation), so it changes whenever the file does.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in hash {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0xF), 16).unwrap_or('0'));
    }
    out
}

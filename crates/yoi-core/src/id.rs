//! Ticket ids: the directory name of a ticket is its id.
//!
//! New tickets get a ULID (26 Crockford base32 characters). The reader also accepts the older
//! 13-character form (Unix milliseconds in Crockford base32, zero padded) so that ticket trees
//! written by the earlier system import unchanged. Ids are always upper case on disk; lookups by
//! suffix are case-insensitive. Nothing here touches the filesystem.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Crockford base32 alphabet (no I, L, O, U).
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Each Crockford character's value (0 for any other byte, which a parsed id never holds).
const DIGIT: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 32 {
        t[CROCKFORD[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// Whether a byte is a Crockford character: a table, since every id read (a relations file
/// holds tens of thousands) checks each of its characters.
const IS_DIGIT: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 32 {
        t[CROCKFORD[i] as usize] = true;
        i += 1;
    }
    t
};

/// Shortest suffix accepted when resolving an id from user input.
pub const MIN_SUFFIX_LEN: usize = 4;

/// A validated ticket id, in either the ULID or the legacy 13-character form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TicketId(String);

/// A [`TicketId`] decoded to its number (`TicketId::key`): equal exactly when the ids are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdKey {
    value: u128,
    legacy: bool,
}

/// Which shape an id has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdForm {
    Ulid,
    Legacy,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum IdError {
    #[error("`{value}` is not a ticket id: expected 26 (ULID) or 13 (legacy) Crockford base32 characters, got {len}")]
    Length { value: String, len: usize },
    #[error("`{value}` is not a ticket id: character `{ch}` is not upper-case Crockford base32")]
    Character { value: String, ch: char },
    #[error("`{value}` is not a ticket id: the value overflows its encoding")]
    Overflow { value: String },
}

impl TicketId {
    /// Parse an id exactly as it appears on disk (upper case).
    pub fn parse(value: &str) -> Result<Self, IdError> {
        let len = value.chars().count();
        if len != 26 && len != 13 {
            return Err(IdError::Length {
                value: value.to_string(),
                len,
            });
        }
        for ch in value.chars() {
            if !ch.is_ascii() || !IS_DIGIT[ch as usize] {
                return Err(IdError::Character {
                    value: value.to_string(),
                    ch,
                });
            }
        }
        // A ULID's first character encodes only 3 bits; a legacy id must fit in u64.
        let first = value.as_bytes()[0];
        if (len == 26 && first > b'7') || (len == 13 && first > b'F') {
            return Err(IdError::Overflow {
                value: value.to_string(),
            });
        }
        Ok(TicketId(value.to_string()))
    }

    /// The id as a fixed-size value, for maps over many tickets: comparing and hashing it reads
    /// no heap memory (a `TicketId` key costs a cache miss per lookup on its string).
    pub fn key(&self) -> IdKey {
        let value = self
            .0
            .bytes()
            .fold(0u128, |v, b| (v << 5) | u128::from(DIGIT[b as usize]));
        IdKey {
            value,
            legacy: self.0.len() == 13,
        }
    }

    /// Make an id from a ULID value (the store supplies time and randomness).
    pub fn from_ulid(ulid: ulid::Ulid) -> Self {
        TicketId(ulid.to_string())
    }

    /// Encode Unix milliseconds in the legacy 13-character form.
    pub fn legacy_from_millis(mut millis: u64) -> Self {
        let mut out = [b'0'; 13];
        for slot in out.iter_mut().rev() {
            *slot = CROCKFORD[(millis & 31) as usize];
            millis >>= 5;
        }
        TicketId(String::from_utf8(out.to_vec()).expect("alphabet is ASCII"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn form(&self) -> IdForm {
        if self.0.len() == 26 {
            IdForm::Ulid
        } else {
            IdForm::Legacy
        }
    }

    /// Milliseconds since the Unix epoch encoded in the id (both forms carry a timestamp).
    pub fn millis(&self) -> u64 {
        let digits = match self.form() {
            IdForm::Ulid => &self.0[..10],
            IdForm::Legacy => &self.0[..],
        };
        digits.bytes().fold(0u64, |acc, b| {
            let v = CROCKFORD.iter().position(|c| *c == b).expect("validated") as u64;
            acc.wrapping_shl(5) | v
        })
    }
}

impl fmt::Display for TicketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for TicketId {
    type Error = IdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        TicketId::parse(&value)
    }
}

impl From<TicketId> for String {
    fn from(id: TicketId) -> String {
        id.0
    }
}

/// In the API's document: a string of 26 (ULID) or 13 (legacy) upper-case Crockford base32
/// characters, as [`TicketId::parse`] takes it.
impl utoipa::PartialSchema for TicketId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some("^([0-7][0-9A-HJKMNP-TV-Z]{25}|[0-9A-F][0-9A-HJKMNP-TV-Z]{12})$"))
            .description(Some(
                "A ticket id: a ULID (26 characters) or the legacy 13-character form, upper-case Crockford base32.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for TicketId {}

impl AsRef<str> for TicketId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Why a user-supplied id could not be resolved to exactly one ticket.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ResolveError {
    #[error("no ticket matches `{query}`")]
    NotFound { query: String },
    #[error("`{query}` is too short to identify a ticket: give the full id or at least {MIN_SUFFIX_LEN} trailing characters")]
    TooShort { query: String },
    #[error("`{query}` matches {} tickets: {}", matches.len(), matches.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        query: String,
        matches: Vec<TicketId>,
    },
}

/// Resolve user input against known ids: an exact id (any case) wins; otherwise a unique
/// case-insensitive suffix of at least [`MIN_SUFFIX_LEN`] characters.
pub fn resolve<'a, I>(query: &str, known: I) -> Result<TicketId, ResolveError>
where
    I: IntoIterator<Item = &'a TicketId>,
{
    let wanted = query.trim().to_ascii_uppercase();
    if wanted.len() < MIN_SUFFIX_LEN {
        return Err(ResolveError::TooShort {
            query: query.to_string(),
        });
    }
    let mut matches: Vec<TicketId> = Vec::new();
    for id in known {
        if id.as_str() == wanted {
            return Ok(id.clone());
        }
        if id.as_str().ends_with(&wanted) {
            matches.push(id.clone());
        }
    }
    match matches.len() {
        0 => Err(ResolveError::NotFound {
            query: query.to_string(),
        }),
        1 => Ok(matches.remove(0)),
        _ => {
            matches.sort();
            Err(ResolveError::Ambiguous {
                query: query.to_string(),
                matches,
            })
        }
    }
}

impl IdError {
    pub fn class(&self) -> crate::ErrorClass {
        match self {
            IdError::Length { .. } | IdError::Character { .. } | IdError::Overflow { .. } => {
                crate::ErrorClass::Invalid
            }
        }
    }
}

impl ResolveError {
    pub fn class(&self) -> crate::ErrorClass {
        match self {
            ResolveError::NotFound { .. } => crate::ErrorClass::NotFound,
            ResolveError::TooShort { .. } | ResolveError::Ambiguous { .. } => {
                crate::ErrorClass::Invalid
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_id_decodes_to_its_millisecond_timestamp() {
        let id = TicketId::parse("00001KXKMX0QM").unwrap();
        assert_eq!(id.form(), IdForm::Legacy);
        assert_eq!(id.millis(), 1_784_144_626_420);
        assert_eq!(TicketId::legacy_from_millis(1_784_144_626_420), id);
    }

    #[test]
    fn ulid_round_trips_and_reports_its_time() {
        let u = ulid::Ulid::from_parts(1_784_144_626_420, 42);
        let id = TicketId::from_ulid(u);
        assert_eq!(id.form(), IdForm::Ulid);
        assert_eq!(id.millis(), 1_784_144_626_420);
        assert_eq!(TicketId::parse(id.as_str()).unwrap(), id);
    }

    #[test]
    fn parse_rejects_lowercase_wrong_length_bad_chars_and_overflow() {
        assert!(matches!(
            TicketId::parse("00001kxkmx0qm"),
            Err(IdError::Character { .. })
        ));
        assert!(matches!(
            TicketId::parse("ABC"),
            Err(IdError::Length { len: 3, .. })
        ));
        assert!(matches!(
            TicketId::parse("00001KXKMX0QI"),
            Err(IdError::Character { ch: 'I', .. })
        ));
        assert!(matches!(
            TicketId::parse("ZZZZZZZZZZZZZ"),
            Err(IdError::Overflow { .. })
        ));
        assert!(matches!(
            TicketId::parse("../../etc/passwd00"),
            Err(IdError::Length { .. })
        ));
    }

    #[test]
    fn resolve_accepts_unique_suffix_case_insensitively() {
        let ids = [
            TicketId::parse("00001KXKMX0QM").unwrap(),
            TicketId::parse("00001KXKMX1AB").unwrap(),
        ];
        assert_eq!(resolve("x0qm", &ids).unwrap(), ids[0]);
        assert_eq!(resolve("00001kxkmx1ab", &ids).unwrap(), ids[1]);
    }

    #[test]
    fn resolve_lists_every_match_when_ambiguous() {
        let ids = [
            TicketId::parse("00001KXKMA0QM").unwrap(),
            TicketId::parse("00002KXKMA0QM").unwrap(),
        ];
        match resolve("KMA0QM", &ids) {
            Err(ResolveError::Ambiguous { matches, .. }) => assert_eq!(matches, ids.to_vec()),
            other => panic!("expected ambiguity, got {other:?}"),
        }
        let message = resolve("kma0qm", &ids).unwrap_err().to_string();
        assert!(message.contains("00001KXKMA0QM") && message.contains("00002KXKMA0QM"));
    }

    #[test]
    fn resolve_refuses_short_and_unknown_queries() {
        let ids = [TicketId::parse("00001KXKMA0QM").unwrap()];
        assert!(matches!(
            resolve("0QM", &ids),
            Err(ResolveError::TooShort { .. })
        ));
        assert!(matches!(
            resolve("ZZZZ", &ids),
            Err(ResolveError::NotFound { .. })
        ));
        // A prefix is not a suffix.
        assert!(matches!(
            resolve("00001KXK", &ids),
            Err(ResolveError::NotFound { .. })
        ));
    }
}

//! Timestamps as they appear in ticket files: UTC, RFC 3339, `Z` suffix.
//!
//! The core never reads a clock; callers pass `Timestamp` values in. Sub-second precision is
//! kept when present, so a rewrite keeps the instant; a time written with another offset is
//! rewritten in UTC with `Z`.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Timestamp(DateTime<Utc>);

#[derive(Debug, Error, PartialEq, Eq)]
#[error("`{value}` is not an RFC 3339 timestamp (expected e.g. 2026-11-29T10:00:00Z)")]
pub struct TimestampError {
    pub value: String,
}

impl Timestamp {
    pub fn parse(value: &str) -> Result<Self, TimestampError> {
        DateTime::parse_from_rfc3339(value.trim())
            .map(|t| Timestamp(t.with_timezone(&Utc)))
            .map_err(|_| TimestampError {
                value: value.to_string(),
            })
    }

    pub fn from_datetime(t: DateTime<Utc>) -> Self {
        Timestamp(t)
    }

    /// The instant `millis` milliseconds after the Unix epoch, milliseconds kept (the store
    /// drops them with [`Timestamp::to_seconds`] for what it writes).
    pub fn from_unix_millis(millis: i64) -> Self {
        Timestamp(DateTime::from_timestamp_millis(millis).unwrap_or_default())
    }

    /// The instant as seconds after the Unix epoch and nanoseconds within that second, exactly
    /// (for binary encodings such as doctor's cache); [`Timestamp::from_unix_parts`] inverts it.
    pub fn unix_parts(&self) -> (i64, u32) {
        (self.0.timestamp(), self.0.timestamp_subsec_nanos())
    }

    /// The instant [`Timestamp::unix_parts`] gave, if it is one.
    pub fn from_unix_parts(secs: i64, nanos: u32) -> Option<Self> {
        DateTime::from_timestamp(secs, nanos).map(Timestamp)
    }

    pub fn datetime(&self) -> DateTime<Utc> {
        self.0
    }

    pub fn unix_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// Drop sub-second precision.
    pub fn to_seconds(self) -> Self {
        Timestamp(DateTime::from_timestamp(self.0.timestamp(), 0).unwrap_or_default())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }
}

impl TryFrom<String> for Timestamp {
    type Error = TimestampError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Timestamp::parse(&value)
    }
}

impl From<Timestamp> for String {
    fn from(t: Timestamp) -> String {
        t.to_string()
    }
}

/// In the API's document: an RFC 3339 date-time in UTC (`2026-11-29T10:00:00Z`).
impl utoipa::PartialSchema for Timestamp {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::DateTime,
            )))
            .into()
    }
}

impl utoipa::ToSchema for Timestamp {}

/// The UTC date-time type timestamps wrap.
pub type DateTimeUtc = DateTime<Utc>;

/// Convert a system time the caller read (the core reads no clock itself).
pub fn utc_now_from_system(t: std::time::SystemTime) -> DateTimeUtc {
    DateTime::<Utc>::from(t)
}

/// Milliseconds since the Unix epoch of a system time the caller read (0 before the epoch).
pub fn unix_ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_whole_seconds_with_z_and_keeps_fractions() {
        let t = Timestamp::parse("2026-11-29T10:00:00Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-29T10:00:00Z");
        let t = Timestamp::parse("2026-11-29T19:00:00.250+09:00").unwrap();
        assert_eq!(t.to_string(), "2026-11-29T10:00:00.250Z");
        assert_eq!(t.to_seconds().to_string(), "2026-11-29T10:00:00Z");
    }

    #[test]
    fn rejects_non_timestamps() {
        assert!(Timestamp::parse("yesterday").is_err());
        assert!(Timestamp::parse("2026-13-01T00:00:00Z").is_err());
    }
}

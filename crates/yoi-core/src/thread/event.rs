//! [`Event`]: one thread event as a value, and how it is checked and written as text.
//!
//! An event that passes [`Event::validate`] renders to text that [`super::parse_thread`] reads
//! back to the same event (the render → parse → render property test in `thread/tests.rs`), and
//! its body is always held in the canonical form [`normalize_body`] gives, which is also what the
//! parser returns. `validate` refuses, as an [`AttrError`], whatever could not make that round
//! trip or that the store will not hold: keys outside letters, digits, `_`, `-` and `.`, a key
//! given twice, values with control characters or over [`MAX_ATTR_BYTES`], a body over
//! [`MAX_BODY_BYTES`], a heading over more than one line. Rendering does not validate: a writer
//! calls `validate` first.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::escape::{escape_line, quote};
use super::{EventKind, MAX_ATTR_BYTES, MAX_BODY_BYTES};
use crate::time::Timestamp;

/// One thread event. `attrs` holds every header attribute after `event:` in file order
/// (`id`, `author`, `at`, `from`, `to`, `reason`, `op`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub kind: EventKind,
    pub attrs: Vec<(String, String)>,
    pub heading: Option<String>,
    pub body: String,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum AttrError {
    #[error("attribute key `{key}` must be non-empty letters, digits, `_`, `-` or `.`")]
    BadKey { key: String },
    #[error("attribute `{key}` must be a single line without control characters")]
    Multiline { key: String },
    #[error("attribute `{key}` is longer than {MAX_ATTR_BYTES} bytes")]
    TooLong { key: String },
    #[error("attribute `{key}` appears twice")]
    Duplicate { key: String },
    #[error("the event body is larger than {MAX_BODY_BYTES} bytes")]
    BodyTooLarge,
    #[error("the heading must be a single line")]
    BadHeading,
}

impl AttrError {
    /// Attributes and bodies come from callers: every problem is theirs to correct.
    pub fn class(&self) -> crate::ErrorClass {
        match self {
            AttrError::BadKey { .. }
            | AttrError::Multiline { .. }
            | AttrError::TooLong { .. }
            | AttrError::Duplicate { .. }
            | AttrError::BadHeading => crate::ErrorClass::Invalid,
            AttrError::BodyTooLarge => crate::ErrorClass::TooLarge,
        }
    }
}

impl Event {
    pub fn new(kind: EventKind, body: &str) -> Self {
        Event {
            heading: Some(kind.default_heading()),
            kind,
            attrs: Vec::new(),
            body: normalize_body(body),
        }
    }

    pub fn with_attr(mut self, key: &str, value: impl Into<String>) -> Self {
        self.set(key, value);
        self
    }

    /// Set or replace an attribute, keeping its position when it exists.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.attrs.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.attrs.push((key.to_string(), value)),
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn id(&self) -> Option<&str> {
        self.get("id")
    }

    pub fn author(&self) -> Option<&str> {
        self.get("author")
    }

    pub fn at(&self) -> Option<Timestamp> {
        self.get("at").and_then(|v| Timestamp::parse(v).ok())
    }

    /// The operation id the event was written under, if any.
    pub fn op(&self) -> Option<&str> {
        self.get("op")
    }

    /// Check that the event can be written and read back unchanged.
    pub fn validate(&self) -> Result<(), AttrError> {
        let mut seen: Vec<&str> = vec!["event"];
        for (k, v) in &self.attrs {
            if k.is_empty()
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(AttrError::BadKey { key: k.clone() });
            }
            if seen.contains(&k.as_str()) {
                return Err(AttrError::Duplicate { key: k.clone() });
            }
            seen.push(k);
            if v.chars().any(|c| c.is_control()) {
                return Err(AttrError::Multiline { key: k.clone() });
            }
            if v.len() > MAX_ATTR_BYTES {
                return Err(AttrError::TooLong { key: k.clone() });
            }
        }
        if self.body.len() > MAX_BODY_BYTES {
            return Err(AttrError::BodyTooLarge);
        }
        if let Some(h) = &self.heading {
            if h.contains(['\n', '\r']) {
                return Err(AttrError::BadHeading);
            }
        }
        Ok(())
    }

    /// The header comment line (without newline).
    pub fn header(&self) -> String {
        let mut out = format!("<!-- event: {}", quote(self.kind.as_str()));
        for (k, v) in &self.attrs {
            out.push(' ');
            out.push_str(k);
            out.push_str(": ");
            out.push_str(&quote(v));
        }
        out.push_str(" -->");
        out
    }

    /// Render the event, ending with `---\n`. Separate consecutive events with one `\n`.
    pub fn render(&self) -> String {
        let heading = self
            .heading
            .clone()
            .unwrap_or_else(|| self.kind.default_heading());
        let mut out = self.header();
        out.push_str("\n\n## ");
        out.push_str(heading.trim());
        out.push_str("\n\n");
        let body = normalize_body(&self.body);
        if !body.is_empty() {
            for line in body.split('\n') {
                out.push_str(&escape_line(line));
                out.push('\n');
            }
            out.push('\n');
        }
        out.push_str("---\n");
        out
    }
}

/// Canonical body: LF line ends, no leading or trailing blank lines, no trailing spaces at the
/// very end. This is what the store writes and what the parser returns.
pub fn normalize_body(body: &str) -> String {
    normalize_lines(body.split('\n'))
}

/// [`normalize_body`] of these lines joined by `\n` (none holds a `\n`).
pub(super) fn normalize_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    // Every `\r` before a line end goes, not just one: `"\r\r\n".replace("\r\n", "\n")` is
    // `"\r\n"` again, which the parser then read back one `\r` shorter (found by fuzzing).
    let lines: Vec<&str> = lines.map(|l| l.trim_end_matches('\r')).collect();
    let start = lines.iter().position(|l| !l.trim().is_empty());
    let end = lines.iter().rposition(|l| !l.trim().is_empty());
    match (start, end) {
        (Some(s), Some(e)) => {
            let mut body = lines[s..=e].join("\n");
            body.truncate(body.trim_end().len());
            body
        }
        _ => String::new(),
    }
}

/// Render a whole thread: events separated by a blank line.
pub fn render_thread(events: &[Event]) -> String {
    events
        .iter()
        .map(Event::render)
        .collect::<Vec<_>>()
        .join("\n")
}

//! One header line, `<!-- event: KIND key: value … -->`, read into a kind and its attributes.
//!
//! [`parse_header_ref`] borrows from the line every key and every value that needs no
//! unescaping; [`parse_header`] is the same reading with owned strings. Both refuse, with a
//! reason the scanner reports as a malformed header, a line that is not one whole comment, text
//! not shaped `key: value`, a quoted value left open, a first attribute other than `event`, and
//! an empty kind. Bare values with spaces, which the older writer left unquoted, are read up to
//! the next key (`older_bare_value` says how); yoi quotes every such value, so its own headers
//! never depend on that reading.

use std::borrow::Cow;

use super::escape::quoted;
use super::EventKind;

/// Parse a header line (already known to start with `<!-- event:`).
pub fn parse_header(line: &str) -> Result<(EventKind, Vec<(String, String)>), String> {
    let (kind, attrs) = parse_header_ref(line)?;
    let attrs = attrs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_owned()))
        .collect();
    Ok((kind, attrs))
}

/// An event's kind and attributes as they stand in its header line: keys, and the values that
/// need no unescaping, borrowed from the line.
pub type HeaderAttrs<'a> = Vec<(&'a str, Cow<'a, str>)>;

/// [`parse_header`] without copying what it can borrow.
pub fn parse_header_ref(line: &str) -> Result<(EventKind, HeaderAttrs<'_>), String> {
    let t = line.trim();
    let inner = t
        .strip_prefix("<!--")
        .and_then(|s| s.strip_suffix("-->"))
        .ok_or_else(|| "the header comment does not end with `-->` on the same line".to_string())?;
    let mut attrs: HeaderAttrs<'_> = Vec::with_capacity(8);
    let mut rest = inner.trim_start();
    while !rest.is_empty() {
        let colon = memchr::memchr(b':', rest.as_bytes())
            .ok_or_else(|| format!("expected `key: value` at `{}`", short(rest)))?;
        let key = &rest[..colon];
        if key.is_empty() || space_at(key).is_some() {
            return Err(format!("expected `key: value` at `{}`", short(rest)));
        }
        rest = rest[colon + 1..].trim_start();
        let value;
        if let Some(q) = rest.strip_prefix('"') {
            let (v, end) =
                quoted(q).ok_or_else(|| format!("the quoted value of `{key}` is not closed"))?;
            value = v;
            rest = &q[end..];
            if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
                return Err(format!("expected a space after the value of `{key}`"));
            }
        } else {
            let end = space_at(rest).unwrap_or(rest.len());
            let (v, after) = older_bare_value(rest, end);
            value = Cow::Borrowed(v);
            rest = after;
        }
        attrs.push((key, value));
        rest = rest.trim_start();
    }
    if attrs.first().map(|(k, _)| *k) != Some("event") {
        return Err("the first attribute must be `event`".into());
    }
    let (_, kind) = attrs.remove(0);
    if kind.is_empty() {
        return Err("the event kind is empty".into());
    }
    Ok((EventKind::parse(&kind), attrs))
}

/// Where the first white space character (as `char::is_whitespace` has it) of `s` starts.
/// Header lines are ASCII nearly always; their bytes are compared without decoding.
pub(super) fn space_at(s: &str) -> Option<usize> {
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if !b.is_ascii() {
            // `i` starts a character: every byte before it is ASCII.
            return s[i..].find(char::is_whitespace).map(|j| i + j);
        }
        if matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
            return Some(i);
        }
    }
    None
}

/// Attribute keys yoi and the older tools write; in an older header they mark where an
/// unquoted value with spaces ends.
const KNOWN_KEYS: &[&str] = &[
    "event",
    "id",
    "author",
    "at",
    "status",
    "from",
    "to",
    "reason",
    "field",
    "operation_key",
    "request_fingerprint",
    "repository_id",
    "ref_selector",
    "op",
    "fp",
    "kind",
    "action",
    "decision",
    "target",
    "target_ref",
    "commit",
    "before",
    "after",
    "empty",
    "legacy_event_kind",
];

/// A bare value starting `rest` whose first word ends at `end`, and the text after it. The older
/// writer did not always quote: in `author: yoi ticket at: …` the value is `yoi ticket`. Words
/// that are not shaped `key:` continue the value (spacing kept); once it has continued, only a
/// known key ends it, so `reason: fix: typo at: …` reads as `fix: typo`. yoi quotes every value
/// with a space, so its own headers never take this path.
fn older_bare_value(rest: &str, end: usize) -> (&str, &str) {
    let mut value_end = end;
    let mut continued = false;
    loop {
        let next = rest[value_end..].trim_start();
        if next.is_empty() {
            break;
        }
        let word_end = space_at(next).unwrap_or(next.len());
        let word = &next[..word_end];
        // The characters `Event::validate` allows in a key, `.` included (found by fuzzing:
        // without it `author: a b.c: d` read back as one value).
        let key = word.strip_suffix(':').filter(|k| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        });
        if key.is_some_and(|k| !continued || KNOWN_KEYS.contains(&k)) {
            break;
        }
        value_end = rest.len() - next.len() + word_end;
        continued = true;
    }
    (&rest[..value_end], &rest[value_end..])
}

fn short(s: &str) -> String {
    s.chars().take(24).collect()
}

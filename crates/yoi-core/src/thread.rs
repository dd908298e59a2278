//! `thread.md`: the append-only event log of a ticket.
//!
//! An event is a one-line header comment, a `## Heading`, a Markdown body and a closing `---`:
//!
//! ```text
//! <!-- event: state_changed id: 01JD… author: alice at: 2026-11-29T10:00:00Z from: ready to: queued reason: queued -->
//!
//! ## State changed
//!
//! Queued for routing.
//!
//! ---
//! ```
//!
//! Attribute values are bare when free of whitespace, quotes, backslashes and `-->`, otherwise
//! double-quoted with `\"` and `\\` escapes (and `-->` written as `--\>` so the comment cannot end
//! early). Body lines that would end an event (a line that trims to `---`) or start one (a line
//! that starts with `<!-- event:`) are written with one extra leading backslash and read back
//! without it; a line that already starts with backslashes before such text gets one more, so the
//! escape is reversible for every input.
//!
//! Files written without escapes (the older format) still read without loss: a `---` line only
//! ends an event when the next non-blank line is an event header or the end of the file, so a
//! Markdown rule inside an old body stays in the body. A header line always starts a new event;
//! if the previous one was never closed (a torn append) it is reported, not dropped.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::time::Timestamp;

/// Largest event body the store accepts (bytes).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Largest attribute value (bytes).
pub const MAX_ATTR_BYTES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum EventKind {
    Create,
    Comment,
    IntakeSummary,
    Decision,
    Plan,
    StateChanged,
    ImplementationReport,
    Verification,
    Review,
    Merge,
    Assignment,
    Attention,
    /// A person asked routing to try again (closes an open circuit).
    Retry,
    ItemEdit,
    RelationChanged,
    Close,
    /// A kind this version does not know; preserved as written.
    Other(String),
}

impl EventKind {
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::Create => "create",
            EventKind::Comment => "comment",
            EventKind::IntakeSummary => "intake_summary",
            EventKind::Decision => "decision",
            EventKind::Plan => "plan",
            EventKind::StateChanged => "state_changed",
            EventKind::ImplementationReport => "implementation_report",
            EventKind::Verification => "verification",
            EventKind::Review => "review",
            EventKind::Merge => "merge",
            EventKind::Assignment => "assignment",
            EventKind::Attention => "attention",
            EventKind::Retry => "retry",
            EventKind::ItemEdit => "item_edit",
            EventKind::RelationChanged => "relation_changed",
            EventKind::Close => "close",
            EventKind::Other(s) => s,
        }
    }

    pub fn default_heading(&self) -> String {
        match self {
            EventKind::Create => "Created".into(),
            EventKind::Comment => "Comment".into(),
            EventKind::IntakeSummary => "Intake summary".into(),
            EventKind::Decision => "Decision".into(),
            EventKind::Plan => "Plan".into(),
            EventKind::StateChanged => "State changed".into(),
            EventKind::ImplementationReport => "Implementation report".into(),
            EventKind::Verification => "Verification".into(),
            EventKind::Review => "Review".into(),
            EventKind::Merge => "Merge".into(),
            EventKind::Assignment => "Assignment".into(),
            EventKind::Attention => "Attention".into(),
            EventKind::Retry => "Retry".into(),
            EventKind::ItemEdit => "Item updated".into(),
            EventKind::RelationChanged => "Relation changed".into(),
            EventKind::Close => "Closed".into(),
            EventKind::Other(s) => s.replace('_', " "),
        }
    }
}

impl EventKind {
    /// The kind `s` names; only an unknown kind allocates.
    pub fn parse(s: &str) -> Self {
        match Self::known(s) {
            Some(k) => k,
            None => EventKind::Other(s.to_string()),
        }
    }

    fn known(s: &str) -> Option<Self> {
        Some(match s {
            "create" => EventKind::Create,
            "comment" => EventKind::Comment,
            "intake_summary" => EventKind::IntakeSummary,
            "decision" => EventKind::Decision,
            "plan" => EventKind::Plan,
            "state_changed" => EventKind::StateChanged,
            "implementation_report" => EventKind::ImplementationReport,
            "verification" => EventKind::Verification,
            "review" => EventKind::Review,
            "merge" => EventKind::Merge,
            "assignment" => EventKind::Assignment,
            "attention" => EventKind::Attention,
            "retry" => EventKind::Retry,
            "item_edit" => EventKind::ItemEdit,
            "relation_changed" => EventKind::RelationChanged,
            "close" => EventKind::Close,
            _ => return None,
        })
    }
}

impl From<String> for EventKind {
    fn from(s: String) -> Self {
        EventKind::known(&s).unwrap_or(EventKind::Other(s))
    }
}

impl From<EventKind> for String {
    fn from(k: EventKind) -> String {
        k.as_str().to_string()
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
fn normalize_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
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

fn is_rule(line: &str) -> bool {
    line.trim() == "---"
}

fn is_header_start(line: &str) -> bool {
    line.trim_start().starts_with("<!-- event:")
}

fn dangerous(line: &str) -> bool {
    is_rule(line) || is_header_start(line)
}

fn escape_line(line: &str) -> String {
    if dangerous(line.trim_start_matches('\\')) {
        format!("\\{line}")
    } else {
        line.to_string()
    }
}

fn unescape_line(line: &str) -> &str {
    if line.starts_with('\\') && dangerous(line.trim_start_matches('\\')) {
        &line[1..]
    } else {
        line
    }
}

fn needs_quotes(v: &str) -> bool {
    v.is_empty()
        || v.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\')
        || v.contains("-->")
}

fn quote(v: &str) -> String {
    if !needs_quotes(v) {
        return v.to_string();
    }
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '>' if out.ends_with("--") => out.push_str("\\>"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Something in a thread file that is not a well-formed event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadIssue {
    /// 1-based line.
    pub line: usize,
    pub kind: ThreadIssueKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ThreadIssueKind {
    /// The header comment could not be read (`reason` says why); the event is skipped.
    MalformedHeader { reason: String },
    /// An event that is never closed by a `---` line (usually a torn append).
    Unterminated,
    /// Text outside any event.
    StrayText,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedThread {
    pub events: Vec<Event>,
    /// 1-based line of each event's header, parallel to `events`.
    pub lines: Vec<usize>,
    pub issues: Vec<ThreadIssue>,
}

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
fn space_at(s: &str) -> Option<usize> {
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

/// The value of a double-quoted attribute whose text after the opening quote is `q`, and where
/// its closing quote ends in `q`; `None` when it is never closed. Borrowed unless it holds an
/// escape.
fn quoted(q: &str) -> Option<(Cow<'_, str>, usize)> {
    let close = q.find(['"', '\\'])?;
    if q.as_bytes()[close] == b'"' {
        return Some((Cow::Borrowed(&q[..close]), close + 1));
    }
    let mut v = String::new();
    let mut chars = q.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e)) => v.push(e),
                None => return None,
            },
            '"' => return Some((Cow::Owned(v), i + 1)),
            c => v.push(c),
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

/// An event's header as the file holds it: what a reader that needs no bodies (doctor) takes
/// from [`parse_thread_headers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderRef<'a> {
    pub kind: EventKind,
    pub attrs: HeaderAttrs<'a>,
}

impl HeaderRef<'_> {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_ref())
    }

    pub fn id(&self) -> Option<&str> {
        self.get("id")
    }

    pub fn author(&self) -> Option<&str> {
        self.get("author")
    }
}

/// [`ParsedThread`] without the bodies: the same events, lines and issues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedHeaders<'a> {
    pub events: Vec<HeaderRef<'a>>,
    /// 1-based line of each event's header, parallel to `events`.
    pub lines: Vec<usize>,
    pub issues: Vec<ThreadIssue>,
}

/// Where the events of a thread file are: what [`parse_thread`] and [`parse_thread_headers`]
/// share, so the two can never disagree about which lines make an event.
struct Scan<'a, H> {
    /// The text the byte ranges below index (the file without its byte order mark).
    text: &'a str,
    /// Each event's header, the 1-based line of that header, and the bytes of its body
    /// (every line up to its closing rule or the next header, with their `\n`).
    events: Vec<(H, usize, std::ops::Range<usize>)>,
    issues: Vec<ThreadIssue>,
}

/// One line of a thread file: its text without the `\n`, its 0-based index, and the byte
/// offsets where it starts and where the line after it starts.
#[derive(Clone, Copy)]
struct Line<'a> {
    text: &'a str,
    index: usize,
    start: usize,
    next: usize,
}

/// The lines of a text as `text.split('\n')` gives them, except that a trailing newline does
/// not make one more, empty line. Copying a cursor is how the scanner looks ahead.
#[derive(Clone, Copy)]
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    index: usize,
    done: bool,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            text,
            pos: 0,
            index: 0,
            done: false,
        }
    }
}

impl<'a> Iterator for Cursor<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        if self.done {
            return None;
        }
        let start = self.pos;
        let rest = &self.text.as_bytes()[start..];
        let (end, next) = match memchr::memchr(b'\n', rest) {
            Some(k) => (start + k, start + k + 1),
            None => (self.text.len(), self.text.len()),
        };
        self.done = next == self.text.len();
        self.pos = next;
        let line = Line {
            text: &self.text[start..end],
            index: self.index,
            start,
            next,
        };
        self.index += 1;
        Some(line)
    }
}

/// True when the line can be neither a header, a rule nor blank: its first byte is ASCII,
/// not white space, and neither `<` nor `-`. Most body lines are; the checks that trim the
/// line are skipped for them.
fn plain(line: &str) -> bool {
    line.as_bytes()
        .first()
        .is_some_and(|&b| b.is_ascii() && !b"\t\n\x0b\x0c\r <-".contains(&b))
}

fn scan<'a, H>(text: &'a str, header: impl Fn(&'a str) -> Result<H, String>) -> Scan<'a, H> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Room for an event per 512 bytes: real events are longer, so this rarely grows.
    let mut events = Vec::with_capacity(text.len() / 512 + 1);
    let mut issues = Vec::new();
    // The event being read: its header, the index of its header line, and where its body
    // starts.
    let mut open: Option<(H, usize, usize)> = None;
    let mut stray_reported = false;
    let mut cursor = Cursor::new(text);
    while let Some(line) = cursor.next() {
        let raw = line.text.strip_suffix('\r').unwrap_or(line.text);
        let plain = plain(raw);
        if !plain && is_header_start(raw) {
            if let Some((h, at, body)) = open.take() {
                issues.push(ThreadIssue {
                    line: at + 1,
                    kind: ThreadIssueKind::Unterminated,
                });
                events.push((h, at + 1, body..line.start));
            }
            match header(raw) {
                Ok(h) => open = Some((h, line.index, line.next)),
                Err(reason) => {
                    issues.push(ThreadIssue {
                        line: line.index + 1,
                        kind: ThreadIssueKind::MalformedHeader { reason },
                    });
                    // Skip to the end of this malformed event so its body is not taken as stray.
                    loop {
                        let mut ahead = cursor;
                        let Some(l) = ahead.next() else { break };
                        if is_header_start(l.text) {
                            break;
                        }
                        cursor = ahead;
                        if is_rule(l.text) && next_is_boundary(cursor) {
                            break;
                        }
                    }
                }
            }
            continue;
        }
        match open.take() {
            Some((h, at, body)) => {
                if !plain && is_rule(raw) && next_is_boundary(cursor) {
                    events.push((h, at + 1, body..line.start));
                } else {
                    open = Some((h, at, body));
                }
            }
            None => {
                if !stray_reported && (plain || !raw.trim().is_empty()) {
                    issues.push(ThreadIssue {
                        line: line.index + 1,
                        kind: ThreadIssueKind::StrayText,
                    });
                    stray_reported = true;
                }
            }
        }
    }
    if let Some((h, at, body)) = open.take() {
        issues.push(ThreadIssue {
            line: at + 1,
            kind: ThreadIssueKind::Unterminated,
        });
        events.push((h, at + 1, body.min(text.len())..text.len()));
    }
    Scan {
        text,
        events,
        issues,
    }
}

/// An event from its header and its body lines: the heading is the first non-blank line when
/// it starts with `## `; the rest, unescaped and normalized, is the body.
fn event(kind: EventKind, attrs: Vec<(String, String)>, body: &str) -> Event {
    let mut lines = body
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .skip_while(|l| l.trim().is_empty());
    let mut heading = None;
    let mut body_lines: Vec<&str> = Vec::new();
    if let Some(first) = lines.next() {
        match first.strip_prefix("## ") {
            Some(h) => heading = Some(h.trim().to_string()),
            None => body_lines.push(first),
        }
    }
    body_lines.extend(lines);
    Event {
        kind,
        attrs,
        heading,
        body: normalize_lines(body_lines.into_iter().map(unescape_line)),
    }
}

/// Parse a whole thread file. Never fails: problems are reported in `issues`.
pub fn parse_thread(text: &str) -> ParsedThread {
    let scan = scan(text, parse_header);
    let (events, lines, issues) = scan.build(|(kind, attrs), body| event(kind, attrs, body));
    ParsedThread {
        events,
        lines,
        issues,
    }
}

/// The events' headers, lines and issues of a thread file, as [`parse_thread`] finds them,
/// without building their bodies.
pub fn parse_thread_headers(text: &str) -> ParsedHeaders<'_> {
    let scan = scan(text, parse_header_ref);
    let (events, lines, issues) = scan.build(|(kind, attrs), _| HeaderRef { kind, attrs });
    ParsedHeaders {
        events,
        lines,
        issues,
    }
}

impl<'a, H> Scan<'a, H> {
    /// Each event made from its header and body text, the 1-based line of each header, and
    /// the issues.
    fn build<E>(
        self,
        mut make: impl FnMut(H, &'a str) -> E,
    ) -> (Vec<E>, Vec<usize>, Vec<ThreadIssue>) {
        let mut events = Vec::with_capacity(self.events.len());
        let mut lines = Vec::with_capacity(self.events.len());
        for (header, line, body) in self.events {
            events.push(make(header, &self.text[body]));
            lines.push(line);
        }
        (events, lines, self.issues)
    }
}

/// True when the next non-blank line from `lines` on is an event header or the end.
fn next_is_boundary(mut lines: Cursor<'_>) -> bool {
    lines
        .find(|l| !l.text.trim().is_empty())
        .is_none_or(|l| is_header_start(l.text))
}

/// Render a whole thread: events separated by a blank line.
pub fn render_thread(events: &[Event]) -> String {
    events
        .iter()
        .map(Event::render)
        .collect::<Vec<_>>()
        .join("\n")
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

#[cfg(test)]
mod tests;

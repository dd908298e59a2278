//! Reading a whole `thread.md`: where each event starts and ends, and what is not an event.
//!
//! [`parse_thread`] and [`parse_thread_headers`] share one scanner, so the full reading and the
//! header-only reading (doctor's) cannot disagree about which lines make an event; property
//! tests in `thread/tests.rs` compare the two, and compare the scanner with a plain scan over
//! every line. Neither fails: a torn append, a header that cannot be read, an event left open
//! before the next one's header (read as ended there) or text outside any event becomes a
//! [`ThreadIssue`] with its line, and the other events are still returned —
//! a thread is the ticket's history, so a reader keeps what it can and says what it could not
//! read. An event whose header cannot be read is skipped, not guessed at.

use super::escape::{is_header_start, is_rule, unescape_line};
use super::event::normalize_lines;
use super::header::{parse_header, parse_header_ref, HeaderAttrs};
use super::{Event, EventKind};
use serde::Serialize;

/// Something in a thread file that is not a well-formed event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ThreadIssue {
    /// 1-based line.
    pub line: usize,
    pub kind: ThreadIssueKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ThreadIssueKind {
    /// The header comment could not be read (`reason` says why); the event is skipped.
    MalformedHeader { reason: String },
    /// An event that is never closed by a `---` line and runs to the end of the file (usually
    /// a torn append).
    Unterminated,
    /// An event not closed by a `---` line but followed by the next event's header: read as
    /// ended there, as the older tool read it (older trees have such events).
    EndedByNextHeader,
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
pub(super) struct Scan<'a, H> {
    /// The text the byte ranges below index (the file without its byte order mark).
    pub(super) text: &'a str,
    /// Each event's header, the 1-based line of that header, and the bytes of its body
    /// (every line up to its closing rule or the next header, with their `\n`).
    pub(super) events: Vec<(H, usize, std::ops::Range<usize>)>,
    pub(super) issues: Vec<ThreadIssue>,
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

pub(super) fn scan<'a, H>(
    text: &'a str,
    header: impl Fn(&'a str) -> Result<H, String>,
) -> Scan<'a, H> {
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
                    kind: ThreadIssueKind::EndedByNextHeader,
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

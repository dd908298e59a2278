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
//! Markdown rule inside an old body stays in the body. A header line always ends the event
//! before it; if that one was never closed (a torn append) it is reported, not dropped. A header
//! that cannot be read starts no event: it is reported and its event skipped.
//!
//! The format is kept in parts, each in its own file: `event_kind` names the kinds, `event`
//! builds, validates and renders one [`Event`], `escape` holds the attribute and body-line
//! escapes beside their inverses, `header` reads one header line, and `scan` finds the events
//! of a whole file. Nothing here reads or writes a file: the store does, with these functions.

mod escape;
mod event;
mod event_kind;
mod header;
mod scan;

pub use event::{normalize_body, render_thread, AttrError, Event};
pub use event_kind::EventKind;
pub use header::{parse_header, parse_header_ref, HeaderAttrs};
pub use scan::{
    parse_thread, parse_thread_headers, HeaderRef, ParsedHeaders, ParsedThread, ThreadIssue,
    ThreadIssueKind,
};

/// Largest event body the store accepts (bytes).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Largest attribute value (bytes).
pub const MAX_ATTR_BYTES: usize = 1024;

#[cfg(test)]
mod tests;

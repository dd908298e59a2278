//! The escapes of the thread format, each beside its inverse: attribute values ([`quote`] and
//! [`quoted`]) and body lines ([`escape_line`] and [`unescape_line`]), with the two line shapes
//! the body escape protects ([`is_rule`], [`is_header_start`]), which the scanner also uses to
//! find where events begin and end.
//!
//! Both directions live in one file so the writer and the reader cannot drift apart; the
//! render → parse → render property test in `thread/tests.rs` holds them together. Nothing here
//! refuses a value: whether one may be written at all (control characters, lengths) is
//! [`super::Event::validate`]'s decision.

use std::borrow::Cow;

pub(super) fn is_rule(line: &str) -> bool {
    line.trim() == "---"
}

pub(super) fn is_header_start(line: &str) -> bool {
    line.trim_start().starts_with("<!-- event:")
}

fn dangerous(line: &str) -> bool {
    is_rule(line) || is_header_start(line)
}

pub(super) fn escape_line(line: &str) -> String {
    if dangerous(line.trim_start_matches('\\')) {
        format!("\\{line}")
    } else {
        line.to_string()
    }
}

pub(super) fn unescape_line(line: &str) -> &str {
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

pub(super) fn quote(v: &str) -> String {
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

/// The value of a double-quoted attribute whose text after the opening quote is `q`, and where
/// its closing quote ends in `q`; `None` when it is never closed. Borrowed unless it holds an
/// escape.
pub(super) fn quoted(q: &str) -> Option<(Cow<'_, str>, usize)> {
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

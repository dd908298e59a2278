//! The source text of frontmatter scalars that YAML typed as numbers or booleans.
//!
//! The reference validator (skills-ref) reads every scalar as text, so `name: 2024` is the name
//! `2024`, `description: true` the description `true`, and `version: 1.50` keeps `1.50`.
//! serde_yaml_ng types such plain scalars, and its values keep no spans, so this module finds
//! the text again in the frontmatter, line by line, and gives it back only when the text alone
//! reads back as exactly the same value. Anything it cannot recover exactly (a tag such as
//! `!!int 12`, an anchor or alias, a flow collection such as `{name: 1}`) gives `None`, and the
//! caller keeps its type error.

use serde_yaml_ng::Value;

/// The file line of the frontmatter's first line (line 1 is the opening `---`).
const FIRST_LINE: usize = 2;

/// One `key: value` entry of a block mapping, as written.
pub(crate) struct SourceEntry<'t> {
    /// The 1-based file line of the key.
    pub line: u32,
    key: &'t str,
    /// The value when it is a single token, on the key's line or alone on the next one.
    value: Option<&'t str>,
}

impl SourceEntry<'_> {
    /// The key's text, when YAML typed it as `key` (a number or boolean key).
    pub fn key_text(&self, key: &Value) -> Option<String> {
        plain_text(self.key, key)
    }

    /// The value's text, when YAML typed it as `value` (a number or boolean).
    pub fn value_text(&self, value: &Value) -> Option<String> {
        plain_text(self.value?, value)
    }
}

/// The top-level entry whose key YAML reads as `key`.
pub(crate) fn top_level<'t>(text: &'t str, key: &Value) -> Option<SourceEntry<'t>> {
    let lines: Vec<&str> = text.split('\n').collect();
    find_entry(&lines, 0, lines.len(), 0, key)
}

/// The entry whose key YAML reads as `key`, in the block mapping under the top-level `parent`.
pub(crate) fn nested<'t>(text: &'t str, parent: &str, key: &Value) -> Option<SourceEntry<'t>> {
    let lines: Vec<&str> = text.split('\n').collect();
    let parent = top_level(text, &Value::String(parent.to_string()))?;
    let start = parent.line as usize + 1 - FIRST_LINE;
    let end = (start..lines.len())
        .find(|&i| is_content(lines[i]) && indent(lines[i]) == 0)
        .unwrap_or(lines.len());
    let child_indent = (start..end)
        .find(|&i| is_content(lines[i]))
        .map(|i| indent(lines[i]))?;
    find_entry(&lines, start, end, child_indent, key)
}

fn find_entry<'t>(
    lines: &[&'t str],
    start: usize,
    end: usize,
    at_indent: usize,
    key: &Value,
) -> Option<SourceEntry<'t>> {
    (start..end).find_map(|i| {
        let line = lines[i];
        if !is_content(line) || indent(line) != at_indent {
            return None;
        }
        let (key_token, rest) = split_entry(&line[at_indent..])?;
        if serde_yaml_ng::from_str::<Value>(key_token).ok().as_ref() != Some(key) {
            return None;
        }
        let value = match single_token(rest) {
            Some("") => next_line_token(lines, i + 1, end, at_indent),
            other => other,
        };
        Some(SourceEntry {
            line: u32::try_from(i + FIRST_LINE).unwrap_or(u32::MAX),
            key: key_token,
            value,
        })
    })
}

/// `token` when it is a plain scalar (no quotes, tag, anchor, alias or collection) that YAML
/// reads as exactly `value`.
fn plain_text(token: &str, value: &Value) -> Option<String> {
    let first = token.chars().next()?;
    if "!&*\"'[]{}|>%@`#,?-:".contains(first) && !is_number_start(token) {
        return None;
    }
    if token.chars().any(char::is_whitespace) {
        return None;
    }
    let read: Value = serde_yaml_ng::from_str(token).ok()?;
    (read == *value).then(|| token.to_string())
}

/// `-1`, `-.5`, `-.inf`: a leading `-` that starts a number, not a list item.
fn is_number_start(token: &str) -> bool {
    token
        .strip_prefix('-')
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_digit() || c == '.')
}

/// Splits an entry line (indentation removed) into its key token and the text after `:`.
fn split_entry(line: &str) -> Option<(&str, &str)> {
    let key_end = match line.chars().next()? {
        '"' => closing_quote(line, '"')? + 1,
        '\'' => closing_quote(line, '\'')? + 1,
        '?' | '-' | '#' | '[' | '{' => return None,
        _ => {
            let colon = line
                .char_indices()
                .find(|&(i, c)| c == ':' && line[i + 1..].chars().next().is_none_or(is_blank))?
                .0;
            let key = line[..colon].trim_end();
            return Some((key, &line[colon + 1..]));
        }
    };
    let rest = line[key_end..]
        .trim_start_matches(is_blank)
        .strip_prefix(':')?;
    Some((&line[..key_end], rest))
}

/// The byte index of the quote closing the one at index 0 (`\"` escapes in double quotes,
/// `''` in single quotes).
fn closing_quote(line: &str, quote: char) -> Option<usize> {
    let mut chars = line.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quote == '"' => {
                chars.next();
            }
            '\'' if quote == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            c if c == quote => return Some(i),
            _ => {}
        }
    }
    None
}

/// The one token in `rest` (the text after `:`), ignoring a trailing comment; `Some("")` when
/// there is nothing, `None` when there is more than one token.
fn single_token(rest: &str) -> Option<&str> {
    if !rest.is_empty() && !rest.starts_with(is_blank) {
        return None;
    }
    lone_token(rest.trim_start_matches(is_blank))
}

/// `text` (no leading blanks) when it is one token, optionally followed by a comment.
fn lone_token(text: &str) -> Option<&str> {
    if text.starts_with('#') {
        return Some("");
    }
    let (token, after) = text.split_at(text.find(is_blank).unwrap_or(text.len()));
    let after = after.trim_start_matches(is_blank);
    (after.is_empty() || after.starts_with('#')).then_some(token)
}

/// The token alone on the first content line after a key with an empty value, when that line
/// is indented deeper than the key.
fn next_line_token<'t>(
    lines: &[&'t str],
    from: usize,
    end: usize,
    key_indent: usize,
) -> Option<&'t str> {
    let line = lines[from..end].iter().find(|l| is_content(l))?;
    if indent(line) <= key_indent {
        return None;
    }
    lone_token(line.trim_start_matches(' ')).filter(|t| !t.is_empty())
}

/// A line that is neither blank nor only a comment.
fn is_content(line: &str) -> bool {
    let trimmed = line.trim_start_matches(is_blank);
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

//! Splitting a `SKILL.md` into YAML frontmatter and Markdown body.
//!
//! The parser is strict and total: it takes raw bytes, never panics, and either returns a
//! [`SkillFile`] whose frontmatter is a YAML mapping, or a [`ParseError`] that names the rule
//! broken and, where known, the line. It accepts CRLF line endings, a last line without a
//! newline, trailing spaces or tabs after a `---` delimiter, and `---` lines inside the body
//! (only the first `---` line after the opening one closes the frontmatter). It refuses a file over
//! [`MAX_SKILL_MD_BYTES`], a byte-order mark, non-UTF-8 bytes, a missing or unclosed frontmatter, a frontmatter over
//! [`MAX_FRONTMATTER_BYTES`] or past the bounds of [`yoi_core::yaml::check`], invalid YAML, duplicate keys and frontmatter that is not a mapping. Field rules live in [`crate::lint`].

use serde_yaml_ng::{Mapping, Value};
use thiserror::Error;

use crate::diagnostic::{rules, Diagnostic};

/// The frontmatter starts on this line of the file (line 1 is the opening `---`).
const FRONTMATTER_FIRST_LINE: u32 = 2;

/// Largest `SKILL.md` accepted, in bytes; the specification recommends under 500 lines.
pub const MAX_SKILL_MD_BYTES: usize = 1024 * 1024;

/// Largest frontmatter accepted, in bytes. Real frontmatter is a few KiB (the longest fields
/// are 1024 and 500 characters); the YAML scanner is quadratic in nesting depth, so an
/// unbounded block would let one file stall catalog loading.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// A `SKILL.md` whose structure is sound; its fields are not checked yet.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillFile {
    /// The frontmatter as parsed YAML, keys in file order.
    pub frontmatter: Mapping,
    /// The frontmatter text between the delimiters, with LF line endings.
    pub frontmatter_text: String,
    /// The body after the closing delimiter: CRLF turned into LF, leading blank lines and
    /// trailing whitespace removed.
    pub body: String,
    /// The 1-based file line of the body's first line.
    pub body_line: u32,
}

/// Why a `SKILL.md` could not be split into frontmatter and body.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    #[error("SKILL.md has more than {limit} bytes; move detail into files under references/")]
    TooLarge { limit: usize },
    #[error("SKILL.md starts with a UTF-8 byte-order mark; save it as UTF-8 without a BOM")]
    ByteOrderMark,
    #[error("SKILL.md is not valid UTF-8: first invalid byte at offset {offset} on line {line}")]
    NotUtf8 { offset: usize, line: u32 },
    #[error("SKILL.md must start with a `---` line that opens the YAML frontmatter")]
    MissingFrontmatter,
    #[error("the frontmatter opened on line 1 is never closed by a `---` line")]
    Unclosed,
    #[error("the frontmatter has {bytes} bytes; at most {limit} are accepted")]
    FrontmatterTooLarge { bytes: usize, limit: usize },
    #[error("invalid YAML in the frontmatter: {reason}")]
    Yaml { line: Option<u32>, reason: String },
    #[error("the frontmatter must be a YAML mapping of fields, found {found}")]
    NotMapping { found: &'static str },
    #[error("the frontmatter key `{key}` appears more than once")]
    DuplicateKey { key: String, line: Option<u32> },
}

impl ParseError {
    /// The lint rule this error breaks.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::TooLarge { .. } => rules::FILE_SIZE,
            Self::ByteOrderMark => rules::FILE_BOM,
            Self::NotUtf8 { .. } => rules::FILE_UTF8,
            Self::MissingFrontmatter => rules::FM_START,
            Self::Unclosed => rules::FM_CLOSE,
            Self::FrontmatterTooLarge { .. } => rules::FM_SIZE,
            Self::Yaml { .. } => rules::FM_YAML,
            Self::NotMapping { .. } => rules::FM_MAPPING,
            Self::DuplicateKey { .. } => rules::FM_DUPLICATE_KEY,
        }
    }

    /// The 1-based file line the error points at, when known.
    pub fn line(&self) -> Option<u32> {
        match self {
            Self::TooLarge { .. } => None,
            Self::ByteOrderMark | Self::MissingFrontmatter | Self::Unclosed => Some(1),
            Self::NotUtf8 { line, .. } => Some(*line),
            Self::Yaml { line, .. } | Self::DuplicateKey { line, .. } => *line,
            Self::NotMapping { .. } | Self::FrontmatterTooLarge { .. } => {
                Some(FRONTMATTER_FIRST_LINE)
            }
        }
    }

    /// The error as an error-severity lint diagnostic.
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(self.rule(), self.to_string(), self.line())
    }
}

/// Parses raw `SKILL.md` bytes.
pub fn parse_skill_md(bytes: &[u8]) -> Result<SkillFile, ParseError> {
    if bytes.len() > MAX_SKILL_MD_BYTES {
        return Err(ParseError::TooLarge {
            limit: MAX_SKILL_MD_BYTES,
        });
    }
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(ParseError::ByteOrderMark);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        ParseError::NotUtf8 {
            offset,
            line: line_of_offset(bytes, offset),
        }
    })?;

    let mut lines = text.split('\n');
    match lines.next() {
        Some(first) if is_delimiter(first) => {}
        _ => return Err(ParseError::MissingFrontmatter),
    }
    let mut frontmatter_lines = Vec::new();
    let mut closing_line = None;
    for (index, line) in lines.by_ref().enumerate() {
        if is_delimiter(line) {
            closing_line = Some(FRONTMATTER_FIRST_LINE + index as u32);
            break;
        }
        frontmatter_lines.push(line.strip_suffix('\r').unwrap_or(line));
    }
    let closing_line = closing_line.ok_or(ParseError::Unclosed)?;
    let frontmatter_text = frontmatter_lines.join("\n");
    if frontmatter_text.len() > MAX_FRONTMATTER_BYTES {
        return Err(ParseError::FrontmatterTooLarge {
            bytes: frontmatter_text.len(),
            limit: MAX_FRONTMATTER_BYTES,
        });
    }
    let frontmatter = parse_frontmatter(&frontmatter_text)?;

    let rest: Vec<&str> = lines.collect();
    let leading_blank = rest.iter().take_while(|l| l.trim().is_empty()).count();
    let body = rest[leading_blank..]
        .iter()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string();
    Ok(SkillFile {
        frontmatter,
        frontmatter_text,
        body,
        body_line: closing_line + 1 + leading_blank as u32,
    })
}

/// A delimiter line is `---`, optionally followed by spaces or tabs and a carriage return.
fn is_delimiter(line: &str) -> bool {
    line.trim_end_matches(['\r', ' ', '\t']) == "---"
}

fn line_of_offset(bytes: &[u8], offset: usize) -> u32 {
    let newlines = bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count();
    u32::try_from(newlines + 1).unwrap_or(u32::MAX)
}

fn parse_frontmatter(text: &str) -> Result<Mapping, ParseError> {
    if let Err(refused) = yoi_core::yaml::check(text) {
        let line = match refused {
            yoi_core::yaml::Refused::Brackets { line } => Some(to_file_line(line)),
            yoi_core::yaml::Refused::Expansion { .. } => None,
        };
        return Err(ParseError::Yaml {
            line,
            reason: refused.to_string(),
        });
    }
    let value: Value = serde_yaml_ng::from_str(text).map_err(|e| yaml_error(text, &e))?;
    match value {
        Value::Mapping(mapping) => Ok(mapping),
        Value::Null => Err(ParseError::NotMapping {
            found: "nothing (the frontmatter is empty)",
        }),
        Value::Sequence(_) => Err(ParseError::NotMapping { found: "a list" }),
        Value::Tagged(_) => Err(ParseError::NotMapping {
            found: "a tagged value",
        }),
        Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            Err(ParseError::NotMapping { found: "a scalar" })
        }
    }
}

/// Turns a YAML error into a parse error with file lines (YAML lines are frontmatter-relative).
fn yaml_error(text: &str, error: &serde_yaml_ng::Error) -> ParseError {
    let yaml_line = error.location().map(|l| l.line());
    let message = error.to_string();
    if let Some(key) = duplicate_key(&message) {
        let column = error.location().map_or(1, |l| l.column());
        let line = yaml_line
            .and_then(|start| second_occurrence(text, &key, start, column))
            .or(yaml_line);
        return ParseError::DuplicateKey {
            key,
            line: line.map(to_file_line),
        };
    }
    ParseError::Yaml {
        line: yaml_line.map(to_file_line),
        reason: shift_line_numbers(&message, FRONTMATTER_FIRST_LINE - 1),
    }
}

fn to_file_line(yaml_line: usize) -> u32 {
    u32::try_from(yaml_line)
        .unwrap_or(u32::MAX)
        .saturating_add(FRONTMATTER_FIRST_LINE - 1)
}

/// Extracts `k` from serde_yaml_ng's `duplicate entry with key "k"` message.
fn duplicate_key(message: &str) -> Option<String> {
    let at = message.find("duplicate entry")?;
    let rest = &message[at + "duplicate entry".len()..];
    let key = rest
        .strip_prefix(" with key ")
        .map(|k| k.split(" at line ").next().unwrap_or(k))
        .unwrap_or("(complex key)");
    Some(key.trim_matches(['"', '`']).to_string())
}

/// Finds the 1-based line of the second `key:` at the mapping's indentation, from `start_line`.
fn second_occurrence(text: &str, key: &str, start_line: usize, column: usize) -> Option<usize> {
    let indent = column.saturating_sub(1);
    let forms = [key.to_string(), format!("\"{key}\""), format!("'{key}'")];
    text.split('\n')
        .enumerate()
        .skip(start_line.saturating_sub(1))
        .filter(|(_, line)| {
            let (spaces, rest) = line.split_at(line.len() - line.trim_start_matches(' ').len());
            spaces.len() == indent
                && forms.iter().any(|form| {
                    rest.strip_prefix(form.as_str())
                        .is_some_and(|after| after.trim_start().starts_with(':'))
                })
        })
        .nth(1)
        .map(|(index, _)| index + 1)
}

/// Adds `offset` to every `line N` in a YAML error message so it matches the file.
fn shift_line_numbers(message: &str, offset: u32) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let (before, after) = rest.split_at(at + "line ".len());
        out.push_str(before);
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<u32>() {
            Ok(n) => out.push_str(&n.saturating_add(offset).to_string()),
            Err(_) => out.push_str(&after[..digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

impl ParseError {
    /// The class an entry point maps to an exit code and HTTP status.
    /// A `SKILL.md` that does not parse is a malformed file on disk.
    pub fn class(&self) -> yoi_core::ErrorClass {
        use yoi_core::ErrorClass as C;
        match self {
            ParseError::TooLarge { .. }
            | ParseError::ByteOrderMark
            | ParseError::NotUtf8 { .. }
            | ParseError::MissingFrontmatter
            | ParseError::Unclosed
            | ParseError::FrontmatterTooLarge { .. }
            | ParseError::Yaml { .. }
            | ParseError::NotMapping { .. }
            | ParseError::DuplicateKey { .. } => C::Corrupt,
        }
    }
}

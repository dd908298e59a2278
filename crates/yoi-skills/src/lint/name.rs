//! The `name` rules: length, ASCII charset, hyphens, and equality with the directory.

use unicode_normalization::UnicodeNormalization;

use super::NAME_MAX_CHARS;
use crate::diagnostic::{rules, Diagnostic};

/// True when `name` passes every name rule except the directory match.
pub fn is_valid_name(name: &str) -> bool {
    check_name(name, None).is_empty()
}

/// Checks a skill name; with `dir_name`, also that it equals the directory name exactly.
///
/// Diagnostics carry no line; the caller adds the frontmatter line of `name`.
pub fn check_name(name: &str, dir_name: Option<&str>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let chars = name.chars().count();
    if chars == 0 {
        out.push(Diagnostic::error(
            rules::NAME_LENGTH,
            "name is empty; it needs 1 to 64 characters",
            None,
        ));
        return out;
    }
    if chars > NAME_MAX_CHARS {
        out.push(Diagnostic::error(
            rules::NAME_LENGTH,
            format!("name has {chars} characters; at most {NAME_MAX_CHARS} are allowed"),
            None,
        ));
    }
    if name.chars().any(|c| c.is_ascii_uppercase()) {
        out.push(Diagnostic::error(
            rules::NAME_CASE,
            format!("name `{name}` contains uppercase letters; use lowercase `a-z`"),
            None,
        ));
    }
    let bad: Vec<char> = name
        .chars()
        .filter(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        .filter(|c| !c.is_ascii_uppercase())
        .collect();
    if !bad.is_empty() {
        out.push(Diagnostic::error(
            rules::NAME_CHARSET,
            charset_message(name, &bad),
            None,
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push(Diagnostic::error(
            rules::NAME_HYPHEN_EDGE,
            format!("name `{name}` must not start or end with a hyphen"),
            None,
        ));
    }
    if name.contains("--") {
        out.push(Diagnostic::error(
            rules::NAME_HYPHEN_DOUBLE,
            format!("name `{name}` must not contain two hyphens in a row"),
            None,
        ));
    }
    if let Some(dir) = dir_name {
        if dir != name {
            out.push(Diagnostic::error(
                rules::NAME_DIR_MATCH,
                format!(
                    "name `{name}` differs from its directory `{dir}`; they must be identical \
                     (compared exactly, without case folding or Unicode normalisation)"
                ),
                None,
            ));
        }
    }
    out
}

fn charset_message(name: &str, bad: &[char]) -> String {
    let mut shown: Vec<String> = Vec::new();
    for c in bad {
        let s = format!("{c:?} (U+{:04X})", u32::from(*c));
        if !shown.contains(&s) && shown.len() < 5 {
            shown.push(s);
        }
    }
    let mut message = format!(
        "name `{name}` may only contain ASCII lowercase letters, digits and hyphens \
         (`a-z`, `0-9`, `-`); found {}",
        shown.join(", ")
    );
    let nfkc: String = name.nfkc().collect();
    if nfkc != name && check_name(&nfkc, None).is_empty() {
        message.push_str(&format!(
            "; its NFKC form `{nfkc}` would be valid, but yoi does not normalise names"
        ));
    }
    message
}

//! Body advice: size, and references that leave the skill folder.
//!
//! Both are recommendations in the specification, so they only ever produce advice. References
//! are Markdown link targets (inline `[t](x)` / `![t](x)` and definitions `[t]: x`) plus bare
//! `../` paths in prose; fenced code blocks are skipped because shell snippets such as `cd ..`
//! are not references to bundled files.

use super::BODY_MAX_LINES;
use crate::diagnostic::{rules, Diagnostic};

pub(super) fn check_body(body: &str, body_line: u32, out: &mut Vec<Diagnostic>) {
    let lines = if body.is_empty() {
        0
    } else {
        body.split('\n').count()
    };
    if lines > BODY_MAX_LINES {
        out.push(Diagnostic::advice(
            rules::BODY_SIZE,
            format!(
                "the body has {lines} lines; keep SKILL.md under {BODY_MAX_LINES} lines and move \
                 detail into files under references/"
            ),
            Some(body_line.saturating_add(BODY_MAX_LINES as u32)),
        ));
    }

    let mut fence: Option<&str> = None;
    for (index, line) in body.split('\n').enumerate() {
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        for target in references(line) {
            if escapes(target) && !seen.contains(&target) {
                seen.push(target);
                out.push(Diagnostic::advice(
                    rules::REF_ESCAPE,
                    format!(
                        "reference `{target}` leaves the skill folder; bundle the file in the \
                         skill and refer to it relative to the skill root"
                    ),
                    Some(body_line.saturating_add(index as u32)),
                ));
            }
        }
    }
}

/// Candidate references on one line: link targets and bare `../` paths.
fn references(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let target = after
            .strip_prefix('<')
            .map(|t| t.split('>').next().unwrap_or(t))
            .unwrap_or_else(|| {
                after
                    .split(|c: char| c == ')' || c.is_whitespace())
                    .next()
                    .unwrap_or(after)
            });
        found.push(target);
        rest = after;
    }
    let stripped = line.trim_start();
    if stripped.starts_with('[') {
        if let Some(close) = stripped.find("]:") {
            if let Some(target) = stripped[close + 2..].split_whitespace().next() {
                found.push(target.trim_start_matches('<').trim_end_matches('>'));
            }
        }
    }
    let boundary = |c: char| c.is_whitespace() || matches!(c, '`' | '(' | '"' | '\'' | '<');
    let mut offset = 0;
    while let Some(at) = line[offset..].find("../") {
        let start = offset + at;
        let preceded_ok = line[..start].chars().next_back().is_none_or(boundary);
        if preceded_ok {
            let token = line[start..]
                .split(|c: char| boundary(c) || matches!(c, ')' | '>' | ','))
                .next()
                .unwrap_or("");
            found.push(token);
        }
        offset = start + 3;
    }
    found
}

/// True when a reference is absolute, home-relative, or climbs above the skill root.
fn escapes(target: &str) -> bool {
    if target.is_empty() || target.starts_with('#') {
        return false;
    }
    if target.starts_with('/') || target.starts_with('\\') || target.starts_with('~') {
        return true;
    }
    let bytes = target.as_bytes();
    if bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'/' | b'\\')
    {
        return true;
    }
    if has_scheme(target) {
        return false;
    }
    let mut depth: i32 = 0;
    for part in target.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}

/// `https:`, `mailto:` and friends: a letter, then letters, digits, `+`, `-` or `.`, then `:`.
fn has_scheme(target: &str) -> bool {
    let Some(colon) = target.find(':') else {
        return false;
    };
    let scheme = &target[..colon];
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

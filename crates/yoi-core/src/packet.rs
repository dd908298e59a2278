//! The IntentPacket: the typed brief a ticket is accepted with, frozen and given to every pod.
//!
//! It is read from the ticket body's `##` sections (see [`crate::brief`] for headings, aliases
//! and placeholders) or submitted whole as JSON by an intake pod. This module only parses,
//! renders and hashes; it does not decide whether a ticket may proceed (that is the router's
//! job, using [`IntentPacket::completeness`]).
//!
//! Parsing rules, per section (missing or placeholder-only sections give an empty value):
//! - **Prose sections** (Intent, Implementation latitude) keep the section text, trimmed, with
//!   HTML comments removed; line breaks inside it are kept.
//! - **List sections** (all others) are read line by line, HTML comments removed first:
//!   - a bullet item (`- `, `* `, `+ `, or `1. ` / `1) `) starts an entry; following non-blank
//!     lines that are not themselves items continue it, joined with a single space;
//!   - consecutive non-blank lines outside an item form a paragraph, which is one entry;
//!   - a blank line ends the current item or paragraph; `###` sub-headings end it and are
//!     dropped;
//!   - inside a code fence (```` ``` ```` or `~~~`) every non-blank line is one entry, with a
//!     leading `$ ` shell prompt removed;
//!   - entries that are placeholders (`TBD`, `TODO`, `未定`, `...`) are dropped.
//! - **Code sections** (Validation, Code map, Write scope): an entry that contains inline code
//!   spans contributes the content of each span instead (so ``- `cargo test` — unit tests``
//!   gives `cargo test`); an entry without a span is kept whole. Elsewhere spans are kept as
//!   written, backticks included.
//!
//! Rendering ([`IntentPacket::render_markdown`]) writes the sections in field order with the
//! English headings; lists become `- ` bullets, code-section entries become code spans. An
//! empty optional section is omitted; an empty required section is written with the body `TBD`,
//! so a reader sees the gap and [`crate::brief`] still reports it missing. Parsing a rendered
//! packet gives the packet back when every entry is a non-empty single line without leading or
//! trailing whitespace that is not itself a placeholder.
//!
//! The content hash ([`IntentPacket::frozen`]) is the SHA-256, in lower-case hex, of
//! [`IntentPacket::to_canonical_json`]: one JSON object with every field present, in
//! declaration order, no whitespace between tokens, strings escaped by `serde_json` (non-ASCII
//! text kept as UTF-8). Adding a field changes every hash, so fields are only ever appended.

use serde::{Deserialize, Serialize};

use crate::brief::{self, Section};

/// The typed brief. Field names are the stable JSON names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default)]
pub struct IntentPacket {
    pub intent: String,
    pub binding_decisions: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub implementation_latitude: String,
    pub escalate_if: Vec<String>,
    /// Commands to run (as written; callers split them into argv).
    pub validation: Vec<String>,
    /// Paths worth reading first.
    pub code_map: Vec<String>,
    pub critical_risks: Vec<String>,
    /// Paths or globs this ticket may write; see [`crate::scope`].
    pub write_scope: Vec<String>,
}

/// Which sections a packet lacks, each list in [`Section::ALL`] order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Completeness {
    /// Missing sections that block mark-ready and acceptance.
    pub missing_required: Vec<Section>,
    /// Missing sections that are only reported.
    pub missing_optional: Vec<Section>,
}

impl Completeness {
    pub fn is_complete(&self) -> bool {
        self.missing_required.is_empty()
    }
}

/// A packet fixed at acceptance, with the hash every pod can check it against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FrozenPacket {
    pub packet: IntentPacket,
    /// Lower-case hex SHA-256 of the packet's canonical JSON.
    pub content_hash: String,
    /// The Validation section split into what the verifier runs and what a reviewer checks by
    /// hand, as read from the body at freezing (outside the hash: packets frozen before this
    /// field existed have none, and their verification runs nothing).
    #[serde(default)]
    pub checks: ValidationChecks,
    /// The flow the ticket runs, frozen with the packet so a flow file edited while the ticket
    /// is in progress changes nothing for it (outside the hash; absent: the built-in flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<crate::flow::Flow>,
}

/// A brief's Validation section for the verifier: `commands` are the inline code spans and the
/// lines of code fences, each run with `sh -c` as CI systems do; `manual` are the entries
/// without code, listed for the reviewer and never executed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ValidationChecks {
    pub commands: Vec<String>,
    pub manual: Vec<String>,
}

/// The [`ValidationChecks`] of a ticket body.
pub fn validation_checks(body: &str) -> ValidationChecks {
    let mut checks = ValidationChecks::default();
    let Some(content) = brief::section(body, Section::Validation).map(|c| strip_comments(&c))
    else {
        return checks;
    };
    for (entry, fenced) in raw_entries(&content) {
        if fenced {
            checks.commands.push(entry);
            continue;
        }
        let spans = code_spans(&entry);
        if spans.is_empty() {
            if !is_placeholder(&entry) {
                checks.manual.push(entry);
            }
        } else {
            checks
                .commands
                .extend(spans.into_iter().filter(|s| !s.trim().is_empty()));
        }
    }
    checks
}

impl FrozenPacket {
    /// Whether the hash still matches the packet (a file edited after freezing does not).
    pub fn verify(&self) -> bool {
        self.packet.content_hash() == self.content_hash
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prose,
    List,
    Code,
}

fn kind(section: Section) -> Kind {
    match section {
        Section::Intent | Section::ImplementationLatitude => Kind::Prose,
        Section::Validation | Section::CodeMap | Section::WriteScope => Kind::Code,
        _ => Kind::List,
    }
}

/// Field order, which is also the rendering order.
const FIELD_ORDER: [Section; 9] = [
    Section::Intent,
    Section::BindingDecisions,
    Section::AcceptanceCriteria,
    Section::ImplementationLatitude,
    Section::EscalateIf,
    Section::Validation,
    Section::CodeMap,
    Section::CriticalRisks,
    Section::WriteScope,
];

impl IntentPacket {
    /// Read the packet from a ticket body's sections.
    pub fn from_body(body: &str) -> IntentPacket {
        let mut p = IntentPacket::default();
        for s in Section::ALL {
            let content = brief::section(body, s).map(|c| strip_comments(&c));
            let Some(content) = content else { continue };
            match kind(s) {
                Kind::Prose => *p.text_mut(s) = content.trim().to_string(),
                k => *p.list_mut(s) = parse_list(&content, k == Kind::Code),
            }
        }
        p
    }

    /// Which sections are empty.
    pub fn completeness(&self) -> Completeness {
        let mut c = Completeness::default();
        for s in Section::ALL {
            if self.is_empty(s) {
                if Section::REQUIRED.contains(&s) {
                    c.missing_required.push(s);
                } else {
                    c.missing_optional.push(s);
                }
            }
        }
        c
    }

    /// Canonical JSON: all fields in declaration order, no whitespace.
    pub fn to_canonical_json(&self) -> String {
        serde_json::to_string(self).expect("a struct of strings always serializes")
    }

    /// Lower-case hex SHA-256 of [`Self::to_canonical_json`].
    pub fn content_hash(&self) -> String {
        crate::sha256_hex(self.to_canonical_json().as_bytes())
    }

    /// Freeze a copy with its content hash.
    pub fn frozen(&self) -> FrozenPacket {
        FrozenPacket {
            packet: self.clone(),
            content_hash: self.content_hash(),
            checks: ValidationChecks::default(),
            flow: None,
        }
    }

    /// Freeze the packet of `body`, with its validation checks.
    pub fn freeze_body(body: &str) -> FrozenPacket {
        FrozenPacket {
            checks: validation_checks(body),
            ..IntentPacket::from_body(body).frozen()
        }
    }

    /// `body` with its brief sections (every `##` section whose heading names a brief section,
    /// in English or Japanese) replaced by this packet's [`Self::render_markdown`]. Everything
    /// else — text before the first heading, other sections, `#` headings — stays in place; the
    /// packet goes where the first brief section was, or at the end. Headings inside code
    /// fences are content, not headings.
    pub fn apply_to_body(&self, body: &str) -> String {
        let mut kept: Vec<&str> = Vec::new();
        let mut insert_at: Option<usize> = None;
        let mut skipping = false;
        let mut fence: Option<&str> = None;
        for line in body.lines() {
            let trimmed = line.trim_start();
            let mut heading: Option<Option<&str>> = None;
            if let Some(marker) = fence {
                if trimmed.starts_with(marker) {
                    fence = None;
                }
            } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                fence = Some(&trimmed[..3]);
            } else if let Some(h) = line.strip_prefix("## ") {
                heading = Some(Some(h.trim()));
            } else if line.starts_with("# ") {
                heading = Some(None);
            }
            if let Some(h) = heading {
                skipping = h.and_then(Section::from_heading).is_some();
                if skipping && insert_at.is_none() {
                    insert_at = Some(kept.len());
                }
            }
            if !skipping {
                kept.push(line);
            }
        }
        let at = insert_at.unwrap_or(kept.len());
        let before = kept[..at].join("\n");
        let after = kept[at..].join("\n");
        let mut out = String::new();
        let rendered = self.render_markdown();
        for part in [&before, &rendered, &after].map(|p| trim_blank_lines(p)) {
            if part.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(part);
        }
        out.push('\n');
        out
    }

    /// The Markdown shown in the decision event; see the module doc for the exact shape.
    pub fn render_markdown(&self) -> String {
        let mut out = String::new();
        for s in FIELD_ORDER {
            let required = Section::REQUIRED.contains(&s);
            if self.is_empty(s) && !required {
                continue;
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("## ");
            out.push_str(s.heading());
            out.push_str("\n\n");
            if self.is_empty(s) {
                out.push_str("TBD\n");
                continue;
            }
            match kind(s) {
                Kind::Prose => {
                    out.push_str(self.text(s));
                    out.push('\n');
                }
                k => {
                    for entry in self.list(s) {
                        out.push_str("- ");
                        if k == Kind::Code {
                            out.push_str(&code_span(entry));
                        } else {
                            out.push_str(entry);
                        }
                        out.push('\n');
                    }
                }
            }
        }
        out
    }

    fn is_empty(&self, s: Section) -> bool {
        match kind(s) {
            Kind::Prose => self.text(s).trim().is_empty(),
            _ => self.list(s).is_empty(),
        }
    }

    fn text(&self, s: Section) -> &str {
        match s {
            Section::Intent => &self.intent,
            _ => &self.implementation_latitude,
        }
    }

    fn text_mut(&mut self, s: Section) -> &mut String {
        match s {
            Section::Intent => &mut self.intent,
            _ => &mut self.implementation_latitude,
        }
    }

    fn list(&self, s: Section) -> &[String] {
        match s {
            Section::BindingDecisions => &self.binding_decisions,
            Section::AcceptanceCriteria => &self.acceptance_criteria,
            Section::EscalateIf => &self.escalate_if,
            Section::Validation => &self.validation,
            Section::CodeMap => &self.code_map,
            Section::CriticalRisks => &self.critical_risks,
            _ => &self.write_scope,
        }
    }

    fn list_mut(&mut self, s: Section) -> &mut Vec<String> {
        match s {
            Section::BindingDecisions => &mut self.binding_decisions,
            Section::AcceptanceCriteria => &mut self.acceptance_criteria,
            Section::EscalateIf => &mut self.escalate_if,
            Section::Validation => &mut self.validation,
            Section::CodeMap => &mut self.code_map,
            Section::CriticalRisks => &mut self.critical_risks,
            _ => &mut self.write_scope,
        }
    }
}

fn strip_comments(text: &str) -> String {
    let mut rest = text.to_string();
    while let Some(start) = rest.find("<!--") {
        match rest[start..].find("-->") {
            Some(end) => rest.replace_range(start..start + end + 3, ""),
            None => rest.truncate(start),
        }
    }
    rest
}

fn is_placeholder(entry: &str) -> bool {
    let l = entry.trim().trim_end_matches('.').to_lowercase();
    l.is_empty() || matches!(l.as_str(), "tbd" | "todo" | "未定" | "…")
}

fn is_heading(line: &str) -> bool {
    let rest = line.trim_start_matches('#');
    rest.len() < line.len() && (rest.is_empty() || rest.starts_with(' '))
}

/// The text after a list marker, if the line is a list item.
fn item_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(marker) {
            return Some(rest);
        }
    }
    if matches!(t, "-" | "*" | "+") {
        return Some("");
    }
    let digits = t.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits <= 9 {
        let rest = &t[digits..];
        for marker in [". ", ") "] {
            if let Some(rest) = rest.strip_prefix(marker) {
                return Some(rest);
            }
        }
    }
    None
}

fn parse_list(content: &str, code: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (entry, fenced) in raw_entries(content) {
        if code && !fenced {
            let spans = code_spans(&entry);
            if !spans.is_empty() {
                out.extend(spans.into_iter().filter(|s| !s.trim().is_empty()));
                continue;
            }
        }
        if !is_placeholder(&entry) {
            out.push(entry);
        }
    }
    out
}

/// A list section's entries, each with whether it came from a code fence.
fn raw_entries(content: &str) -> Vec<(String, bool)> {
    let mut raw: Vec<(String, bool)> = Vec::new(); // (entry, from a fence)
    let mut current: Option<String> = None;
    let mut fence: Option<&str> = None;
    let flush = |current: &mut Option<String>, raw: &mut Vec<(String, bool)>| {
        if let Some(c) = current.take() {
            raw.push((c.trim().to_string(), false));
        }
    };
    for line in content.lines() {
        let t = line.trim();
        if let Some(marker) = fence {
            if t.starts_with(marker) {
                fence = None;
            } else if !t.is_empty() {
                let cmd = t.strip_prefix("$ ").unwrap_or(t).trim();
                raw.push((cmd.to_string(), true));
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            flush(&mut current, &mut raw);
            fence = Some(&t[..3]);
        } else if t.is_empty() || is_heading(t) {
            flush(&mut current, &mut raw);
        } else if let Some(text) = item_text(line) {
            flush(&mut current, &mut raw);
            current = Some(text.trim().to_string());
        } else {
            let c = current.get_or_insert_with(String::new);
            if !c.is_empty() {
                c.push(' ');
            }
            c.push_str(t);
        }
    }
    flush(&mut current, &mut raw);
    raw
}

/// The contents of the inline code spans in `text` (CommonMark: a run of N backticks closes at
/// the next run of exactly N; one space is stripped from each end when both ends have one).
fn code_spans(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let open = run_at(i);
        let start = i + open;
        let mut j = start;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let n = run_at(j);
                if n == open {
                    close = Some(j);
                    break;
                }
                j += n;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                let mut s: String = chars[start..end].iter().collect();
                if s.len() >= 2 && s.starts_with(' ') && s.ends_with(' ') && !s.trim().is_empty() {
                    s = s[1..s.len() - 1].to_string();
                }
                spans.push(s);
                i = end + open;
            }
            // An unmatched run is literal text.
            None => i = start,
        }
    }
    spans
}

/// Wrap `text` in a code span that [`code_spans`] reads back exactly.
fn code_span(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' ') && !text.trim().is_empty());
    if pad {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

/// `text` without its leading and trailing blank lines (indentation of the first kept line
/// stays).
fn trim_blank_lines(text: &str) -> &str {
    let start = text
        .lines()
        .take_while(|l| l.trim().is_empty())
        .map(|l| l.len() + 1)
        .sum::<usize>()
        .min(text.len());
    text[start..].trim_end()
}

#[cfg(test)]
mod tests;

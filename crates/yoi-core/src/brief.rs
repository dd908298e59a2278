//! The brief inside a ticket body: Markdown `##` sections with known names, in English or
//! Japanese. `mark-ready` (and later acceptance) needs the required ones with real content.
//!
//! A section runs from its `## Heading` line to the next `##` (or `#`) heading outside a code
//! fence. Content that is only whitespace, HTML comments or a placeholder (`TBD`, `TODO`, `未定`,
//! `...`) counts as missing.

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    Intent,
    AcceptanceCriteria,
    Validation,
    BindingDecisions,
    ImplementationLatitude,
    EscalateIf,
    CriticalRisks,
    CodeMap,
    WriteScope,
}

impl Section {
    pub const ALL: [Section; 9] = [
        Section::Intent,
        Section::AcceptanceCriteria,
        Section::Validation,
        Section::BindingDecisions,
        Section::ImplementationLatitude,
        Section::EscalateIf,
        Section::CriticalRisks,
        Section::CodeMap,
        Section::WriteScope,
    ];

    /// Sections without which a ticket cannot be marked ready or accepted.
    pub const REQUIRED: [Section; 3] = [
        Section::Intent,
        Section::AcceptanceCriteria,
        Section::Validation,
    ];

    /// The heading a person should write.
    pub fn heading(self) -> &'static str {
        match self {
            Section::Intent => "Intent",
            Section::AcceptanceCriteria => "Acceptance criteria",
            Section::Validation => "Validation",
            Section::BindingDecisions => "Binding decisions / invariants",
            Section::ImplementationLatitude => "Implementation latitude",
            Section::EscalateIf => "Escalate if",
            Section::CriticalRisks => "Critical risks / reviewer focus",
            Section::CodeMap => "Code map",
            Section::WriteScope => "Write scope",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Section::Intent => &["intent", "意図"],
            Section::AcceptanceCriteria => &["acceptance criteria", "受け入れ条件", "受入条件"],
            Section::Validation => &["validation", "検証"],
            Section::BindingDecisions => &[
                "binding decisions / invariants",
                "binding decisions",
                "invariants",
                "決定事項",
                "不変条件",
            ],
            Section::ImplementationLatitude => &["implementation latitude", "実装の裁量"],
            Section::EscalateIf => &[
                "escalate if",
                "escalation conditions",
                "エスカレーション条件",
            ],
            Section::CriticalRisks => &[
                "critical risks / reviewer focus",
                "critical risks",
                "reviewer focus",
                "重大なリスク",
                "レビュー観点",
            ],
            Section::CodeMap => &["code map", "コードマップ"],
            Section::WriteScope => &["write scope", "書き込み範囲"],
        }
    }

    /// Match a heading text (without the `##`).
    pub fn from_heading(text: &str) -> Option<Section> {
        let norm = text
            .trim()
            .trim_end_matches([':', '：'])
            .trim()
            .to_lowercase();
        Section::ALL
            .into_iter()
            .find(|s| s.aliases().iter().any(|a| *a == norm))
    }
}

/// The `##` sections of a body, in order, as (heading text, content).
pub fn sections(body: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_fence: Option<&str> = None;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if let Some(marker) = in_fence {
            if trimmed.starts_with(marker) {
                in_fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = Some(&trimmed[..3]);
        } else if let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), String::new()));
            continue;
        } else if line.starts_with("# ") {
            out.push((String::new(), String::new()));
            continue;
        }
        if let Some((_, content)) = out.last_mut() {
            content.push_str(line);
            content.push('\n');
        }
    }
    out.retain(|(h, _)| !h.is_empty());
    out
}

/// Content of a known section (the first one with real content wins).
pub fn section(body: &str, which: Section) -> Option<String> {
    sections(body)
        .into_iter()
        .filter(|(h, _)| Section::from_heading(h) == Some(which))
        .map(|(_, c)| c.trim().to_string())
        .find(|c| has_content(c))
}

/// Required sections that are missing or empty.
pub fn missing_required(body: &str) -> Vec<Section> {
    Section::REQUIRED
        .into_iter()
        .filter(|s| section(body, *s).is_none())
        .collect()
}

/// What a brief says and lacks, as the dashboard shows it while a person writes one: the same
/// rule `mark-ready` applies ([`missing_required`]), plus what would help an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lint {
    /// Known sections with real content, in [`Section::ALL`] order.
    pub present: Vec<Section>,
    /// Required sections missing or empty: `mark-ready` refuses until there are none.
    pub missing_required: Vec<Section>,
    /// Other known sections missing or empty (the brief is complete without them).
    pub missing_optional: Vec<Section>,
    /// `##` headings that name no known section (perhaps a misspelling), as written.
    pub unknown_headings: Vec<String>,
}

impl Lint {
    /// Whether `mark-ready` would take this brief.
    pub fn ready(&self) -> bool {
        self.missing_required.is_empty()
    }
}

/// Lint a ticket body's brief.
pub fn lint(body: &str) -> Lint {
    let all = sections(body);
    let present: Vec<Section> = Section::ALL
        .into_iter()
        .filter(|s| section(body, *s).is_some())
        .collect();
    Lint {
        missing_required: Section::REQUIRED
            .into_iter()
            .filter(|s| !present.contains(s))
            .collect(),
        missing_optional: Section::ALL
            .into_iter()
            .filter(|s| !Section::REQUIRED.contains(s) && !present.contains(s))
            .collect(),
        unknown_headings: all
            .into_iter()
            .map(|(h, _)| h)
            .filter(|h| Section::from_heading(h).is_none())
            .collect(),
        present,
    }
}

/// The body a new ticket starts from: every known section's heading, the required ones first,
/// each with a comment saying what it holds (a comment is no content, so an untouched section
/// still lints as missing).
pub fn template() -> String {
    let hint = |s: Section| match s {
        Section::Intent => "What should be true when this is done, and why.",
        Section::AcceptanceCriteria => "- one checkable statement per line",
        Section::Validation => "`a command that exits 0 when the work is right`, one per line",
        Section::BindingDecisions => "Decisions already made that the agent must follow.",
        Section::ImplementationLatitude => "What the agent may decide itself.",
        Section::EscalateIf => "When the agent should stop and ask a person instead of guessing.",
        Section::CriticalRisks => "What must not break.",
        Section::CodeMap => "Where in the code to look.",
        Section::WriteScope => "- paths the change may touch, e.g. `src/**`",
    };
    Section::ALL
        .into_iter()
        .map(|s| {
            format!(
                "## {}

<!-- {} -->
",
                s.heading(),
                hint(s)
            )
        })
        .collect::<Vec<_>>()
        .join(
            "
",
        )
}

fn has_content(text: &str) -> bool {
    let mut rest = text.to_string();
    while let Some(start) = rest.find("<!--") {
        match rest[start..].find("-->") {
            Some(end) => rest.replace_range(start..start + end + 3, ""),
            None => rest.truncate(start),
        }
    }
    rest.lines().any(|l| {
        let l = l
            .trim()
            .trim_start_matches(['-', '*', '+'])
            .trim()
            .trim_end_matches('.')
            .to_lowercase();
        !l.is_empty() && !matches!(l.as_str(), "tbd" | "todo" | "未定" | "" | "…")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_required_sections_in_english_and_japanese() {
        let body =
            "## Intent\nDo it.\n\n## 受け入れ条件\n- works\n\n## Validation:\n`cargo test`\n";
        assert!(missing_required(body).is_empty());
        assert_eq!(section(body, Section::Intent).as_deref(), Some("Do it."));
    }

    #[test]
    fn placeholders_comments_and_fenced_headings_do_not_count() {
        let body = "## INTENT\n<!-- fill me -->\n\n## Acceptance criteria\n- TBD\n\n## Notes\n```\n## Validation\nx\n```\n";
        assert_eq!(
            missing_required(body),
            vec![
                Section::Intent,
                Section::AcceptanceCriteria,
                Section::Validation
            ]
        );
        assert_eq!(missing_required("## 意図\n未定\n## 検証\n...\n").len(), 3);
    }

    #[test]
    fn level_three_headings_stay_inside_their_section() {
        let body = "## Validation\n### unit\ncargo test\n# Appendix\n";
        assert_eq!(
            section(body, Section::Validation).as_deref(),
            Some("### unit\ncargo test")
        );
    }

    #[test]
    fn the_template_lints_as_missing_every_section_and_a_filled_one_as_ready() {
        let t = template();
        let l = lint(&t);
        assert_eq!(l.missing_required, Section::REQUIRED.to_vec());
        assert!(
            l.present.is_empty() && l.unknown_headings.is_empty(),
            "{l:?}"
        );
        for s in Section::ALL {
            assert!(t.contains(&format!("## {}\n", s.heading())), "{t}");
        }
        let filled = t
            .replace("## Intent\n", "## Intent\nSay hello.\n")
            .replace(
                "## Acceptance criteria\n",
                "## Acceptance criteria\n- it greets\n",
            )
            .replace("## Validation\n", "## Validation\n`true`\n")
            + "\n## Acceptence notes\nsee above\n";
        let l = lint(&filled);
        assert!(l.ready(), "{l:?}");
        assert_eq!(
            l.present,
            [
                Section::Intent,
                Section::AcceptanceCriteria,
                Section::Validation
            ]
        );
        assert_eq!(l.unknown_headings, ["Acceptence notes"]);
        assert_eq!(l.missing_optional.len(), Section::ALL.len() - 3);
    }
}

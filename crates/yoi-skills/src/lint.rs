//! Checking a `SKILL.md` against the Agent Skills rules.
//!
//! [`lint_skill_md`] is the one entry point: it parses the bytes (structural failures become a
//! single diagnostic and stop there), then checks every frontmatter field and the body. It never
//! fails and never touches the filesystem; the caller says which directory the file lives in so
//! `NAME-DIR-MATCH` can be checked. Errors make a skill invalid; warnings (unknown fields) and
//! advice (size, references leaving the folder) do not.
//!
//! Names are ASCII-only (`a-z`, `0-9`, `-`) and never Unicode-normalised; `docs/skills.md`
//! explains why. Every length is counted in Unicode scalar values, never bytes. A string field
//! written as an unquoted number or boolean (`name: 2024`) is read as its source text, as the
//! reference validator reads it, and then checked like any other text.

mod body;
mod fields;
mod name;
mod source;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnostic::{error_count, Diagnostic};
use crate::parse::parse_skill_md;

pub use fields::KNOWN_FIELDS;
pub use name::{check_name, is_valid_name};

/// Longest allowed `name`, in characters.
pub const NAME_MAX_CHARS: usize = 64;
/// Longest allowed `description`, in characters.
pub const DESCRIPTION_MAX_CHARS: usize = 1024;
/// Longest allowed `compatibility`, in characters.
pub const COMPATIBILITY_MAX_CHARS: usize = 500;
/// Bodies longer than this many lines get `BODY-SIZE` advice.
pub const BODY_MAX_LINES: usize = 500;

/// The frontmatter fields yoi understands, each present only when it has the right type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SkillMeta {
    pub name: Option<String>,
    pub description: Option<String>,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// The raw `allowed-tools` string; see [`SkillMeta::allowed_tools_list`].
    pub allowed_tools: Option<String>,
    /// `disable-model-invocation: true` (Claude Code's key, not the specification's): the skill
    /// stays out of agents' catalogs and agents cannot activate it; people still name it
    /// (`requires`, `#name`).
    pub disable_model_invocation: bool,
}

impl SkillMeta {
    /// `allowed-tools` split on whitespace (the spec defines no finer grammar).
    pub fn allowed_tools_list(&self) -> Vec<String> {
        self.allowed_tools
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }
}

/// The outcome of linting one `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintedSkill {
    pub meta: SkillMeta,
    /// The body with the frontmatter stripped; `None` when the file could not be parsed.
    pub body: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
}

impl LintedSkill {
    /// True when no diagnostic is an error.
    pub fn is_valid(&self) -> bool {
        self.error_count() == 0
    }

    pub fn error_count(&self) -> usize {
        error_count(&self.diagnostics)
    }
}

/// Lints a `SKILL.md` found in a directory called `dir_name`.
pub fn lint_skill_md(dir_name: &str, bytes: &[u8]) -> LintedSkill {
    let file = match parse_skill_md(bytes) {
        Ok(file) => file,
        Err(error) => {
            return LintedSkill {
                meta: SkillMeta::default(),
                body: None,
                diagnostics: vec![error.to_diagnostic()],
            }
        }
    };
    let mut diagnostics = Vec::new();
    let meta = fields::check_fields(&file, dir_name, &mut diagnostics);
    body::check_body(&file.body, file.body_line, &mut diagnostics);
    LintedSkill {
        meta,
        body: Some(file.body),
        diagnostics,
    }
}

/// The 1-based file line of a top-level frontmatter key, found by scanning the text.
pub(crate) fn key_line(frontmatter_text: &str, key: &str) -> Option<u32> {
    let forms = [key.to_string(), format!("\"{key}\""), format!("'{key}'")];
    frontmatter_text
        .split('\n')
        .position(|line| {
            forms.iter().any(|form| {
                line.strip_prefix(form.as_str())
                    .is_some_and(|after| after.trim_start().starts_with(':'))
            })
        })
        .and_then(|index| u32::try_from(index + 2).ok())
}

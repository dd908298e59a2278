//! Lint findings: what a rule saw, how serious it is and where.
//!
//! A [`Diagnostic`] is plain data so the CLI, the API and the dashboard can show it as they like.
//! Rule ids are `&'static str` constants from [`rules`]; reading a stored diagnostic back (for
//! example from a proposal's `proposal.json`) maps the id onto the same constant and refuses ids
//! this version of yoi does not know, so a typo never becomes a silent new rule.

use serde::{Deserialize, Serialize};

/// How serious a finding is. Only `Error` makes a skill invalid.
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
#[schema(as = SkillSeverity)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The skill breaks the specification; it is listed but cannot be activated.
    Error,
    /// Loaded and usable, but something is probably a mistake (an unknown field).
    Warning,
    /// A recommendation from the specification (size, reference style).
    Advice,
}

/// One finding of the parser or linter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = SkillDiagnostic)]
pub struct Diagnostic {
    /// Stable rule id such as `NAME-LENGTH`; see [`rules`].
    pub rule: &'static str,
    pub severity: Severity,
    /// What is wrong and how to fix it; never contains a host path.
    pub message: String,
    /// 1-based line in `SKILL.md`, when the finding has one.
    pub line: Option<u32>,
}

impl Diagnostic {
    pub fn error(rule: &'static str, message: impl Into<String>, line: Option<u32>) -> Self {
        Self::new(rule, Severity::Error, message, line)
    }

    pub fn warning(rule: &'static str, message: impl Into<String>, line: Option<u32>) -> Self {
        Self::new(rule, Severity::Warning, message, line)
    }

    pub fn advice(rule: &'static str, message: impl Into<String>, line: Option<u32>) -> Self {
        Self::new(rule, Severity::Advice, message, line)
    }

    fn new(
        rule: &'static str,
        severity: Severity,
        message: impl Into<String>,
        line: Option<u32>,
    ) -> Self {
        Self {
            rule,
            severity,
            message: message.into(),
            line,
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Number of error-severity diagnostics; a skill is valid when this is zero.
pub fn error_count(diagnostics: &[Diagnostic]) -> usize {
    diagnostics.iter().filter(|d| d.is_error()).count()
}

/// The serialised shape, before the rule id is matched to a known constant.
#[derive(Deserialize)]
struct StoredDiagnostic {
    rule: String,
    severity: Severity,
    message: String,
    line: Option<u32>,
}

impl<'de> Deserialize<'de> for Diagnostic {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = StoredDiagnostic::deserialize(deserializer)?;
        let rule = rules::ALL
            .iter()
            .copied()
            .find(|known| *known == stored.rule)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("unknown lint rule id `{}`", stored.rule))
            })?;
        Ok(Self::new(
            rule,
            stored.severity,
            stored.message,
            stored.line,
        ))
    }
}

/// Every rule id the parser and linter can emit.
pub mod rules {
    pub const FILE_BOM: &str = "FILE-BOM";
    pub const FILE_UTF8: &str = "FILE-UTF8";
    pub const FILE_READ: &str = "FILE-READ";
    pub const FILE_SIZE: &str = "FILE-SIZE";
    pub const FILE_NAME: &str = "FILE-NAME";
    pub const FILE_MISSING: &str = "FILE-MISSING";
    pub const FM_START: &str = "FM-START";
    pub const FM_CLOSE: &str = "FM-CLOSE";
    pub const FM_SIZE: &str = "FM-SIZE";
    pub const FM_YAML: &str = "FM-YAML";
    pub const FM_MAPPING: &str = "FM-MAPPING";
    pub const FM_DUPLICATE_KEY: &str = "FM-DUPLICATE-KEY";
    pub const FM_UNKNOWN: &str = "FM-UNKNOWN";
    pub const NAME_REQUIRED: &str = "NAME-REQUIRED";
    pub const NAME_TYPE: &str = "NAME-TYPE";
    pub const NAME_LENGTH: &str = "NAME-LENGTH";
    pub const NAME_CASE: &str = "NAME-CASE";
    pub const NAME_CHARSET: &str = "NAME-CHARSET";
    pub const NAME_HYPHEN_EDGE: &str = "NAME-HYPHEN-EDGE";
    pub const NAME_HYPHEN_DOUBLE: &str = "NAME-HYPHEN-DOUBLE";
    pub const NAME_DIR_MATCH: &str = "NAME-DIR-MATCH";
    pub const DESC_REQUIRED: &str = "DESC-REQUIRED";
    pub const DESC_TYPE: &str = "DESC-TYPE";
    pub const DESC_EMPTY: &str = "DESC-EMPTY";
    pub const DESC_LENGTH: &str = "DESC-LENGTH";
    pub const LICENSE_TYPE: &str = "LICENSE-TYPE";
    pub const COMPAT_TYPE: &str = "COMPAT-TYPE";
    pub const COMPAT_LENGTH: &str = "COMPAT-LENGTH";
    pub const METADATA_TYPE: &str = "METADATA-TYPE";
    pub const METADATA_VALUE: &str = "METADATA-VALUE";
    pub const TOOLS_TYPE: &str = "TOOLS-TYPE";
    pub const BODY_SIZE: &str = "BODY-SIZE";
    pub const REF_ESCAPE: &str = "REF-ESCAPE";
    // Workflow files (`.yoi/workflow/<slug>.md`, `crate::workflow`).
    pub const WF_SLUG: &str = "WF-SLUG";
    pub const WF_NAME: &str = "WF-NAME";
    pub const WF_UNKNOWN_KEY: &str = "WF-UNKNOWN-KEY";
    pub const WF_FIELD_TYPE: &str = "WF-FIELD-TYPE";
    pub const WF_DESCRIPTION: &str = "WF-DESCRIPTION";
    pub const WF_ROLE: &str = "WF-ROLE";
    pub const WF_UNREACHABLE: &str = "WF-UNREACHABLE";
    pub const WF_EMPTY: &str = "WF-EMPTY";
    pub const WF_REQUIRES_UNKNOWN: &str = "WF-REQUIRES-UNKNOWN";
    pub const WF_REQUIRES_INVALID: &str = "WF-REQUIRES-INVALID";
    pub const WF_REQUIRES_AMBIGUOUS: &str = "WF-REQUIRES-AMBIGUOUS";
    pub const WF_REQUIRES_CYCLE: &str = "WF-REQUIRES-CYCLE";

    /// All ids, for reading stored diagnostics back and for documentation.
    pub const ALL: &[&str] = &[
        FILE_BOM,
        FILE_UTF8,
        FILE_READ,
        FILE_SIZE,
        FILE_NAME,
        FILE_MISSING,
        FM_START,
        FM_CLOSE,
        FM_SIZE,
        FM_YAML,
        FM_MAPPING,
        FM_DUPLICATE_KEY,
        FM_UNKNOWN,
        NAME_REQUIRED,
        NAME_TYPE,
        NAME_LENGTH,
        NAME_CASE,
        NAME_CHARSET,
        NAME_HYPHEN_EDGE,
        NAME_HYPHEN_DOUBLE,
        NAME_DIR_MATCH,
        DESC_REQUIRED,
        DESC_TYPE,
        DESC_EMPTY,
        DESC_LENGTH,
        LICENSE_TYPE,
        COMPAT_TYPE,
        COMPAT_LENGTH,
        METADATA_TYPE,
        METADATA_VALUE,
        TOOLS_TYPE,
        BODY_SIZE,
        REF_ESCAPE,
        WF_SLUG,
        WF_NAME,
        WF_UNKNOWN_KEY,
        WF_FIELD_TYPE,
        WF_DESCRIPTION,
        WF_ROLE,
        WF_UNREACHABLE,
        WF_EMPTY,
        WF_REQUIRES_UNKNOWN,
        WF_REQUIRES_INVALID,
        WF_REQUIRES_AMBIGUOUS,
        WF_REQUIRES_CYCLE,
    ];
}

//! Doctor findings: small values, one per problem seen, each telling what was seen, what was
//! expected, and the command that fixes it.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Stable check id, e.g. `item.invalid` or `relation.cycle`.
    pub check: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
    /// Path relative to the repository root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub seen: String,
    pub expected: String,
    /// A command that repairs it, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// `--fix` may apply this repair without losing information.
    #[serde(skip)]
    pub safe_fix: Option<SafeFix>,
}

/// Repairs that `doctor --fix` applies on its own. Each keeps every byte of information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SafeFix {
    /// Delete an interrupted atomic write's temporary file (the real file is intact).
    RemoveTempFile { path: String },
    /// Re-render relations.json sorted (same content, canonical order).
    SortRelations { ticket: String },
    /// Create a missing thread.md / artifacts directory.
    CreateMissing { path: String },
}

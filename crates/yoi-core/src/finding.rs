//! Doctor findings: small values, one per problem seen, each telling what was seen, what was
//! expected, and the command that fixes it.
//!
//! A finding is data, not control flow: the doctor (`yoi-doctor`) builds them, the CLI and the
//! API render them, and `--fix` applies only the [`SafeFix`] a finding carries.

use std::borrow::Cow;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
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
    /// What should have been seen. Usually fixed text, kept without a copy per finding (a large
    /// tree's report holds tens of thousands of findings).
    pub expected: Cow<'static, str>,
    /// A command that repairs it, when there is one (fixed text or made for this finding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<Cow<'static, str>>,
    /// `--fix` may apply this repair without losing information.
    #[serde(skip)]
    pub safe_fix: Option<SafeFix>,
}

impl Finding {
    pub fn new(
        severity: Severity,
        check: &'static str,
        seen: impl Into<String>,
        expected: impl Into<Cow<'static, str>>,
    ) -> Self {
        Finding {
            severity,
            check,
            ticket: None,
            path: None,
            line: None,
            seen: seen.into(),
            expected: expected.into(),
            fix: None,
            safe_fix: None,
        }
    }

    pub fn error(
        check: &'static str,
        seen: impl Into<String>,
        expected: impl Into<Cow<'static, str>>,
    ) -> Self {
        Finding::new(Severity::Error, check, seen, expected)
    }

    pub fn warning(
        check: &'static str,
        seen: impl Into<String>,
        expected: impl Into<Cow<'static, str>>,
    ) -> Self {
        Finding::new(Severity::Warning, check, seen, expected)
    }

    pub fn with_ticket(mut self, ticket: impl Into<String>) -> Self {
        self.ticket = Some(ticket.into());
        self
    }

    /// Where it was seen: a path relative to the repository root and, when known, a line.
    pub fn at(mut self, path: impl Into<String>, line: Option<usize>) -> Self {
        self.path = Some(path.into());
        self.line = line;
        self
    }

    pub fn with_fix(mut self, fix: impl Into<Cow<'static, str>>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    pub fn with_safe_fix(mut self, fix: SafeFix) -> Self {
        self.safe_fix = Some(fix);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Repairs that `doctor --fix` applies on its own. Each keeps every byte of information; paths
/// are relative to the repository root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SafeFix {
    /// Delete an interrupted atomic write's temporary file (the real file is intact).
    RemoveTempFile { path: String },
    /// Re-render relations.json sorted (same content, canonical order).
    SortRelations { ticket: String },
    /// Create a missing file empty (thread.md); never overwrites an existing file.
    CreateFile { path: String },
    /// Create a missing directory (a ticket's `artifacts/`).
    CreateDir { path: String },
    /// Drop git's records of linked worktrees whose folder is gone and that are not locked, as
    /// `git worktree prune` does. No file and no branch goes: the folders are already gone and
    /// the commits stay on their branches.
    PruneWorktrees,
    /// Move a torn event out of a ticket's thread.md — a header cut short (with what follows
    /// it up to the next header), or an event never closed at the end of the file — into a
    /// side file in the ticket's `artifacts/`, byte for byte, then rewrite thread.md without
    /// it. `line` is where the torn event starts.
    SetAsideTorn { ticket: String, line: usize },
}

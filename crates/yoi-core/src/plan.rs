//! Orchestration plan records: `artifacts/orchestration-plan.jsonl`, one JSON object per line,
//! append-only. They record runtime ordering and capacity decisions; they never change a
//! ticket's state on their own.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use utoipa::ToSchema;

use crate::id::TicketId;
use crate::time::Timestamp;

pub const MAX_TEXT_BYTES: usize = 16 * 1024;
pub const MAX_LINE_BYTES: usize = 1024;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PlanKind {
    Before,
    After,
    BlockedBy,
    Blocks,
    ConflictsWith,
    DoNotParallelize,
    /// Written by the older system as `waiting_capacity_note`; read under either name.
    #[serde(alias = "waiting_capacity_note")]
    WaitingCapacity,
    AcceptedPlan,
}

impl PlanKind {
    pub const ALL: [PlanKind; 8] = [
        PlanKind::Before,
        PlanKind::After,
        PlanKind::BlockedBy,
        PlanKind::Blocks,
        PlanKind::ConflictsWith,
        PlanKind::DoNotParallelize,
        PlanKind::WaitingCapacity,
        PlanKind::AcceptedPlan,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanKind::Before => "before",
            PlanKind::After => "after",
            PlanKind::BlockedBy => "blocked_by",
            PlanKind::Blocks => "blocks",
            PlanKind::ConflictsWith => "conflicts_with",
            PlanKind::DoNotParallelize => "do_not_parallelize",
            PlanKind::WaitingCapacity => "waiting_capacity",
            PlanKind::AcceptedPlan => "accepted_plan",
        }
    }

    /// Kinds that name another ticket.
    pub fn needs_related(self) -> bool {
        !matches!(self, PlanKind::WaitingCapacity | PlanKind::AcceptedPlan)
    }
}

impl fmt::Display for PlanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
#[error("`{value}` is not a plan record kind (expected before, after, blocked_by, blocks, conflicts_with, do_not_parallelize, waiting_capacity or accepted_plan)")]
pub struct PlanKindError {
    pub value: String,
}

impl FromStr for PlanKind {
    type Err = PlanKindError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v = s.trim().to_ascii_lowercase().replace('-', "_");
        if v == "waiting_capacity_note" {
            return Ok(PlanKind::WaitingCapacity);
        }
        PlanKind::ALL
            .into_iter()
            .find(|k| k.as_str() == v)
            .ok_or_else(|| PlanKindError {
                value: s.to_string(),
            })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptedPlan {
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanRecord {
    pub id: String,
    pub ticket_id: TicketId,
    pub kind: PlanKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_ticket: Option<TicketId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_plan: Option<AcceptedPlan>,
    pub author: String,
    pub at: Timestamp,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("line {line}: invalid plan record: {reason}")]
    Json { line: usize, reason: String },
    #[error("line {line}: {reason}")]
    Invalid { line: usize, reason: String },
}

impl PlanRecord {
    /// Check the record's own rules (the `line` is used in the error).
    pub fn validate(&self, owner: &TicketId, line: usize) -> Result<(), PlanError> {
        let bad = |reason: String| Err(PlanError::Invalid { line, reason });
        if &self.ticket_id != owner {
            return bad(format!(
                "record {} belongs to {}, but the file is in ticket {owner}",
                self.id, self.ticket_id
            ));
        }
        if self.kind.needs_related() && self.related_ticket.is_none() {
            return bad(format!("a {} record needs `related_ticket`", self.kind));
        }
        if self.related_ticket.as_ref() == Some(owner) {
            return bad(format!("record {} relates the ticket to itself", self.id));
        }
        if self.kind == PlanKind::WaitingCapacity
            && self.note.as_deref().is_none_or(|n| n.trim().is_empty())
        {
            return bad("a waiting_capacity record needs a non-empty `note`".into());
        }
        match (&self.accepted_plan, self.kind) {
            (None, PlanKind::AcceptedPlan) => {
                return bad("an accepted_plan record needs `accepted_plan.summary`".into())
            }
            (Some(_), k) if k != PlanKind::AcceptedPlan => {
                return bad(format!("a {k} record must not carry `accepted_plan`"))
            }
            (Some(p), _) if p.summary.trim().is_empty() => {
                return bad("`accepted_plan.summary` is empty".into())
            }
            _ => {}
        }
        let texts = [
            self.note.as_deref(),
            self.accepted_plan.as_ref().map(|p| p.summary.as_str()),
            self.accepted_plan
                .as_ref()
                .and_then(|p| p.role_plan.as_deref()),
        ];
        if texts.iter().flatten().any(|t| t.len() > MAX_TEXT_BYTES) {
            return bad(format!(
                "a text field is larger than {MAX_TEXT_BYTES} bytes"
            ));
        }
        let singles = [
            Some(self.id.as_str()),
            Some(self.author.as_str()),
            self.accepted_plan
                .as_ref()
                .and_then(|p| p.branch.as_deref()),
            self.accepted_plan
                .as_ref()
                .and_then(|p| p.worktree.as_deref()),
        ];
        if singles
            .iter()
            .flatten()
            .any(|t| t.len() > MAX_LINE_BYTES || t.contains(['\n', '\r', '\0']))
        {
            return bad(format!(
                "id, author, branch and worktree must be single lines of at most {MAX_LINE_BYTES} bytes"
            ));
        }
        if texts.iter().flatten().any(|t| t.contains('\0')) {
            return bad("text fields must not contain NUL".into());
        }
        Ok(())
    }

    /// One JSONL line, with its newline.
    pub fn render_line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("plan records serialize");
        s.push('\n');
        s
    }
}

/// Parse a whole plan file. Blank lines are skipped; every other line must be a valid record.
pub fn parse_plan(text: &str, owner: &TicketId) -> Result<Vec<PlanRecord>, PlanError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: PlanRecord = serde_json::from_str(line).map_err(|e| PlanError::Json {
            line: i + 1,
            reason: e.to_string(),
        })?;
        rec.validate(owner, i + 1)?;
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> TicketId {
        TicketId::parse("00001KVZKST83").unwrap()
    }

    #[test]
    fn legacy_records_parse_including_the_old_capacity_kind() {
        let text = concat!(
            r#"{"id":"orch-plan-20260625-164354-1","ticket_id":"00001KVZKST83","kind":"blocked_by","related_ticket":"00001KVZBCQH4","note":"do not start until core API is done.","author":"yoi-orchestrator","at":"2026-06-25T16:43:54Z"}"#,
            "\n\n",
            r#"{"id":"orch-plan-20260625-165525-2","ticket_id":"00001KVZKST83","kind":"accepted_plan","note":"n","accepted_plan":{"summary":"s","branch":"work/00001KVZKST83-x","worktree":"<repo>/.worktree/x","role_plan":"r"},"author":"yoi-orchestrator","at":"2026-06-25T16:55:25Z"}"#,
            "\n",
            r#"{"id":"orch-plan-20260625-165525-3","ticket_id":"00001KVZKST83","kind":"waiting_capacity_note","note":"full","author":"yoi-orchestrator","at":"2026-06-25T16:55:25Z"}"#,
            "\n"
        );
        let recs = parse_plan(text, &owner()).unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2].kind, PlanKind::WaitingCapacity);
        assert_eq!(
            recs[1].accepted_plan.as_ref().unwrap().branch.as_deref(),
            Some("work/00001KVZKST83-x")
        );
        // Rendering a parsed modern record reproduces its line.
        let line = recs[0].render_line();
        assert_eq!(parse_plan(&line, &owner()).unwrap()[0], recs[0]);
    }

    #[test]
    fn invalid_records_name_their_line() {
        let text = "{\"id\":\"a\",\"ticket_id\":\"00001KVZKST83\",\"kind\":\"before\",\"author\":\"x\",\"at\":\"2026-06-25T16:43:54Z\"}\n";
        let err = parse_plan(text, &owner()).unwrap_err();
        assert_eq!(
            err,
            PlanError::Invalid {
                line: 1,
                reason: "a before record needs `related_ticket`".into()
            }
        );
        let err = parse_plan("\n{not json\n", &owner()).unwrap_err();
        assert!(matches!(err, PlanError::Json { line: 2, .. }));
        let text = "{\"id\":\"a\",\"ticket_id\":\"00001KVZKST83\",\"kind\":\"before\",\"related_ticket\":\"00001KVZBCQH4\",\"author\":\"x\",\"at\":\"2026-06-25T16:43:54Z\",\"surprise\":1}\n";
        assert!(matches!(
            parse_plan(text, &owner()),
            Err(PlanError::Json { line: 1, .. })
        ));
    }
}

impl PlanError {
    /// A plan error names a line of `orchestration-plan.jsonl`: the file is malformed.
    pub fn class(&self) -> crate::ErrorClass {
        match self {
            PlanError::Json { .. } | PlanError::Invalid { .. } => crate::ErrorClass::Corrupt,
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn render_parse_render_is_identity(
            note in "[^\u{0}]{1,200}",
            author in "[^\u{0}\n\r]{1,40}",
            kind in 0usize..7,
        ) {
            let owner = TicketId::parse("00001KVZKST83").unwrap();
            let kind = PlanKind::ALL[kind];
            let rec = PlanRecord {
                id: "plan-1".into(),
                ticket_id: owner.clone(),
                kind,
                related_ticket: kind.needs_related().then(|| TicketId::parse("00001KVZBCQH4").unwrap()),
                note: Some(format!("n{note}")),
                accepted_plan: None,
                author,
                at: Timestamp::parse("2026-06-25T16:43:54Z").unwrap(),
            };
            let line = rec.render_line();
            let parsed = parse_plan(&line, &owner).unwrap();
            prop_assert_eq!(&parsed[0], &rec);
            prop_assert_eq!(parsed[0].render_line(), line);
        }
    }
}

//! The questions agents asked on a ticket and the answers people gave, read back from its
//! thread (`question` and `answer` events, docs/inbox.md "Agents ask") for the prompt of every
//! later attempt: what a person decided binds the whole ticket, not only the step that asked.
//!
//! Also where a question is written ([`record_question`]): once per blocked attempt, whoever
//! calls. The attempt's row ends `blocked` in the database before its question reaches the
//! thread, so a server that dies in between would leave a step waiting for an answer to a
//! question nobody can see; the flow sweep writes it then ([`recover_question`]).

use serde::Serialize;
use yoi_core::report::Report;
use yoi_core::thread::{EventKind, ParsedThread};
use yoi_core::Principal;
use yoi_core::{TicketId, Timestamp};
use yoi_db::{Assignment, AssignmentStatus, DbIndex};
use yoi_store::{ops, Ctx, StoreError, Workspace};

/// A question an agent asked and the answer a person gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Answered {
    /// The step whose agent asked, and its attempt.
    pub step: String,
    pub attempt: i64,
    /// The questions, one `- ` line each, as the thread records them.
    pub question: String,
    /// The answer, as the person wrote it.
    pub answer: String,
    /// Who answered (`human:alice`).
    pub by: String,
}

/// Every answered question of `ticket`, oldest first.
pub fn answered(ws: &Workspace, ticket: &TicketId) -> Result<Vec<Answered>, StoreError> {
    Ok(pairs(&ws.read_thread(ticket)?))
}

/// The question and answer pairs of a thread: each `answer` with the `question` it names.
pub fn pairs(thread: &ParsedThread) -> Vec<Answered> {
    let mut out = Vec::new();
    for a in thread.events.iter().filter(|e| e.kind == EventKind::Answer) {
        let Some(q) = a.get(yoi_store::ops::QUESTION).and_then(|qid| {
            thread
                .events
                .iter()
                .find(|e| e.kind == EventKind::Question && e.id() == Some(qid))
        }) else {
            continue;
        };
        out.push(Answered {
            step: q.get("step").unwrap_or("unknown").to_string(),
            attempt: q.get("attempt").and_then(|n| n.parse().ok()).unwrap_or(0),
            question: q.body.trim().to_string(),
            answer: a.body.trim().to_string(),
            by: a.author().unwrap_or("unknown").to_string(),
        });
    }
    out
}

/// Write the `question` event of blocked attempt `row` with the questions of its `report`,
/// unless the thread has it already (a retried call, a recovery) or there are none (the agent
/// asked through the MCP tool, which wrote its own).
pub fn record_question(
    ws: &Workspace,
    row: &Assignment,
    report: &Report,
    now: Timestamp,
) -> Result<(), StoreError> {
    if report.questions.iter().all(|q| q.trim().is_empty()) {
        return Ok(());
    }
    let ticket = TicketId::parse(&row.ticket).map_err(|e| StoreError::Database {
        reason: format!("assignment {} names no ticket: {e}", row.id),
    })?;
    let thread = ws.read_thread(&ticket)?;
    let written = thread
        .events
        .iter()
        .any(|e| e.kind == EventKind::Question && e.get("assignment") == Some(row.id.as_str()));
    if written {
        return Ok(());
    }
    let attrs: Vec<(&str, String)> = vec![
        ("assignment", row.id.clone()),
        ("step", row.step.clone()),
        ("role", row.role.clone()),
        ("attempt", row.attempt.to_string()),
    ];
    let ctx = Ctx::new(Principal::orchestrator(), now);
    match ops::ask(ws, &ctx, &row.ticket, &attrs, &report.questions) {
        Ok(_) | Err(StoreError::StaleState { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// When `ticket`'s latest attempt ended `blocked` with questions the thread does not have (its
/// server died between the two writes), write them; whether it did.
pub fn recover_question(
    ws: &Workspace,
    index: &DbIndex,
    ticket: &TicketId,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let rows = index.assignments_of(ticket.as_str())?;
    let Some(last) = rows
        .iter()
        .filter(|a| a.finished_ms.is_some() && a.status != AssignmentStatus::Cancelled)
        .max_by_key(|a| (a.finished_ms, a.created_ms))
    else {
        return Ok(false);
    };
    if last.status != AssignmentStatus::Blocked {
        return Ok(false);
    }
    let Some(report) = last
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str::<Report>(r).ok())
    else {
        return Ok(false);
    };
    let before = ws.read_thread(ticket)?.events.len();
    record_question(ws, last, &report, now)?;
    Ok(ws.read_thread(ticket)?.events.len() != before)
}

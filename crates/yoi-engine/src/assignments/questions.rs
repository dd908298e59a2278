//! The questions agents asked on a ticket and the answers people gave, read back from its
//! thread (`question` and `answer` events, docs/inbox.md "Agents ask") for the prompt of every
//! later attempt: what a person decided binds the whole ticket, not only the step that asked.

use serde::Serialize;
use yoi_core::thread::{EventKind, ParsedThread};
use yoi_core::TicketId;
use yoi_store::{StoreError, Workspace};

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

//! An agent's question and a person's answer (docs/inbox.md, "Agents ask"): the orchestrator
//! records what an agent asked as a `question` event when its attempt ended `blocked` with
//! `YOI-QUESTION:` lines, and a person answers it with an `answer` event that names the
//! question. Both are in the thread, so a clone without `.yoi/local/` still knows what was
//! asked and what was decided; the engine hands the step out again on the answer
//! (`yoi_engine::assignments`) and the inbox closes the entry.

use yoi_core::principal::PrincipalKind;
use yoi_core::thread::{Event, EventKind, ParsedThread};
use yoi_core::State;

use super::signal::append_in;
use super::{text_field, Ctx, Outcome};
use crate::error::{Permission, Refusal, StoreError};
use crate::workspace::Workspace;

/// Attribute of an `answer` event: the id of the `question` event it answers.
pub const QUESTION: &str = "question";

/// The longest answer, in characters.
pub const MAX_ANSWER_CHARS: usize = 20_000;

/// Record what an agent asked (the orchestrator only, for an in-progress ticket): one
/// `question` event whose attributes name the attempt (`attrs`) and whose body lists the
/// questions, one per line.
pub fn ask(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    attrs: &[(&str, String)],
    questions: &[String],
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Orchestrator {
        return Err(StoreError::NotPermitted {
            reason: Permission::RaiseAttention {
                kind: ctx.principal.kind,
            },
        });
    }
    if questions.iter().all(|q| q.trim().is_empty()) {
        return Err(StoreError::bad_input("questions", "ask at least one"));
    }
    let body = questions
        .iter()
        .filter(|q| !q.trim().is_empty())
        .map(|q| format!("- {}", q.trim()))
        .collect::<Vec<_>>()
        .join("\n");
    let body = text_field("questions", &body)?;
    let mut event = Event::new(EventKind::Question, &body);
    for (k, v) in attrs {
        event = event.with_attr(k, v.clone());
    }
    append_in(ws, ctx, query, "ask", event, &[State::Inprogress])
}

/// Answer the open question of an in-progress ticket (people only): an `answer` event naming
/// it. Refused when no question is open — none was asked, or the last one was answered,
/// retried past or ended by a state change — and for an empty answer.
pub fn answer(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    message: &str,
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Human {
        return Err(StoreError::NotPermitted {
            reason: Permission::Answer {
                kind: ctx.principal.kind,
            },
        });
    }
    let message = text_field("message", message)?;
    let message = message.trim();
    if message.is_empty() {
        return Err(StoreError::bad_input("message", "must not be empty"));
    }
    if message.chars().count() > MAX_ANSWER_CHARS {
        return Err(StoreError::bad_input(
            "message",
            format!("is longer than {MAX_ANSWER_CHARS} characters"),
        ));
    }
    let payload = serde_json::json!({ "body": message });
    super::edit::append_one(ws, ctx, query, "answer", &payload, |id, item| {
        if item.state != State::Inprogress {
            return Err(StoreError::StaleState {
                ticket: id.clone(),
                expected: State::Inprogress,
                found: item.state,
            });
        }
        let thread = ws.read_thread(id)?;
        let Some(q) = open_question(&thread).and_then(|q| q.id()) else {
            return Err(StoreError::Refused {
                reason: Refusal::NoOpenQuestion { ticket: id.clone() },
            });
        };
        Ok(Event::new(EventKind::Answer, message).with_attr(QUESTION, q))
    })
}

/// The question still waiting for an answer: the last `question` event, unless an `answer`, a
/// `retry` or a state change came after it.
pub fn open_question(thread: &ParsedThread) -> Option<&Event> {
    let mut open = None;
    for e in &thread.events {
        match e.kind {
            EventKind::Question => open = Some(e),
            EventKind::Answer | EventKind::Retry | EventKind::StateChanged => open = None,
            _ => {}
        }
    }
    open
}

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
        let Some(q) = open_question(&thread, item.state).and_then(|q| q.id()) else {
            return Err(StoreError::Refused {
                reason: Refusal::NoOpenQuestion { ticket: id.clone() },
            });
        };
        Ok(Event::new(EventKind::Answer, message).with_attr(QUESTION, q))
    })
}

/// The question still waiting for an answer on a ticket whose item.md says `state`: the last
/// `question` event, unless an `answer`, a `retry` or a state change came after it.
///
/// A state change item.md does not show ([`unapplied_state_change`]) ends nothing: the
/// operation that wrote it died before it rewrote item.md, so the ticket never moved, and its
/// step still waits for the answer.
pub fn open_question(thread: &ParsedThread, state: State) -> Option<&Event> {
    let unapplied = unapplied_state_change(thread, state);
    let mut open = None;
    for (i, e) in thread.events.iter().enumerate() {
        match e.kind {
            EventKind::Question => open = Some(e),
            EventKind::StateChanged if Some(i) == unapplied => {}
            EventKind::Answer | EventKind::Retry | EventKind::StateChanged => open = None,
            _ => {}
        }
    }
    open
}

/// Where the thread records a state change that item.md, in `state`, does not show: its last
/// `state_changed` event, when that event's `to` is not `state`. A state operation appends the
/// event first and rewrites item.md second (docs/formats.md); one interrupted between the two
/// leaves the event behind, and item.md says what the ticket is (doctor's
/// `thread.state_mismatch`). Only the last one matters: every later state change that did
/// happen ends whatever an earlier one would have.
pub fn unapplied_state_change(thread: &ParsedThread, state: State) -> Option<usize> {
    let (i, e) = thread
        .events
        .iter()
        .enumerate()
        .rfind(|(_, e)| e.kind == EventKind::StateChanged)?;
    (e.get("to") != Some(state.as_str())).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(events: Vec<Event>) -> ParsedThread {
        ParsedThread {
            lines: vec![0; events.len()],
            events,
            issues: Vec::new(),
        }
    }

    fn moved(from: State, to: State) -> Event {
        Event::new(EventKind::StateChanged, "")
            .with_attr("from", from.as_str())
            .with_attr("to", to.as_str())
    }

    #[test]
    fn a_state_change_item_md_does_not_show_leaves_the_question_open() {
        let asked = Event::new(EventKind::Question, "- which way?").with_attr("id", "q1");
        let torn = thread(vec![
            asked.clone(),
            moved(State::Inprogress, State::Planning),
        ]);
        // The return to planning died before item.md: the ticket is still in progress.
        assert_eq!(unapplied_state_change(&torn, State::Inprogress), Some(1));
        assert_eq!(
            open_question(&torn, State::Inprogress).and_then(|q| q.id()),
            Some("q1")
        );
        // It did happen: the question is over.
        assert_eq!(unapplied_state_change(&torn, State::Planning), None);
        assert!(open_question(&torn, State::Planning).is_none());
        // Left and accepted again: over too, though an earlier change was never applied.
        let back = thread(vec![
            asked,
            moved(State::Inprogress, State::Planning),
            moved(State::Queued, State::Inprogress),
        ]);
        assert!(open_question(&back, State::Inprogress).is_none());
    }
}

//! `edit` (title and body) and `comment` (free-form thread events). An edit that changes the
//! item bumps its `updated_at`; a comment only appends to the thread.

use serde_json::json;
use yoi_core::packet::IntentPacket;
use yoi_core::principal::PrincipalKind;
use yoi_core::thread::{Event, EventKind};
use yoi_core::{Item, State};

use super::{
    append_events, fingerprint, finish, one_line, replay_of, stamp, text_field, write_item, Ctx,
    Outcome,
};
use crate::error::{Permission, Refusal, StoreError};
use crate::workspace::Workspace;

/// Kinds a person or pod may write with `comment`; the others belong to dedicated operations.
pub const COMMENT_KINDS: [&str; 5] = [
    "comment",
    "plan",
    "decision",
    "implementation_report",
    "intake_summary",
];

#[derive(Debug, Clone, Default)]
pub struct EditRequest {
    pub title: Option<String>,
    pub body: Option<String>,
}

#[derive(Debug, Clone)]
pub struct CommentRequest {
    pub kind: String,
    pub body: String,
}

pub fn edit(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &EditRequest,
) -> Result<Outcome, StoreError> {
    if req.title.is_none() && req.body.is_none() {
        return Err(StoreError::bad_input(
            "edit",
            "nothing to change: give a new title or body",
        ));
    }
    let title = req
        .title
        .as_deref()
        .map(|t| one_line("title", t, super::MAX_TITLE_CHARS))
        .transpose()?;
    let body = req
        .body
        .as_deref()
        .map(|b| text_field("body", b))
        .transpose()?;
    let payload = json!({ "title": title, "body": body });
    write_edit(ws, ctx, query, "edit", &payload, |_| Ok((title, body)))
}

/// Replace the brief sections of a ticket's body with `packet` (see
/// [`IntentPacket::apply_to_body`]); the rest of the body stays. Recorded as an `item_edit`
/// event like `edit`. People, intake pods and the orchestrator may submit; only tickets in
/// planning, ready or queued take one: from acceptance on, the frozen packet is what the work
/// follows.
pub fn submit_packet(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    packet: &IntentPacket,
) -> Result<Outcome, StoreError> {
    if !matches!(
        ctx.principal.kind,
        PrincipalKind::Human | PrincipalKind::Intake | PrincipalKind::Orchestrator
    ) {
        return Err(StoreError::NotPermitted {
            reason: Permission::SubmitPacket {
                kind: ctx.principal.kind,
            },
        });
    }
    let payload = json!({ "packet": packet });
    write_edit(ws, ctx, query, "submit_packet", &payload, |item| {
        if !matches!(item.state, State::Planning | State::Ready | State::Queued) {
            return Err(StoreError::Refused {
                reason: Refusal::PacketFrozen { state: item.state },
            });
        }
        let body = packet.apply_to_body(item.body_text());
        Ok((None, Some(text_field("body", &body)?)))
    })
}

/// The write path of `edit` and `submit_packet`: let `change` decide the new title and body from
/// the current item, then record an `item_edit` event naming what changed.
fn write_edit(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    operation: &str,
    payload: &serde_json::Value,
    change: impl FnOnce(&Item) -> Result<(Option<String>, Option<String>), StoreError>,
) -> Result<Outcome, StoreError> {
    append_one(ws, ctx, query, operation, payload, |_, item| {
        let (title, body) = change(item)?;
        let fields: Vec<&str> = [
            title.as_ref().map(|_| "title"),
            body.as_ref().map(|_| "body"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut changed = Vec::new();
        if let Some(t) = title {
            if t != item.title {
                changed.push(format!("Title changed from “{}” to “{}”.", item.title, t));
                item.title = t;
            }
        }
        if let Some(b) = body {
            let before = item.body.clone();
            item.set_body_text(&b);
            if item.body != before {
                changed.push("Body replaced.".to_string());
            }
        }
        if changed.is_empty() {
            changed.push("No change.".into());
        }
        Ok(Event::new(EventKind::ItemEdit, &changed.join("\n"))
            .with_attr("field", fields.join(",")))
    })
}

/// The write path of every operation that appends one event and changes no state (edit,
/// comment, retry, attention): under the lock, re-read the ticket, answer a replay of the same
/// operation id, let `make` check the ticket, change its item and build the event, then append
/// the event and, if `make` changed the item, rewrite item.md with `updated_at` bumped. An
/// unchanged item.md stays as it is: the ticket's time of last change is the later of its
/// `updated_at` and the thread's last event ([`Item::last_changed`]), so a comment is one
/// append (one file to sync, no rename) and never conflicts with another clone's item.md.
pub(crate) fn append_one(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    operation: &str,
    payload: &serde_json::Value,
    make: impl FnOnce(&yoi_core::TicketId, &mut Item) -> Result<Event, StoreError>,
) -> Result<Outcome, StoreError> {
    let _lock = ws.lock()?;
    let id = ws.resolve(query)?;
    let mut item = ws.read_item(&id)?;
    let thread = ws.read_thread(&id)?;
    let fp = fingerprint(operation, id.as_str(), payload);
    if let Some(o) = replay_of(ws, &thread, ctx, &fp, &id, operation)? {
        return Ok(o);
    }
    let before = item.clone();
    let event = stamp(make(&id, &mut item)?, ctx, &fp);
    append_events(ws, &id, std::slice::from_ref(&event))?;
    if item != before {
        item.updated_at = ctx.now;
        write_item(ws, &id, &item)?;
    }
    Ok(finish(ws, ctx, &fp, fresh(&id, operation, &event)))
}

pub fn comment(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &CommentRequest,
) -> Result<Outcome, StoreError> {
    if !COMMENT_KINDS.contains(&req.kind.as_str()) {
        return Err(StoreError::bad_input(
            "kind",
            format!(
                "`{}` cannot be written as a comment; use one of {}",
                req.kind,
                COMMENT_KINDS.join(", ")
            ),
        ));
    }
    let body = text_field("message", &req.body)?;
    if body.trim().is_empty() {
        return Err(StoreError::bad_input("message", "must not be empty"));
    }
    let payload = json!({ "kind": req.kind, "body": body });
    append_one(ws, ctx, query, "comment", &payload, |_, _| {
        Ok(Event::new(EventKind::from(req.kind.clone()), &body))
    })
}

pub(crate) fn fresh(id: &yoi_core::TicketId, operation: &str, event: &Event) -> Outcome {
    Outcome {
        ticket: id.clone(),
        operation: operation.into(),
        event_id: event.id().map(str::to_string),
        from: event.get("from").and_then(State::from_event),
        to: event.get("to").and_then(State::from_event),
        replayed: false,
        index_error: None,
        notes: Vec::new(),
    }
}

pub(crate) fn replayed(id: &yoi_core::TicketId, operation: &str, event: &Event) -> Outcome {
    Outcome {
        replayed: true,
        ..fresh(id, operation, event)
    }
}

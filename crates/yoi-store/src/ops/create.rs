//! `create`: a new ticket folder with item.md, thread.md (the `create` event) and, when
//! dependencies are given, relations.json — built in a hidden folder and renamed into place, so
//! a ticket appears whole or not at all.

use std::fs;

use serde_json::json;
use yoi_core::item::Item;
use yoi_core::relation::{Relation, RelationKind, RelationsFile};
use yoi_core::thread::{parse_header, Event, EventKind};
use yoi_core::TicketId;

use super::{fingerprint, one_line, stamp, text_field, Ctx, Outcome};
use crate::error::StoreError;
use crate::fsutil::{self};
use crate::tickets::{ARTIFACTS, ITEM, RELATIONS, THREAD};
use crate::workspace::Workspace;

#[derive(Debug, Clone, Default)]
pub struct CreateRequest {
    pub title: String,
    pub body: String,
    /// Tickets (ids or suffixes) the new ticket depends on.
    pub depends_on: Vec<String>,
}

pub fn create(ws: &Workspace, ctx: &Ctx, req: &CreateRequest) -> Result<Outcome, StoreError> {
    let title = one_line("title", &req.title, super::MAX_TITLE_CHARS)?;
    let body = text_field("body", &req.body)?;
    let _lock = ws.lock()?;
    let mut deps: Vec<TicketId> = Vec::new();
    for d in &req.depends_on {
        let id = ws.resolve(d)?;
        if !deps.contains(&id) {
            deps.push(id);
        }
    }
    deps.sort();
    let fp = fingerprint(
        "create",
        "",
        &json!({ "title": title, "body": body, "depends_on": deps }),
    );
    if let Some(op) = &ctx.op {
        if let Some(rec) = ws
            .index
            .as_ref()
            .map(|i| i.0.find_operation(op))
            .transpose()?
            .flatten()
        {
            if rec.fingerprint != fp {
                return Err(StoreError::ConflictingReplay {
                    op: op.clone(),
                    ticket: rec.ticket.to_string(),
                });
            }
            return Ok(Outcome {
                replayed: true,
                index_error: None,
                ..rec.outcome
            });
        }
        if let Some(found) = find_created_by_op(ws, op)? {
            let (id, event) = found;
            if event.get("fp") != Some(fp.as_str()) {
                return Err(StoreError::ConflictingReplay {
                    op: op.clone(),
                    ticket: id.to_string(),
                });
            }
            return Ok(Outcome {
                ticket: id,
                operation: "create".into(),
                event_id: event.id().map(str::to_string),
                from: None,
                to: Some(yoi_core::State::Planning),
                replayed: true,
                index_error: None,
                notes: Vec::new(),
            });
        }
    }

    let tickets = ws.tickets_dir();
    fs::create_dir_all(&tickets).map_err(|e| StoreError::io(&tickets, e))?;
    let id = loop {
        let id = TicketId::from_ulid(super::new_ulid(ctx.precise));
        if !ws.ticket_dir(&id).exists() {
            break id;
        }
    };
    let mut item = Item::new(title, ctx.now, String::new());
    item.set_body_text(&body);
    let event = stamp(Event::new(EventKind::Create, "Ticket created."), ctx, &fp);
    event
        .validate()
        .map_err(|e| StoreError::bad_input("event", e.to_string()))?;

    let staging = tickets.join(format!(".new-{id}"));
    let result = (|| {
        fs::create_dir_all(staging.join(ARTIFACTS)).map_err(|e| StoreError::io(&staging, e))?;
        let write = |name: &str, text: &str| {
            let p = staging.join(name);
            ws.writes
                .atomic_write(&p, text.as_bytes())
                .map_err(|e| StoreError::io(&p, e))
        };
        write(ITEM, &item.render())?;
        write(THREAD, &event.render())?;
        if !deps.is_empty() {
            let mut rels = RelationsFile::empty();
            for target in &deps {
                rels.relations.push(Relation {
                    ticket_id: id.clone(),
                    kind: RelationKind::DependsOn,
                    target: target.clone(),
                    note: None,
                    author: ctx.principal.author(),
                    at: ctx.now,
                });
            }
            write(RELATIONS, &rels.render())?;
        }
        let dest = ws.ticket_dir(&id);
        fs::rename(&staging, &dest).map_err(|e| StoreError::io(&dest, e))?;
        fsutil::sync_dir(&tickets).map_err(|e| StoreError::io(&tickets, e))
    })();
    if result.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    result?;
    let outcome = Outcome {
        ticket: id,
        operation: "create".into(),
        event_id: event.id().map(str::to_string),
        from: None,
        to: Some(yoi_core::State::Planning),
        replayed: false,
        index_error: None,
        notes: Vec::new(),
    };
    Ok(super::finish(ws, ctx, &fp, outcome))
}

/// The ticket whose `create` event carries operation id `op`, if any. Reads only the first
/// line of each thread.
fn find_created_by_op(ws: &Workspace, op: &str) -> Result<Option<(TicketId, Event)>, StoreError> {
    for id in ws.ticket_ids()? {
        let path = ws.path_of(&id, THREAD);
        let Some(text) = ws
            .writes
            .read_opt(&path)
            .map_err(|e| StoreError::io(&path, e))?
        else {
            continue;
        };
        let first = text.lines().next().unwrap_or("");
        // The op id may be quoted and escaped in the header, so look for the attribute, not
        // the raw id.
        if !first.contains(" op: ") {
            continue;
        }
        if let Ok((kind, attrs)) = parse_header(first) {
            let event = Event {
                kind,
                attrs,
                heading: None,
                body: String::new(),
            };
            if event.op() == Some(op) {
                return Ok(Some((id, event)));
            }
        }
    }
    Ok(None)
}

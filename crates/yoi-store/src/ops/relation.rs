//! `relation add` / `relation rm`: forward relations in the source ticket's relations.json.
//! Refused at write time: self relations, unknown targets, duplicates, and depends_on/blocks
//! edges that would close a cycle (the cycle is named). Each change is audited in the source
//! ticket's thread as a `relation_changed` event.

use serde_json::json;
use yoi_core::relation::{format_cycle, Relation, RelationKind, MAX_NOTE_BYTES};
use yoi_core::thread::{Event, EventKind};
use yoi_core::{State, TicketId};

use super::edit::fresh;
use super::{append_events, fingerprint, finish, replay_of, stamp, write_item, Ctx, Outcome};
use crate::error::{Refusal, StoreError};
use crate::tickets::{ARTIFACTS, RELATIONS};
use crate::workspace::Workspace;

#[derive(Debug, Clone)]
pub struct RelationRequest {
    pub kind: RelationKind,
    pub target: String,
    pub note: Option<String>,
}

pub fn add_relation(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &RelationRequest,
) -> Result<Outcome, StoreError> {
    if req.note.as_ref().is_some_and(|n| n.len() > MAX_NOTE_BYTES) {
        return Err(StoreError::bad_input(
            "note",
            format!("must be at most {MAX_NOTE_BYTES} bytes"),
        ));
    }
    let _lock = ws.lock()?;
    let id = ws.resolve(query)?;
    let target = ws.resolve(&req.target)?;
    let thread = ws.read_thread(&id)?;
    let fp = fingerprint(
        "relation_add",
        id.as_str(),
        &json!({ "kind": req.kind, "target": target, "note": req.note }),
    );
    if let Some(o) = replay_of(ws, &thread, ctx, &fp, &id, "relation_add")? {
        return Ok(o);
    }
    if target == id {
        return Err(StoreError::SelfRelation { ticket: id });
    }
    let mut file = ws.read_relations(&id)?;
    if file.contains(req.kind, &target) {
        return Err(StoreError::DuplicateRelation {
            ticket: id,
            kind: req.kind,
            target,
        });
    }
    if req.kind.is_ordering() {
        let graph = ws.read_graph()?;
        if let Some(cycle) = graph.cycle_with(&id, req.kind, &target) {
            return Err(StoreError::Cycle {
                ticket: id,
                kind: req.kind,
                target,
                cycle: format_cycle(&cycle),
            });
        }
    }
    let mut item = ws.read_item(&id)?;
    if req.kind.is_ordering() {
        refuse_blocking_started(ws, &id, &item, req.kind, &target)?;
    }
    file.relations.push(Relation {
        ticket_id: id.clone(),
        kind: req.kind,
        target: target.clone(),
        note: req.note.clone().filter(|n| !n.trim().is_empty()),
        author: ctx.principal.author(),
        at: ctx.now,
    });
    let body = match &req.note {
        Some(n) if !n.trim().is_empty() => {
            format!("Added {} {}.\n\n{}", req.kind, target, n.trim())
        }
        _ => format!("Added {} {}.", req.kind, target),
    };
    let event = stamp(
        Event::new(EventKind::RelationChanged, &body)
            .with_attr("action", "add")
            .with_attr("kind", req.kind.as_str())
            .with_attr("target", target.as_str()),
        ctx,
        &fp,
    );
    append_events(ws, &id, std::slice::from_ref(&event))?;
    write_relations(ws, &id, &file)?;
    item.updated_at = ctx.now;
    write_item(ws, &id, &item)?;
    Ok(finish(ws, ctx, &fp, fresh(&id, "relation_add", &event)))
}

/// A new blocker cannot hold back work that has started: `id depends_on target` (or
/// `id blocks target`) is refused while the blocked end is in progress and the blocking end is
/// not finished. Accept refuses a blocked ticket; without this, a relation added afterwards
/// would leave a ticket in progress behind an open blocker, which nothing would ever act on.
fn refuse_blocking_started(
    ws: &Workspace,
    id: &TicketId,
    item: &yoi_core::Item,
    kind: RelationKind,
    target: &TicketId,
) -> Result<(), StoreError> {
    let other = ws.read_item(target)?;
    let (blocked, blocked_state, blocker, blocker_state) = match kind {
        RelationKind::Blocks => (target, other.state, id, item.state),
        _ => (id, item.state, target, other.state),
    };
    if blocked_state != State::Inprogress || blocker_state.is_finished() {
        return Ok(());
    }
    Err(StoreError::Refused {
        reason: Refusal::BlockerAfterStart {
            blocked: blocked.clone(),
            blocker: blocker.clone(),
            blocker_state,
        },
    })
}

pub fn remove_relation(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    kind: RelationKind,
    target: &str,
) -> Result<Outcome, StoreError> {
    let _lock = ws.lock()?;
    let id = ws.resolve(query)?;
    // The target may have been deleted by hand; accept its exact id even then.
    let target = match ws.resolve(target) {
        Ok(t) => t,
        Err(e) => yoi_core::TicketId::parse(&target.trim().to_ascii_uppercase()).map_err(|_| e)?,
    };
    let thread = ws.read_thread(&id)?;
    let fp = fingerprint(
        "relation_rm",
        id.as_str(),
        &json!({ "kind": kind, "target": target }),
    );
    if let Some(o) = replay_of(ws, &thread, ctx, &fp, &id, "relation_rm")? {
        return Ok(o);
    }
    let mut file = ws.read_relations(&id)?;
    let before = file.relations.len();
    file.relations
        .retain(|r| !(r.kind == kind && r.target == target));
    if file.relations.len() == before {
        return Err(StoreError::NoSuchRelation {
            ticket: id,
            kind,
            target,
        });
    }
    let mut item = ws.read_item(&id)?;
    let event = stamp(
        Event::new(
            EventKind::RelationChanged,
            &format!("Removed {kind} {target}."),
        )
        .with_attr("action", "remove")
        .with_attr("kind", kind.as_str())
        .with_attr("target", target.as_str()),
        ctx,
        &fp,
    );
    append_events(ws, &id, std::slice::from_ref(&event))?;
    write_relations(ws, &id, &file)?;
    item.updated_at = ctx.now;
    write_item(ws, &id, &item)?;
    Ok(finish(ws, ctx, &fp, fresh(&id, "relation_rm", &event)))
}

fn write_relations(
    ws: &Workspace,
    id: &yoi_core::TicketId,
    file: &yoi_core::relation::RelationsFile,
) -> Result<(), StoreError> {
    let dir = ws.path_of(id, ARTIFACTS);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let path = ws.path_of(id, RELATIONS);
    ws.writes
        .atomic_write(&path, file.render().as_bytes())
        .map_err(|e| StoreError::io(&path, e))?;
    super::artifacts_changed(&dir);
    Ok(())
}

//! [`decide`]: the routing checks for one queued ticket, read fresh from the files. Pure reads;
//! nothing is written.

use std::collections::BTreeMap;

use yoi_core::decision::RoutingDecision;
use yoi_core::packet::IntentPacket;
use yoi_core::plan::PlanKind;
use yoi_core::{scope, Item, State, TicketId};
use yoi_store::{StoreError, Workspace};

/// What the router concludes for `id`, or `None` when the ticket is not `queued` (only queued
/// tickets are routed). Checks in order: open blockers (any state but done/closed, including
/// in flight), missing required brief sections, capacity (`max_inprogress` tickets in
/// `inprogress`), conflicts with in-progress tickets (a `conflicts_with`/`do_not_parallelize`
/// plan record on either side, or overlapping write scopes), and otherwise
/// `implementation_ready` on `yoi/<id>-<slug>` from the resolved target ref.
///
/// A target ref that does not resolve to a commit is a [`StoreError::BadInput`] naming it.
pub fn decide(
    ws: &Workspace,
    id: &TicketId,
    max_inprogress: usize,
) -> Result<Option<RoutingDecision>, StoreError> {
    let item = ws.read_item(id)?;
    if item.state != State::Queued {
        return Ok(None);
    }
    let items: BTreeMap<TicketId, Item> = ws.read_all_items()?.into_iter().collect();

    let graph = ws.read_graph()?;
    let blockers = graph.blockers(id, |t| items.get(t).map(|i| i.state));
    if !blockers.is_empty() {
        return Ok(Some(RoutingDecision::BlockedByDependency { blockers }));
    }

    let packet = IntentPacket::from_body(item.body_text());
    let completeness = packet.completeness();
    if !completeness.is_complete() {
        return Ok(Some(RoutingDecision::ReturnToPlanning {
            missing: completeness.missing_required,
        }));
    }

    let in_progress: Vec<(&TicketId, &Item)> = items
        .iter()
        .filter(|(t, i)| i.state == State::Inprogress && *t != id)
        .collect();
    if in_progress.len() >= max_inprogress {
        return Ok(Some(RoutingDecision::WaitingCapacity {
            in_progress: in_progress.len(),
            max: max_inprogress,
        }));
    }

    let with = conflicts(ws, id, &packet, &in_progress)?;
    if !with.is_empty() {
        return Ok(Some(RoutingDecision::WaitingConflict { with }));
    }

    let target = item
        .effective_target_ref()
        .unwrap_or_else(|| ws.config.workspace.default_target.clone());
    let base_commit = yoi_git::resolve_commit(ws.root(), &target)
        .map_err(|e| StoreError::bad_input("target ref", e.to_string()))?;
    Ok(Some(RoutingDecision::ImplementationReady {
        branch: super::branch_name(id, &item.title),
        base_commit,
    }))
}

fn is_conflict_kind(kind: PlanKind) -> bool {
    matches!(kind, PlanKind::ConflictsWith | PlanKind::DoNotParallelize)
}

/// Every in-progress ticket that conflicts with `id`, with why, sorted and de-duplicated.
fn conflicts(
    ws: &Workspace,
    id: &TicketId,
    packet: &IntentPacket,
    in_progress: &[(&TicketId, &Item)],
) -> Result<Vec<(TicketId, String)>, StoreError> {
    let mut out: Vec<(TicketId, String)> = Vec::new();
    for rec in ws.read_plan(id)? {
        let Some(other) = &rec.related_ticket else {
            continue;
        };
        if is_conflict_kind(rec.kind) && in_progress.iter().any(|(t, _)| *t == other) {
            out.push((other.clone(), rec.kind.as_str().to_string()));
        }
    }
    for (other, other_item) in in_progress {
        for rec in ws.read_plan(other)? {
            if is_conflict_kind(rec.kind) && rec.related_ticket.as_ref() == Some(id) {
                out.push(((*other).clone(), rec.kind.as_str().to_string()));
            }
        }
        let theirs = IntentPacket::from_body(other_item.body_text()).write_scope;
        if let Some((mine, _)) = scope::overlaps(&packet.write_scope, &theirs) {
            out.push(((*other).clone(), format!("write scope overlap on {mine}")));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

//! [`decide`]: the routing checks for one queued ticket, read fresh from the files. Pure reads;
//! nothing is written.

use std::collections::BTreeMap;

use yoi_core::decision::RoutingDecision;
use yoi_core::packet::IntentPacket;
use yoi_core::plan::PlanKind;
use yoi_core::relation::RelationGraph;
use yoi_core::thread::ParsedThread;
use yoi_core::{scope, Item, State, TicketId};
use yoi_store::{StoreError, Workspace};

use super::circuit::Circuit;

/// Every ticket's item and the relation graph, read once for a routing pass. Deciding re-reads
/// the routed ticket itself (and its thread); the snapshot supplies the other tickets' states
/// and is updated by the pass as it accepts or returns tickets. A broken ticket (its item.md
/// unreadable) is left out, so it stops neither the pass nor the queue page; as a blocker it
/// counts as a ticket in no known state, which blocks.
pub struct Snapshot {
    pub items: BTreeMap<TicketId, Item>,
    pub graph: RelationGraph,
}

impl Snapshot {
    pub fn load(ws: &Workspace) -> Result<Snapshot, StoreError> {
        Ok(Snapshot {
            items: ws.read_readable_items()?.into_iter().collect(),
            graph: ws.read_graph()?,
        })
    }

    /// Queued tickets in queue order: first queued first (then by id).
    pub fn queued(&self) -> Vec<TicketId> {
        let mut q: Vec<(&Item, &TicketId)> = self
            .items
            .iter()
            .filter(|(_, i)| i.state == State::Queued)
            .map(|(t, i)| (i, t))
            .collect();
        q.sort_by(|a, b| (a.0.queued_at, a.1).cmp(&(b.0.queued_at, b.1)));
        q.into_iter().map(|(_, t)| t.clone()).collect()
    }

    pub fn in_progress(&self) -> usize {
        self.items
            .values()
            .filter(|i| i.state == State::Inprogress)
            .count()
    }
}

/// What the router concludes for `id` now (see [`decide_in`]), reading everything afresh.
pub fn decide(
    ws: &Workspace,
    id: &TicketId,
    max_inprogress: usize,
) -> Result<Option<RoutingDecision>, StoreError> {
    decide_in(ws, &Snapshot::load(ws)?, id, max_inprogress)
}

/// What the router concludes for `id`, or `None` when the ticket is not `queued` (only queued
/// tickets are routed). The ticket and its thread are re-read; other tickets come from `snap`.
///
/// Checks in order: an open circuit (`circuit_open`: nothing is dispatched until a person
/// retries), open blockers (any state but done/closed, including in flight), missing required
/// brief sections, capacity (`max_inprogress` tickets in `inprogress`), conflicts with
/// in-progress tickets (a `conflicts_with`/`do_not_parallelize` plan record on either side, or
/// overlapping write scopes), the target ref (ticket `target_ref`, else the configured default;
/// one that does not resolve to a commit is an `acceptance_failed` at step
/// `resolve_target_ref`), and otherwise `implementation_ready` on `yoi/<id>-<slug>`.
pub fn decide_in(
    ws: &Workspace,
    snap: &Snapshot,
    id: &TicketId,
    max_inprogress: usize,
) -> Result<Option<RoutingDecision>, StoreError> {
    let item = ws.read_item(id)?;
    if item.state != State::Queued {
        return Ok(None);
    }
    decide_for(ws, snap, id, &item, &ws.read_thread(id)?, max_inprogress)
}

/// [`decide_in`] on an item and thread the caller has just read.
pub fn decide_for(
    ws: &Workspace,
    snap: &Snapshot,
    id: &TicketId,
    item: &Item,
    thread: &ParsedThread,
    max_inprogress: usize,
) -> Result<Option<RoutingDecision>, StoreError> {
    if item.state != State::Queued {
        return Ok(None);
    }
    let circuit = Circuit::of(thread);
    if circuit.open {
        return Ok(Some(RoutingDecision::CircuitOpen {
            failures: circuit.consecutive,
        }));
    }

    let blockers = snap
        .graph
        .blockers(id, |t| snap.items.get(t).map(|i| i.state));
    if !blockers.is_empty() {
        return Ok(Some(RoutingDecision::BlockedByDependency { blockers }));
    }

    let packet = IntentPacket::from_body(item.body_text());
    let completeness = packet.completeness();
    if !completeness.is_complete() {
        return Ok(Some(RoutingDecision::ReturnToPlanning {
            missing: completeness.missing_required,
            flow: vec![],
        }));
    }
    if let Err(problems) = crate::flows::resolve(ws, item) {
        return Ok(Some(RoutingDecision::ReturnToPlanning {
            missing: vec![],
            flow: problems,
        }));
    }

    let in_progress: Vec<(&TicketId, &Item)> = snap
        .items
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
    match yoi_git::resolve_commit(ws.root(), &target) {
        Ok(base_commit) => Ok(Some(RoutingDecision::ImplementationReady {
            branch: super::branch_name(id, &item.title),
            base_commit,
        })),
        Err(e) => Ok(Some(RoutingDecision::AcceptanceFailed {
            step: RESOLVE_TARGET.into(),
            error: format!("target ref `{target}`: {e}"),
            attempt: circuit.consecutive + 1,
        })),
    }
}

/// The step name of a target ref that does not resolve.
pub const RESOLVE_TARGET: &str = "resolve_target_ref";

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

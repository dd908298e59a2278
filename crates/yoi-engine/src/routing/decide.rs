//! [`decide`]: the routing checks for one queued ticket, read fresh from the files. Pure reads;
//! nothing is written.

use std::collections::BTreeMap;

use yoi_core::decision::RoutingDecision;
use yoi_core::packet::IntentPacket;
use yoi_core::plan::PlanKind;
use yoi_core::relation::RelationGraph;
use yoi_core::thread::ParsedThread;
use yoi_core::{scope, Item, State, TicketId};
use yoi_db::{DbIndex, RoutingWindow};
use yoi_store::{StoreError, Workspace};

use super::circuit::Circuit;
use super::window::routing_thread_ahead;

/// Every ticket's item and the relation graph, read once for a routing pass. Deciding re-reads
/// the routed ticket itself (and its thread); the snapshot supplies the other tickets' states
/// and is updated by the pass as it accepts or returns tickets. A broken ticket (its item.md
/// unreadable, or its relations.json damaged) is left out, so it stops neither the pass nor
/// the queue page; as a blocker it counts as a ticket in no known state, which blocks (see
/// [`Snapshot::blocker_state`] for the damage the snapshot does not read).
pub struct Snapshot {
    pub items: BTreeMap<TicketId, Item>,
    pub graph: RelationGraph,
    /// Every ticket in `items` was found whole where it was read: the index holds a row only
    /// for a ticket whose files all read (its thread.md and orchestration-plan.jsonl too; a
    /// broken one has none, so it is absent and blocks). A finished blocker is then not looked
    /// at on disk again ([`Snapshot::blocker_state`]). False for a snapshot of the files, which
    /// reads neither of those two.
    pub whole: bool,
    /// Tickets in progress that are not in `items`: counted, not read. Only a snapshot with no
    /// slot free leaves them out (deciding then stops at capacity and reads nothing of them).
    pub in_progress_unread: usize,
}

impl Snapshot {
    pub fn load(ws: &Workspace) -> Result<Snapshot, StoreError> {
        let (graph, damaged) = ws.read_graph_noting_damage()?;
        let mut items: BTreeMap<TicketId, Item> = ws.read_readable_items()?.into_iter().collect();
        items.retain(|id, _| !damaged.contains(id));
        Ok(Snapshot {
            items,
            graph,
            whole: false,
            in_progress_unread: 0,
        })
    }

    /// The state blocker `t` counts with: its item's, or none (which blocks) when it is broken.
    /// A blocker whose item says it is finished is looked at once more
    /// ([`Workspace::diagnose`]), so a damaged thread.md or orchestration-plan.jsonl (the
    /// snapshot reads neither) also keeps it blocking, as the queue gate does.
    pub fn blocker_state(&self, ws: &Workspace, t: &TicketId) -> Option<State> {
        let state = self.items.get(t)?.state;
        if state.is_finished() && !self.whole && ws.diagnose(t).is_some() {
            return None;
        }
        Some(state)
    }

    /// The open blockers of `id` ([`Snapshot::blocker_state`]).
    pub fn blockers(&self, ws: &Workspace, id: &TicketId) -> Vec<yoi_core::relation::Blocker> {
        self.graph.blockers(id, |t| self.blocker_state(ws, t))
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
        self.in_progress_unread
            + self
                .items
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
    decide_with(ws, None, snap, id, max_inprogress)
}

/// [`decide_in`], reading only the routing part of the thread ([`routing_thread`]): from
/// `index` when it holds exactly what thread.md holds, so a long thread costs no more than a
/// short one; else from the file. The router's pass decides this way.
pub fn decide_with(
    ws: &Workspace,
    index: Option<&DbIndex>,
    snap: &Snapshot,
    id: &TicketId,
    max_inprogress: usize,
) -> Result<Option<RoutingDecision>, StoreError> {
    Ok(decide_reading(ws, index, None, snap, id, max_inprogress)?.map(|(decision, _)| decision))
}

/// [`decide_with`], taking the window from `ahead` while it is current
/// ([`routing_thread_ahead`]), and handing back the routing part of the thread it decided on,
/// so recording the decision need not read it again.
pub(super) fn decide_reading(
    ws: &Workspace,
    index: Option<&DbIndex>,
    ahead: Option<RoutingWindow>,
    snap: &Snapshot,
    id: &TicketId,
    max_inprogress: usize,
) -> Result<Option<(RoutingDecision, ParsedThread)>, StoreError> {
    let item = ws.read_item(id)?;
    if item.state != State::Queued {
        return Ok(None);
    }
    let thread = routing_thread_ahead(ws, index, id, ahead)?;
    let decision = decide_for(ws, snap, id, &item, &thread, max_inprogress)?;
    Ok(decision.map(|decision| (decision, thread)))
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
    // A damaged plan file makes the ticket broken: it is not routed (the error names the file).
    let plan = ws.read_plan(id)?;
    let circuit = Circuit::of(thread);
    if circuit.open {
        return Ok(Some(RoutingDecision::CircuitOpen {
            failures: circuit.consecutive,
        }));
    }

    let blockers = snap.blockers(ws, id);
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
    let busy = in_progress.len() + snap.in_progress_unread;
    if busy >= max_inprogress {
        return Ok(Some(RoutingDecision::WaitingCapacity {
            in_progress: busy,
            max: max_inprogress,
        }));
    }

    let with = conflicts(ws, id, &plan, &packet, &in_progress)?;
    if !with.is_empty() {
        return Ok(Some(RoutingDecision::WaitingConflict { with }));
    }

    let target = item
        .effective_target_ref()
        .unwrap_or_else(|| ws.config.workspace.default_target.clone());
    match yoi_git::resolve_commit(ws.root(), &target) {
        Ok(base) => {
            let (branch, base_commit) = branch_and_start(ws, &plan, id, &item.title, base);
            Ok(Some(RoutingDecision::ImplementationReady {
                branch,
                base_commit,
            }))
        }
        Err(e) => Ok(Some(RoutingDecision::AcceptanceFailed {
            step: RESOLVE_TARGET.into(),
            error: format!("target ref `{target}`: {e}"),
            attempt: circuit.consecutive + 1,
        })),
    }
}

/// The branch an acceptance of `id` works on, and the commit it starts at (docs/routing.md, "A
/// ticket accepted again"). A ticket accepted before continues on the branch its latest
/// acceptance made, whatever its title says now: at the branch's head when it holds commits the
/// target `base` lacks — the earlier attempts' work and what people pushed to its pull request
/// stay the ticket's, and its pull request goes on with the new attempt — else at `base` (the
/// branch holds nothing the target lacks — nothing was done on it, or it was merged — and the
/// acceptance moves it there; or it is gone). Otherwise `yoi/<id>-<slug>` at `base`.
fn branch_and_start(
    ws: &Workspace,
    plan: &[yoi_core::plan::PlanRecord],
    id: &TicketId,
    title: &str,
    base: String,
) -> (String, String) {
    let Some(branch) = yoi_store::latest_accepted(plan.iter()).and_then(|p| p.branch.clone())
    else {
        return (super::branch_name(id, title), base);
    };
    match yoi_git::resolve_commit(ws.root(), &format!("refs/heads/{branch}")) {
        Ok(head) if !yoi_git::is_ancestor(ws.root(), &head, &base).unwrap_or(false) => {
            (branch, head)
        }
        _ => (branch, base),
    }
}

/// The step name of a target ref that does not resolve.
pub const RESOLVE_TARGET: &str = "resolve_target_ref";

fn is_conflict_kind(kind: PlanKind) -> bool {
    matches!(kind, PlanKind::ConflictsWith | PlanKind::DoNotParallelize)
}

/// Every in-progress ticket that conflicts with `id` (whose plan records are `plan`), with why,
/// sorted and de-duplicated. An in-progress ticket whose plan file is damaged adds no plan
/// conflict (it is listed as broken; its write scope still counts), so one torn line does not
/// hold every queued ticket back.
fn conflicts(
    ws: &Workspace,
    id: &TicketId,
    plan: &[yoi_core::plan::PlanRecord],
    packet: &IntentPacket,
    in_progress: &[(&TicketId, &Item)],
) -> Result<Vec<(TicketId, String)>, StoreError> {
    let mut out: Vec<(TicketId, String)> = Vec::new();
    for rec in plan {
        let Some(other) = &rec.related_ticket else {
            continue;
        };
        if is_conflict_kind(rec.kind) && in_progress.iter().any(|(t, _)| *t == other) {
            out.push((other.clone(), rec.kind.as_str().to_string()));
        }
    }
    for (other, other_item) in in_progress {
        let theirs = match ws.read_plan(other) {
            Err(StoreError::Invalid { .. }) => Vec::new(),
            read => read?,
        };
        for rec in theirs {
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

//! The routing view of one ticket: its latest routing decision, what the router would decide
//! now (computed, never written), blockers, brief completeness, capacity and circuit. Behind
//! `GET /api/v1/tickets/{id}/routing` and `yoi ticket route ID --dry-run`.

use std::collections::BTreeMap;

use serde::Serialize;
use yoi_core::decision::{read_decision, RoutingDecision};
use yoi_core::packet::IntentPacket;
use yoi_core::relation::Blocker;
use yoi_core::{State, TicketId};
use yoi_store::{StoreError, Workspace};

use super::circuit::{Circuit, OPEN_AFTER, STOP_AFTER};
use super::decide::{decide_for, Snapshot};

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RoutingView {
    pub ticket: TicketId,
    pub state: State,
    /// The orchestrator's last decision event, if any.
    pub latest_decision: Option<LatestDecision>,
    /// What the router would decide now; `None` unless the ticket is queued.
    pub would_decide: Option<WouldDecide>,
    pub blockers: Vec<Blocker>,
    pub packet: PacketStatus,
    pub capacity: Capacity,
    pub circuit: CircuitStatus,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LatestDecision {
    pub kind: Option<String>,
    /// The decision as data; `None` for a decision event written before events carried it.
    pub decision: Option<RoutingDecision>,
    pub event_id: Option<String>,
    /// The decision event's `at` attribute, an RFC 3339 time.
    #[schema(format = DateTime)]
    pub at: Option<String>,
    pub body: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WouldDecide {
    pub kind: String,
    /// The decision as it would be written.
    pub rendered: String,
    pub decision: RoutingDecision,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PacketStatus {
    pub complete: bool,
    pub missing_required: Vec<String>,
    pub missing_optional: Vec<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Capacity {
    pub in_progress: usize,
    pub max: usize,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CircuitStatus {
    pub open: bool,
    pub consecutive_failures: u32,
    pub open_after: u32,
    pub stop_after: u32,
    pub step_failures: BTreeMap<String, u32>,
}

/// The routing view of the ticket `query` names (an id or unique suffix).
pub fn routing_view(
    ws: &Workspace,
    query: &str,
    max_inprogress: usize,
) -> Result<RoutingView, StoreError> {
    let id = ws.resolve(query)?;
    let snap = Snapshot::load(ws)?;
    let item = ws.read_item(&id)?;
    let thread = ws.read_thread(&id)?;
    let would = decide_for(ws, &snap, &id, &item, &thread, max_inprogress)?;
    let blockers = snap.blockers(ws, &id);
    let capacity = Capacity {
        in_progress: snap.in_progress(),
        max: max_inprogress,
    };
    Ok(view_of(id, &item, &thread, would, blockers, capacity))
}

/// Assemble a routing view from what the caller has read.
fn view_of(
    id: TicketId,
    item: &yoi_core::Item,
    thread: &yoi_core::thread::ParsedThread,
    would: Option<RoutingDecision>,
    blockers: Vec<Blocker>,
    capacity: Capacity,
) -> RoutingView {
    let latest = super::record::last_decision(thread).map(|e| {
        let read = read_decision(&e.body);
        LatestDecision {
            kind: read.as_ref().map(|r| r.kind.clone()),
            decision: read.and_then(|r| r.data),
            event_id: e.id().map(str::to_string),
            at: e.get("at").map(str::to_string),
            body: e.body.clone(),
        }
    });
    let would = would.map(|d| WouldDecide {
        kind: d.kind().to_string(),
        rendered: d.render(),
        decision: d,
    });
    let completeness = IntentPacket::from_body(item.body_text()).completeness();
    let names =
        |v: &[yoi_core::brief::Section]| v.iter().map(|s| s.heading().to_string()).collect();
    let circuit = Circuit::of(thread);
    RoutingView {
        blockers,
        packet: PacketStatus {
            complete: completeness.is_complete(),
            missing_required: names(&completeness.missing_required),
            missing_optional: names(&completeness.missing_optional),
        },
        capacity,
        circuit: CircuitStatus {
            open: circuit.open,
            consecutive_failures: circuit.consecutive,
            open_after: OPEN_AFTER,
            stop_after: STOP_AFTER,
            step_failures: circuit.step_failures,
        },
        ticket: id,
        state: item.state,
        latest_decision: latest,
        would_decide: would,
    }
}

/// [`routing_view`] for a page that has read the ticket's relation view already: every other
/// ticket is loaded only when this one is queued (what the router would decide needs them);
/// otherwise the blockers come from `relations` and the capacity from `in_progress`, so a
/// ticket page costs one ticket's files whatever the backlog.
pub fn routing_view_for(
    ws: &Workspace,
    id: &TicketId,
    max_inprogress: usize,
    in_progress: usize,
    relations: &yoi_store::query::RelationView,
) -> Result<RoutingView, StoreError> {
    if relations.state == State::Queued {
        return routing_view(ws, id.as_str(), max_inprogress);
    }
    let item = ws.read_item(id)?;
    let thread = ws.read_thread(id)?;
    Ok(view_of(
        id.clone(),
        &item,
        &thread,
        None,
        relations.blockers.clone(),
        Capacity {
            in_progress,
            max: max_inprogress,
        },
    ))
}

/// One queued ticket as the queue page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct QueueEntry {
    pub view: RoutingView,
    pub title: String,
    pub queued_at: Option<String>,
    pub queued_by: Option<String>,
}

/// Every queued ticket in routing order with its routing view (what the router would decide
/// now among them, in that order), and the ready tickets that could be queued.
#[derive(Debug, Clone, Serialize)]
pub struct QueueView {
    /// The first `limit` queued tickets.
    pub queued: Vec<QueueEntry>,
    pub queued_total: usize,
    /// The first `limit` ready tickets.
    pub ready: Vec<(TicketId, String)>,
    pub ready_total: usize,
    pub capacity: Capacity,
}

/// The queue, read once: all items and the graph, then the thread of each of the first `limit`
/// queued tickets.
pub fn queue_view(
    ws: &Workspace,
    max_inprogress: usize,
    limit: usize,
) -> Result<QueueView, StoreError> {
    queue_view_indexed(ws, None, max_inprogress, limit)
}

/// [`queue_view`] read from `index` when given: which tickets are queued, in progress and
/// ready, the items and relations deciding for the listed tickets needs ([`from_index`]), and
/// the listed tickets' routing events (`yoi_db`'s `routing_events_of`: the latest decision and
/// the circuit's window, two statements for the page) instead of their whole threads. A
/// finished blocker the index holds is whole (see [`Snapshot::whole`]), so it is not looked at
/// on disk again. Nothing on the page
/// then grows with the tree or with a thread's length but the lists of ids; what it says is
/// what reading the files says (`tests/queue_index.rs`).
pub fn queue_view_indexed(
    ws: &Workspace,
    index: Option<&crate::db::DbIndex>,
    max_inprogress: usize,
    limit: usize,
) -> Result<QueueView, StoreError> {
    let parts = match index {
        Some(index) => from_index(index, limit, max_inprogress)?,
        None => from_files(ws, limit)?,
    };
    let snap = &parts.snap;
    let capacity = Capacity {
        in_progress: snap.in_progress(),
        max: max_inprogress,
    };
    // Every listed ticket's routing events in one go (a ticket the index holds no row of is
    // absent: its thread is read from the file below).
    let listed: Vec<TicketId> = parts.queued.iter().take(limit).cloned().collect();
    let mut indexed_events = match index {
        Some(index) => index.routing_events_of(&listed)?,
        None => BTreeMap::new(),
    };
    let mut queued = Vec::new();
    for id in &listed {
        // Gone from the index between its two reads: the next page lists it again.
        let Some(item) = snap.items.get(id) else {
            continue;
        };
        // A thread.md yoi cannot read makes the ticket broken: the page lists it as such.
        let thread = match indexed_events.remove(id) {
            Some(events) => yoi_core::thread::ParsedThread {
                lines: vec![0; events.len()],
                events,
                issues: Vec::new(),
            },
            None => match ws.read_thread(id) {
                Ok(t) => t,
                Err(StoreError::Invalid { .. }) => continue,
                Err(e) => return Err(e),
            },
        };
        // So does a damaged plan file (deciding reads it).
        let would = match decide_for(ws, snap, id, item, &thread, max_inprogress) {
            Ok(would) => would,
            Err(StoreError::Invalid { .. }) => continue,
            Err(e) => return Err(e),
        };
        // Deciding found them already when they decided; looking at every finished one on
        // disk again would double the page's file reads.
        let blockers = match &would {
            Some(RoutingDecision::BlockedByDependency { blockers }) => blockers.clone(),
            _ => snap.blockers(ws, id),
        };
        queued.push(QueueEntry {
            title: item.title.clone(),
            queued_at: item.queued_at.map(|t| t.to_string()),
            queued_by: item.queued_by.clone(),
            view: view_of(id.clone(), item, &thread, would, blockers, capacity.clone()),
        });
    }
    Ok(QueueView {
        queued,
        queued_total: parts.queued_total,
        ready_total: parts.ready_total,
        ready: parts.ready,
        capacity,
    })
}

/// What the queue page decides from: a snapshot holding at least the tickets deciding for the
/// listed ones reads, every queued ticket in routing order, and the first ready ones.
struct QueueParts {
    snap: Snapshot,
    /// At least the first `limit` queued tickets in routing order.
    queued: Vec<TicketId>,
    queued_total: usize,
    ready: Vec<(TicketId, String)>,
    ready_total: usize,
}

/// Every ticket's item and the whole relation graph, from the files.
fn from_files(ws: &Workspace, limit: usize) -> Result<QueueParts, StoreError> {
    let snap = Snapshot::load(ws)?;
    let ready: Vec<(TicketId, String)> = snap
        .items
        .iter()
        .filter(|(_, i)| i.state == State::Ready)
        .map(|(id, i)| (id.clone(), i.title.clone()))
        .collect();
    let queued = snap.queued();
    Ok(QueueParts {
        queued_total: queued.len(),
        queued,
        ready_total: ready.len(),
        ready: ready.into_iter().take(limit).collect(),
        snap,
    })
}

/// A snapshot of only what deciding for the first `limit` queued tickets reads of other
/// tickets (`decide_for`): the items of those tickets, the relations that make their blockers
/// and the blockers' states (a state is all a blocker is asked), and the tickets in progress —
/// whole while fewer than `max_inprogress` are (their write scopes decide conflicts), else only
/// counted: with no slot free, deciding stops at capacity and reads nothing else of them
/// (`Snapshot::in_progress_unread`). The router's own pass loads the whole snapshot from the
/// files; this one is for reading, never for routing.
fn from_index(
    index: &crate::db::DbIndex,
    limit: usize,
    max_inprogress: usize,
) -> Result<QueueParts, StoreError> {
    let rows = index.queue_rows(limit, max_inprogress)?;
    let listed = &rows.queued;
    let relations = index.blocking_relations(listed)?;
    // Whole items of the listed tickets and, while a slot is free, of every ticket in progress
    // (`queue_rows` gives their ids only then); of the blockers only their states.
    let mut ids: Vec<TicketId> = listed.clone();
    ids.extend(rows.in_progress.iter().cloned());
    ids.sort();
    ids.dedup();
    let mut items = index.indexed_items(&ids)?;
    let mut blockers: Vec<TicketId> = relations
        .iter()
        .flat_map(|r| [&r.ticket_id, &r.target])
        .filter(|t| !items.contains_key(*t))
        .cloned()
        .collect();
    blockers.sort();
    blockers.dedup();
    for (id, state) in index.indexed_states(&blockers)? {
        let mut only_state = yoi_core::Item::new(
            String::new(),
            yoi_core::Timestamp::from_unix_millis(0),
            String::new(),
        );
        only_state.state = state;
        items.insert(id, only_state);
    }
    // In progress but not read: the rest of the count (none when all were read).
    let read = items
        .values()
        .filter(|i| i.state == State::Inprogress)
        .count();
    let snap = Snapshot {
        items,
        graph: yoi_core::relation::RelationGraph::from_owned(relations),
        whole: true,
        in_progress_unread: rows.in_progress_total.saturating_sub(read),
    };
    Ok(QueueParts {
        snap,
        queued: rows.queued,
        queued_total: rows.queued_total,
        ready: rows.ready,
        ready_total: rows.ready_total,
    })
}

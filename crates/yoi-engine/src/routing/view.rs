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

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct LatestDecision {
    pub kind: Option<String>,
    /// The decision as data; `None` for a decision event written before events carried it.
    pub decision: Option<RoutingDecision>,
    pub event_id: Option<String>,
    pub at: Option<String>,
    pub body: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct WouldDecide {
    pub kind: String,
    /// The decision as it would be written.
    pub rendered: String,
    pub decision: RoutingDecision,
}

#[derive(Debug, Clone, Serialize)]
pub struct PacketStatus {
    pub complete: bool,
    pub missing_required: Vec<String>,
    pub missing_optional: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Capacity {
    pub in_progress: usize,
    pub max: usize,
}

#[derive(Debug, Clone, Serialize)]
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
    let latest = super::record::last_decision(&thread).map(|e| {
        let read = read_decision(&e.body);
        LatestDecision {
            kind: read.as_ref().map(|r| r.kind.clone()),
            decision: read.and_then(|r| r.data),
            event_id: e.id().map(str::to_string),
            at: e.get("at").map(str::to_string),
            body: e.body.clone(),
        }
    });
    let would = decide_for(ws, &snap, &id, &item, &thread, max_inprogress)?.map(|d| WouldDecide {
        kind: d.kind().to_string(),
        rendered: d.render(),
        decision: d,
    });
    let completeness = IntentPacket::from_body(item.body_text()).completeness();
    let names =
        |v: &[yoi_core::brief::Section]| v.iter().map(|s| s.heading().to_string()).collect();
    let circuit = Circuit::of(&thread);
    Ok(RoutingView {
        blockers: snap
            .graph
            .blockers(&id, |t| snap.items.get(t).map(|i| i.state)),
        packet: PacketStatus {
            complete: completeness.is_complete(),
            missing_required: names(&completeness.missing_required),
            missing_optional: names(&completeness.missing_optional),
        },
        capacity: Capacity {
            in_progress: snap.in_progress(),
            max: max_inprogress,
        },
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
    })
}

//! Read queries over the files: list with filters, the blocker view, the relation view of one
//! ticket. (A later database index answers the same questions faster; the answers must agree.)

use std::collections::BTreeMap;

use serde::Serialize;
use yoi_core::relation::{Blocker, IdMap, Relation, RelationGraph, RelationKind};
use yoi_core::state::State;
use yoi_core::{TicketId, Timestamp};

use crate::error::StoreError;
use crate::workspace::Workspace;

/// A state filter as people write it: a comma list, `active` (every state but closed; also
/// the default) or `all`. `None` means the default.
pub fn parse_state_filter(
    spec: Option<&str>,
) -> Result<Option<Vec<State>>, yoi_core::state::StateParseError> {
    match spec.map(str::trim) {
        None | Some("") | Some("active") => Ok(None),
        Some("all") => Ok(Some(State::ALL.to_vec())),
        Some(list) => list
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<State>, _>>()
            .map(Some),
    }
}

#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// `None` means every state but closed.
    pub states: Option<Vec<State>>,
    /// Only ready or queued tickets with no open blocker.
    pub ready: bool,
    /// Only active tickets with at least one open blocker.
    pub blocked: bool,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct TicketSummary {
    pub id: TicketId,
    pub title: String,
    pub state: State,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<String>,
    pub blockers: Vec<Blocker>,
}

/// All tickets matching the filter, oldest first (ids sort by creation time).
pub fn list(ws: &Workspace, filter: &ListFilter) -> Result<Vec<TicketSummary>, StoreError> {
    let items = ws.read_all_items()?;
    let graph = ws.read_graph()?;
    let states: IdMap<State> = items.iter().map(|(id, i)| (id.key(), i.state)).collect();
    let state_of = |t: &TicketId| states.get(&t.key()).copied();
    // Who waits is decided for every ticket at once; the list of blockers is built only for
    // the tickets that have one.
    let waiting = graph.blocked_set(state_of);
    let mut kept = Vec::new();
    for (id, item) in items {
        let wanted_state = match &filter.states {
            Some(s) => s.contains(&item.state),
            None => item.state.is_active(),
        };
        if !wanted_state {
            continue;
        }
        let blockers = if item.state.is_finished() || !waiting.contains(&id) {
            Vec::new()
        } else {
            graph.blockers(&id, state_of)
        };
        if filter.ready
            && !(matches!(item.state, State::Ready | State::Queued) && blockers.is_empty())
        {
            continue;
        }
        if filter.blocked && blockers.is_empty() {
            continue;
        }
        kept.push((id, item, blockers));
    }
    // The time of last change counts the thread (`Item::last_changed`).
    let threads = crate::tickets::parallel_map(&kept, |(id, ..)| ws.read_thread(id))?;
    Ok(kept
        .into_iter()
        .zip(threads)
        .map(|((id, item, blockers), thread)| TicketSummary {
            target_ref: item.effective_target_ref(),
            updated_at: item.last_changed(&thread.events),
            id,
            title: item.title,
            state: item.state,
            created_at: item.created_at,
            blockers,
        })
        .collect())
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RelationEntry {
    /// The relation's name seen from this ticket (`depends_on`, or an inverse such as
    /// `dependency_of`).
    pub name: String,
    pub kind: RelationKind,
    pub other: TicketId,
    pub direction: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_state: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RelationView {
    pub ticket: TicketId,
    pub state: State,
    pub relations: Vec<RelationEntry>,
    pub blockers: Vec<Blocker>,
    pub notices: Vec<String>,
    /// Whether `queue` would accept the ticket's blockers now (state aside).
    pub can_queue: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_refusal: Option<String>,
}

/// Relations, open blockers and notices of one ticket.
pub fn relation_view(ws: &Workspace, id: &TicketId) -> Result<RelationView, StoreError> {
    let graph = ws.read_graph()?;
    relation_view_in(ws, &graph, id)
}

pub fn relation_view_in(
    ws: &Workspace,
    graph: &RelationGraph,
    id: &TicketId,
) -> Result<RelationView, StoreError> {
    let state = ws.read_item(id)?.state;
    let others: Vec<TicketId> = graph
        .outgoing(id)
        .map(|r| r.target.clone())
        .chain(graph.incoming(id).map(|r| r.ticket_id.clone()))
        .collect();
    let states = ws.states_of(&others)?;
    Ok(build_view(
        id,
        state,
        graph.outgoing(id),
        graph.incoming(id),
        &states,
    ))
}

/// The relation view from a ticket's outgoing and incoming relations and the states of the
/// tickets at their other ends (missing tickets absent). Shared by the file and index reads.
pub fn build_view<'a>(
    id: &TicketId,
    state: State,
    outgoing: impl IntoIterator<Item = &'a Relation>,
    incoming: impl IntoIterator<Item = &'a Relation>,
    states: &BTreeMap<TicketId, State>,
) -> RelationView {
    let outgoing: Vec<&Relation> = outgoing.into_iter().collect();
    let incoming: Vec<&Relation> = incoming.into_iter().collect();
    let mut relations = Vec::new();
    let mut notices = Vec::new();
    for r in outgoing.iter().copied() {
        relations.push(RelationEntry {
            name: r.kind.as_str().into(),
            kind: r.kind,
            other: r.target.clone(),
            direction: "outgoing",
            other_state: states.get(&r.target).copied(),
            note: r.note.clone(),
        });
        match r.kind {
            RelationKind::Supersedes => notices.push(format!(
                "supersedes {}: verify the replacement before routing",
                r.target
            )),
            RelationKind::DuplicateOf => notices.push(format!(
                "duplicate of {}: avoid a duplicate implementation",
                r.target
            )),
            _ => {}
        }
    }
    for r in incoming.iter().copied() {
        relations.push(RelationEntry {
            name: r.kind.inverse_name().into(),
            kind: r.kind,
            other: r.ticket_id.clone(),
            direction: "incoming",
            other_state: states.get(&r.ticket_id).copied(),
            note: r.note.clone(),
        });
        match r.kind {
            RelationKind::Supersedes => notices.push(format!(
                "superseded by {}: verify the replacement before routing",
                r.ticket_id
            )),
            RelationKind::DuplicateOf => notices.push(format!(
                "duplicated by {}: avoid a duplicate implementation",
                r.ticket_id
            )),
            _ => {}
        }
    }
    let graph = RelationGraph::new(outgoing.iter().copied().chain(incoming.iter().copied()));
    let blockers = graph.blockers(id, |t| states.get(t).copied());
    let refusing: Vec<&Blocker> = blockers
        .iter()
        .filter(|b| !b.state.is_some_and(State::is_in_flight))
        .collect();
    let queue_refusal = (!refusing.is_empty()).then(|| {
        format!(
            "blocked by {}",
            refusing
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    RelationView {
        ticket: id.clone(),
        state,
        relations,
        blockers,
        notices,
        can_queue: queue_refusal.is_none(),
        queue_refusal,
    }
}

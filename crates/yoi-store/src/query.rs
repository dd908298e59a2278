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

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
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

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
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

/// Everything about one ticket, as the CLI's `show --json` and the API's `GET /tickets/{id}`
/// return it.
#[derive(Debug, Clone, Serialize)]
pub struct TicketDetail {
    pub id: TicketId,
    pub title: String,
    pub state: State,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readiness: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk_flags: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    pub extra_keys: Vec<String>,
    pub body: String,
    pub missing_brief_sections: Vec<&'static str>,
    pub relations: RelationView,
    pub plan: Vec<yoi_core::plan::PlanRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    pub events: Vec<EventDetail>,
    pub thread_issues: Vec<yoi_core::thread::ThreadIssue>,
    /// Every attempt of every step pods were given, oldest first, with the skills activated for
    /// it (from the database; absent without one, or when there were none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptDetail>,
    /// The flow the ticket runs, as frozen at acceptance (`None` before acceptance, or for a
    /// packet frozen before flows existed: the built-in one), with its steps in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running_flow: Option<RunningFlow>,
}

/// One attempt of a step, as `show` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptDetail {
    pub assignment: String,
    pub step: String,
    pub role: String,
    pub attempt: i64,
    pub fence: i64,
    pub status: crate::db::AssignmentStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The attempt's usage as the pod reported it (JSON), if it ended with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// The commit the attempt worked on (verify, review and merge are bound to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// A reviewer's verdict and findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<yoi_core::report::Verdict>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// A verifier's commands with how each ended, and the prose checks left to the reviewer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<yoi_core::report::CheckResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub manual_checks: Vec<String>,
    pub activations: Vec<ActivationDetail>,
}

impl AttemptDetail {
    /// Whether this attempt used a fix round: a failed verification or a change request.
    pub fn used_a_round(&self) -> bool {
        self.status == crate::db::AssignmentStatus::Completed
            && (self.checks.iter().any(|c| !c.passed())
                || self.verdict == Some(yoi_core::report::Verdict::RequestChanges))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ActivationDetail {
    pub skill: String,
    pub digest: String,
    pub who: String,
    pub at_ms: i64,
}

/// A ticket's attempts with their activations (empty without a database).
pub fn attempts_of(ws: &Workspace, id: &TicketId) -> Result<Vec<AttemptDetail>, StoreError> {
    let Some(index) = ws.index.as_ref().and_then(|i| i.0.db_index()) else {
        return Ok(Vec::new());
    };
    let rows = index.block_on(index.db.assignments_of(id.as_str()))?;
    let acts = index.block_on(index.db.activations_of_ticket(id.as_str()))?;
    Ok(rows
        .into_iter()
        .map(|a| {
            let report: Option<yoi_core::report::Report> = a
                .result
                .as_deref()
                .and_then(|r| serde_json::from_str(r).ok());
            let report = report.unwrap_or_default();
            AttemptDetail {
                commit: a.head_commit.clone(),
                verdict: report.verdict,
                findings: report.findings,
                checks: report.checks,
                manual_checks: report.manual_checks,
                activations: acts
                    .iter()
                    .filter(|x| x.assignment.as_deref() == Some(a.id.as_str()))
                    .map(|x| ActivationDetail {
                        skill: x.skill.clone(),
                        digest: x.digest.clone(),
                        who: x.who.clone(),
                        at_ms: x.at_ms,
                    })
                    .collect(),
                assignment: a.id,
                step: a.step,
                role: a.role,
                attempt: a.attempt,
                fence: a.fence,
                status: a.status,
                pod: a.claimed_by,
                error: a.error,
                usage: a.usage.and_then(|u| serde_json::from_str(&u).ok()),
                log: a.log_path,
            }
        })
        .collect())
}

#[derive(Debug, Clone, Serialize)]
pub struct RunningFlow {
    pub name: String,
    pub steps: Vec<String>,
    pub max_rounds: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventDetail {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub attrs: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    pub body: String,
}

/// The relation view of one ticket from the attached database index (one query) when it knows
/// the ticket, else from the files (every ticket's relations read). Blocking: call it from a
/// blocking thread, never from an async task.
pub fn relation_view_indexed(ws: &Workspace, id: &TicketId) -> Result<RelationView, StoreError> {
    if let Some(index) = ws.index.as_ref().and_then(|i| i.0.db_index()) {
        if let Some(view) = index.block_on(index.db.relation_view(id))? {
            return Ok(view);
        }
    }
    relation_view(ws, id)
}

/// Read one ticket whole: its files, and its relation view (see [`relation_view_indexed`]).
pub fn ticket_detail(ws: &Workspace, query: &str) -> Result<TicketDetail, StoreError> {
    let id = ws.resolve(query)?;
    let t = ws.read_ticket(&id)?;
    let relations = relation_view_indexed(ws, &id)?;
    let attempts = attempts_of(ws, &id)?;
    let running_flow = (!attempts.is_empty())
        .then(|| ws.read_frozen_packet(&id).ok().flatten())
        .flatten()
        .map(|p| {
            p.flow
                .unwrap_or_else(|| yoi_core::flow::builtin(ws.config.flow.max_rounds))
        })
        .map(|f| RunningFlow {
            name: f.name,
            steps: f.steps.into_iter().map(|s| s.id).collect(),
            max_rounds: f.max_rounds,
        });
    let item = t.item;
    let events = t
        .thread
        .events
        .iter()
        .map(|e| EventDetail {
            kind: e.kind.as_str().to_string(),
            id: e.id().map(str::to_string),
            author: e.author().map(str::to_string),
            at: e.get("at").map(str::to_string),
            attrs: e
                .attrs
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "id" | "author" | "at"))
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
            heading: e.heading.clone(),
            body: e.body.clone(),
        })
        .collect();
    Ok(TicketDetail {
        missing_brief_sections: yoi_core::brief::missing_required(item.body_text())
            .iter()
            .map(|s| s.heading())
            .collect(),
        body: item.body_text().to_string(),
        target_ref: item.effective_target_ref(),
        extra_keys: item.extra.iter().map(|(k, _)| k.clone()).collect(),
        id,
        updated_at: item.last_changed(&t.thread.events),
        title: item.title,
        state: item.state,
        created_at: item.created_at,
        readiness: item.readiness,
        risk_flags: item.risk_flags,
        queued_by: item.queued_by,
        queued_at: item.queued_at,
        flow: item.flow,
        priority: item.priority,
        relations,
        plan: t.plan,
        resolution: t.resolution,
        events,
        thread_issues: t.thread.issues,
        running_flow,
        attempts,
    })
}

//! One ticket whole, as `yoi ticket show --json` and `GET /api/v1/tickets/{id}` return it: its
//! files (item, thread, plan, resolution) read through the store, joined with what only the
//! database knows (every attempt of every step, the skills activated for it) and the relation
//! view from the index when the index knows the ticket. The API carries a page of the thread
//! ([`EventWindow`]), from the index's rows when they are provably the file's
//! ([`ticket_detail_page`]: its cost does not follow the thread's length), or streams it whole
//! from [`ticket_detail_parts`].
//!
//! The database is passed in, never found on the workspace: a caller without one (a test
//! double of the index, a store-only tool) gets the files' answer and no attempts.

use serde::Serialize;
use yoi_core::state::State;
use yoi_core::thread::Event;
use yoi_core::{TicketId, Timestamp};
use yoi_store::query::{relation_view, RelationView};
use yoi_store::{StoreError, Workspace};

use crate::DbIndex;

/// Everything about one ticket, as the CLI's `show --json` and the API's `GET /tickets/{id}`
/// return it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = Ticket)]
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
    /// The thread's events, oldest first: all of them from [`ticket_detail`]; from the API,
    /// the latest page of them unless the whole thread was asked for (see [`EventWindow`]).
    pub events: Vec<EventDetail>,
    /// How many events the thread holds.
    pub events_total: usize,
    /// The cursor for the events before those in `events`: the thread position of the first
    /// of them, to pass as `before` for the page before; absent when `events` starts at the
    /// thread's first event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_before: Option<usize>,
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
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AttemptDetail {
    pub assignment: String,
    pub step: String,
    #[schema(value_type = yoi_core::role::Role)]
    pub role: String,
    pub attempt: i64,
    pub fence: i64,
    pub status: crate::AssignmentStatus,
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
    /// The sandbox the run had, as the pod reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The agent and its CLI's version, as the pod reported it (`aider 0.86.2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The attempt completed without its output contract, under its profile's lenient rule.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub contract_missing: bool,
    /// The pod asked the agent for its missing trailer lines in a follow-up turn.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub follow_up: bool,
    pub activations: Vec<ActivationDetail>,
}

impl AttemptDetail {
    /// Whether this attempt used a fix round: a failed verification or a change request.
    pub fn used_a_round(&self) -> bool {
        self.status == crate::AssignmentStatus::Completed
            && (self.checks.iter().any(|c| !c.passed())
                || self.verdict == Some(yoi_core::report::Verdict::RequestChanges))
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ActivationDetail {
    pub skill: String,
    pub digest: String,
    pub who: String,
    pub at_ms: i64,
}

/// A ticket's attempts with their activations (empty without a database).
pub fn attempts_of(
    index: Option<&DbIndex>,
    id: &TicketId,
) -> Result<Vec<AttemptDetail>, StoreError> {
    let Some(index) = index else {
        return Ok(Vec::new());
    };
    let rows = index.assignments_of(id.as_str())?;
    let acts = index.activations_of_ticket(id.as_str())?;
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
                sandbox: report.sandbox,
                agent: report.agent,
                contract_missing: report.contract_missing,
                follow_up: report.follow_up,
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

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunningFlow {
    pub name: String,
    pub steps: Vec<String>,
    pub max_rounds: u32,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EventDetail {
    #[schema(value_type = yoi_core::thread::EventKind)]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// The event's `at` attribute: an RFC 3339 time (doctor's `thread.event_at` reports one
    /// that is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub at: Option<String>,
    pub attrs: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    pub body: String,
}

/// The relation view of one ticket from the attached database index (one query) when it knows
/// the ticket, else from the files (every ticket's relations read). Blocking: call it from a
/// blocking thread, never from an async task.
pub fn relation_view_indexed(
    ws: &Workspace,
    index: Option<&DbIndex>,
    id: &TicketId,
) -> Result<RelationView, StoreError> {
    if let Some(index) = index {
        if let Some(view) = index.relation_view(id)? {
            return Ok(view);
        }
    }
    relation_view(ws, id)
}

impl From<&Event> for EventDetail {
    fn from(e: &Event) -> EventDetail {
        EventDetail {
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
        }
    }
}

/// Which of a thread's events an answer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventWindow {
    /// Every event.
    All,
    /// The latest `limit` events at thread positions below `before` (below the end when
    /// `None`): a page of the thread, walked backwards with the answer's `events_before`.
    Latest { limit: usize, before: Option<usize> },
}

impl EventWindow {
    /// The positions of a thread of `total` events this window covers.
    pub fn range(self, total: usize) -> std::ops::Range<usize> {
        match self {
            EventWindow::All => 0..total,
            EventWindow::Latest { limit, before } => {
                let end = before.map_or(total, |b| b.min(total));
                end.saturating_sub(limit)..end
            }
        }
    }
}

/// Read one ticket whole: its files, and its relation view (see [`relation_view_indexed`]).
pub fn ticket_detail(
    ws: &Workspace,
    index: Option<&DbIndex>,
    query: &str,
) -> Result<TicketDetail, StoreError> {
    let (mut detail, events) = ticket_detail_parts(ws, index, query)?;
    detail.events = events.iter().map(EventDetail::from).collect();
    Ok(detail)
}

/// [`ticket_detail`] with only the events of `window` (and `events_before` set for them): a
/// page of the thread from the index's rows when they are provably the file's
/// ([`crate::Db::thread_page`]), so its cost does not follow the thread's length; else read
/// from the file, the same answer.
pub fn ticket_detail_window(
    ws: &Workspace,
    index: Option<&DbIndex>,
    query: &str,
    window: EventWindow,
) -> Result<TicketDetail, StoreError> {
    let id = ws.resolve(query)?;
    if let (Some(index), EventWindow::Latest { limit, before }) = (index, window) {
        if let Some(detail) = ticket_detail_page(ws, index, &id, limit, before)? {
            return Ok(detail);
        }
    }
    let (mut detail, events) = parts_of(ws, index, id)?;
    let range = window.range(events.len());
    detail.events_before = (range.start > 0).then_some(range.start);
    detail.events = events[range].iter().map(EventDetail::from).collect();
    Ok(detail)
}

/// [`ticket_detail_window`]'s answer from the index's page of the thread, or `None` when the
/// index cannot give it exactly (the file is then read). Public so tests can tell which
/// answered.
pub fn ticket_detail_page(
    ws: &Workspace,
    index: &DbIndex,
    id: &TicketId,
    limit: usize,
    before: Option<usize>,
) -> Result<Option<TicketDetail>, StoreError> {
    let Some(page) = index.thread_page(ws, id, limit, before)? else {
        return Ok(None);
    };
    // The ticket's other files are read as `read_ticket` reads them (the same errors), the
    // thread apart.
    let item = ws.read_item(id)?;
    ws.read_relations(id)?;
    let plan = ws.read_plan(id)?;
    let resolution = ws.read_resolution(id)?;
    let Ok(updated_at) = Timestamp::parse(&page.updated_at) else {
        return Ok(None);
    };
    let mut detail = head(
        ws,
        Some(index),
        id.clone(),
        item,
        updated_at,
        plan,
        resolution,
    )?;
    detail.events_total = page.total;
    detail.events_before = (page.start > 0).then_some(page.start);
    detail.events = page.events;
    Ok(Some(detail))
}
/// [`ticket_detail`] without its events (`events` empty, `events_total` set), and the thread's
/// events as read: what an answer that streams the whole thread starts from, so no copy of
/// every event is made before the first is sent.
pub fn ticket_detail_parts(
    ws: &Workspace,
    index: Option<&DbIndex>,
    query: &str,
) -> Result<(TicketDetail, Vec<Event>), StoreError> {
    let id = ws.resolve(query)?;
    parts_of(ws, index, id)
}

fn parts_of(
    ws: &Workspace,
    index: Option<&DbIndex>,
    id: TicketId,
) -> Result<(TicketDetail, Vec<Event>), StoreError> {
    let t = ws.read_ticket(&id)?;
    let updated_at = t.item.last_changed(&t.thread.events);
    let mut detail = head(ws, index, id, t.item, updated_at, t.plan, t.resolution)?;
    detail.events_total = t.thread.events.len();
    detail.thread_issues = t.thread.issues;
    Ok((detail, t.thread.events))
}

/// Everything of the answer but the thread's (`events` empty, `events_total` 0, no issues).
fn head(
    ws: &Workspace,
    index: Option<&DbIndex>,
    id: TicketId,
    item: yoi_core::item::Item,
    updated_at: Timestamp,
    plan: Vec<yoi_core::plan::PlanRecord>,
    resolution: Option<String>,
) -> Result<TicketDetail, StoreError> {
    let relations = relation_view_indexed(ws, index, &id)?;
    let attempts = attempts_of(index, &id)?;
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
    Ok(TicketDetail {
        missing_brief_sections: yoi_core::brief::missing_required(item.body_text())
            .iter()
            .map(|s| s.heading())
            .collect(),
        body: item.body_text().to_string(),
        target_ref: item.effective_target_ref(),
        extra_keys: item.extra.iter().map(|(k, _)| k.clone()).collect(),
        id,
        updated_at,
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
        plan,
        resolution,
        events: Vec::new(),
        events_total: 0,
        events_before: None,
        thread_issues: Vec::new(),
        running_flow,
        attempts,
    })
}

//! `invoke_workflow`: a person's invocation of a workflow on a ticket, recorded as their
//! comment (`/<slug> …`) with the attributes [`WORKFLOW`] (the slug) and [`WORKFLOW_ROLE`]
//! (whose next attempt carries it). Its one caller is `yoi_engine::workflows::invoke`, which
//! checks the workflow and that a person asks (docs/workflows.md); this operation owns on which
//! tickets such an event may be written: while the ticket can still get an attempt (not
//! `done` or `closed`). A plain comment never carries these attributes (`comment` writes
//! none), so no other writer can pass text off as an invocation.
//!
//! `record_agent_invocation` records that an agent invoked an `auto_invoke` workflow for its
//! own attempt (the engine checks the flag and the token): a `comment` event with
//! [`AGENT_WORKFLOW`] and [`ASSIGNMENT`], on an in-progress ticket. It carries no
//! [`WORKFLOW`], so no later attempt takes it for a person's invocation.

use serde_json::json;
use yoi_core::thread::{Event, EventKind};
use yoi_core::State;

use super::edit::append_one;
use super::{text_field, Ctx, Outcome};
use crate::error::StoreError;
use crate::workspace::Workspace;

/// The attribute of a `comment` event that makes it an invocation: the workflow's slug.
pub const WORKFLOW: &str = "workflow";
/// The attribute naming the role whose next attempt on the ticket carries the invocation.
pub const WORKFLOW_ROLE: &str = "workflow_role";

/// The attribute of an agent's invocation: the workflow's slug.
pub const AGENT_WORKFLOW: &str = "agent_workflow";
/// The attempt whose agent invoked it.
pub const ASSIGNMENT: &str = "assignment";

/// The states a workflow may be invoked in: every state that can still lead to an attempt.
pub const INVOKE_STATES: [State; 4] = [
    State::Planning,
    State::Ready,
    State::Queued,
    State::Inprogress,
];

#[derive(Debug, Clone)]
pub struct InvokeRequest {
    /// A slug the engine has checked.
    pub slug: String,
    pub role: String,
    /// The person's comment, whose first line is `/<slug>` and its arguments.
    pub comment: String,
}

pub fn invoke_workflow(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    req: &InvokeRequest,
) -> Result<Outcome, StoreError> {
    let body = text_field("message", &req.comment)?;
    let payload = json!({ "slug": req.slug, "role": req.role, "comment": body });
    append_one(ws, ctx, query, "comment", &payload, |id, item| {
        if !INVOKE_STATES.contains(&item.state) {
            return Err(StoreError::StaleState {
                ticket: id.clone(),
                expected: State::Inprogress,
                found: item.state,
            });
        }
        Ok(Event::new(EventKind::Comment, &body)
            .with_attr(WORKFLOW, req.slug.clone())
            .with_attr(WORKFLOW_ROLE, req.role.clone()))
    })
}

/// Record that the agent of attempt `assignment` invoked workflow `slug` (checked by the
/// engine) on its in-progress ticket.
pub fn record_agent_invocation(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    slug: &str,
    assignment: &str,
) -> Result<Outcome, StoreError> {
    let body = format!("The agent of attempt {assignment} invoked the workflow /{slug}.");
    let payload = json!({ "agent_workflow": slug, "assignment": assignment });
    append_one(ws, ctx, query, "comment", &payload, |id, item| {
        if item.state != State::Inprogress {
            return Err(StoreError::StaleState {
                ticket: id.clone(),
                expected: State::Inprogress,
                found: item.state,
            });
        }
        Ok(Event::new(EventKind::Comment, &body)
            .with_attr(AGENT_WORKFLOW, slug)
            .with_attr(ASSIGNMENT, assignment))
    })
}

/// The attribute of the event that assembles a finished flow's summaries: the flow's name.
pub const ASSEMBLY: &str = "assembly";

/// Record a flow's assembly (docs/flows.md, "Assembly") on a ticket in progress, just before
/// it is completed: a `comment` event by the service with [`ASSEMBLY`] naming the flow, its
/// body the steps' summaries under their headers (the operation is `comment`, as it is for
/// the other comment events with attributes). The caller passes a context whose operation
/// id is derived from the merge, so a completion tried again after a crash replays this event
/// instead of writing a second one.
pub fn record_assembly(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    flow: &str,
    body: &str,
) -> Result<Outcome, StoreError> {
    let body = text_field("message", body)?;
    let payload = json!({ "assembly": flow, "body": body });
    append_one(ws, ctx, query, "comment", &payload, |id, item| {
        if item.state != State::Inprogress {
            return Err(StoreError::StaleState {
                ticket: id.clone(),
                expected: State::Inprogress,
                found: item.state,
            });
        }
        Ok(Event::new(EventKind::Comment, &body).with_attr(ASSEMBLY, flow))
    })
}

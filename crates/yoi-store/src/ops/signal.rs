//! Events that change no state but change what the engine does: `attention` (the orchestrator
//! opened a ticket's circuit and stops dispatching it), `retry` (a person closes that circuit),
//! and `assignment` (an attempt of a step ended: who ran it, with which fence, and how it
//! went). The engine reads them back from the thread (`yoi_engine::routing::circuit`,
//! `yoi_engine::assignments`).

use serde_json::json;
use yoi_core::principal::PrincipalKind;
use yoi_core::thread::{Event, EventKind};
use yoi_core::State;

use super::edit::append_one;
use super::{text_field, Ctx, Outcome};
use crate::error::{Permission, StoreError};
use crate::workspace::Workspace;

/// Attribute on an `attention` event saying why it was raised.
pub const ATTENTION_REASON: &str = "reason";
/// [`ATTENTION_REASON`] of the event that opens a circuit.
pub const CIRCUIT_OPEN: &str = "circuit_open";

/// The states a ticket may be retried in.
pub const RETRY_STATES: [State; 2] = [State::Queued, State::Inprogress];

/// Ask the engine to try a ticket again (humans only): closes an open circuit and resets the run
/// of consecutive failures — of acceptance for a queued ticket, of a step's attempts for one in
/// progress. Refused unless the ticket is `queued` or `inprogress`.
pub fn retry(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    reason: Option<&str>,
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Human {
        return Err(StoreError::NotPermitted {
            reason: Permission::Retry {
                kind: ctx.principal.kind,
            },
        });
    }
    let reason = reason.map(|r| text_field("reason", r)).transpose()?;
    let body = match &reason {
        Some(r) if !r.trim().is_empty() => format!("Retry requested: {}", r.trim()),
        _ => "Retry requested: routing tries this ticket again.".to_string(),
    };
    let event = Event::new(EventKind::Retry, &body);
    append_in(ws, ctx, query, "retry", event, &RETRY_STATES)
}

/// Raise an `attention` event (the orchestrator only), with `reason` as its
/// [`ATTENTION_REASON`] attribute.
pub fn attention(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    reason: &str,
    body: &str,
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Orchestrator {
        return Err(StoreError::NotPermitted {
            reason: Permission::RaiseAttention {
                kind: ctx.principal.kind,
            },
        });
    }
    let event = Event::new(EventKind::Attention, body).with_attr(ATTENTION_REASON, reason);
    append_in(
        ws,
        ctx,
        query,
        "attention",
        event,
        &[State::Queued, State::Inprogress],
    )
}

/// Record that an attempt of a step ended (the orchestrator only, for an in-progress ticket):
/// one `assignment` event whose attributes name the role, pod, attempt, fence, outcome, commit,
/// usage and log, and whose body says it in a sentence. Claims and heartbeats never write the
/// thread; this is the one event per attempt.
pub fn record_attempt(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    attrs: &[(&str, String)],
    body: &str,
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Orchestrator {
        return Err(StoreError::NotPermitted {
            reason: Permission::RecordAttempt {
                kind: ctx.principal.kind,
            },
        });
    }
    let mut event = Event::new(EventKind::Assignment, body);
    for (k, v) in attrs {
        event = event.with_attr(k, v.clone());
    }
    append_in(
        ws,
        ctx,
        query,
        "record_attempt",
        event,
        &[State::Inprogress],
    )
}

/// Append `event` to a ticket in one of `states`, with replay by operation id.
fn append_in(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    operation: &str,
    event: Event,
    states: &[State],
) -> Result<Outcome, StoreError> {
    let payload = json!({ "body": event.body, "attrs": event.attrs });
    append_one(ws, ctx, query, operation, &payload, |id, item| {
        if !states.contains(&item.state) {
            return Err(StoreError::StaleState {
                ticket: id.clone(),
                expected: states[0],
                found: item.state,
            });
        }
        Ok(event)
    })
}

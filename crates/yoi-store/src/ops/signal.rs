//! Events that change no state but change what routing does: `attention` (the orchestrator
//! opened a ticket's circuit and stops dispatching it) and `retry` (a person closes that circuit).
//! The router reads them back from the thread; see `yoi-server`'s router.

use serde_json::json;
use yoi_core::principal::PrincipalKind;
use yoi_core::thread::{Event, EventKind};
use yoi_core::State;

use super::{
    append_events, fingerprint, finish, replay_of, stamp, text_field, write_item, Ctx, Outcome,
};
use crate::error::StoreError;
use crate::workspace::Workspace;

/// Attribute on an `attention` event saying why it was raised.
pub const ATTENTION_REASON: &str = "reason";
/// [`ATTENTION_REASON`] of the event that opens a circuit.
pub const CIRCUIT_OPEN: &str = "circuit_open";

/// Ask routing to try a queued ticket again (humans only): closes an open circuit and resets
/// the run of consecutive failures. Refused unless the ticket is `queued`.
pub fn retry(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    reason: Option<&str>,
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Human {
        return Err(StoreError::Refused {
            reason: format!(
                "only a person may retry routing; {} asked",
                ctx.principal.kind
            ),
        });
    }
    let reason = reason.map(|r| text_field("reason", r)).transpose()?;
    let body = match &reason {
        Some(r) if !r.trim().is_empty() => format!("Retry requested: {}", r.trim()),
        _ => "Retry requested: routing tries this ticket again.".to_string(),
    };
    append_one(ws, ctx, query, "retry", Event::new(EventKind::Retry, &body))
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
        return Err(StoreError::Refused {
            reason: format!(
                "only the orchestrator raises attention events; {} asked",
                ctx.principal.kind
            ),
        });
    }
    let event = Event::new(EventKind::Attention, body).with_attr(ATTENTION_REASON, reason);
    append_one(ws, ctx, query, "attention", event)
}

/// Append one event to a `queued` ticket under the lock, with replay by operation id.
fn append_one(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    operation: &str,
    event: Event,
) -> Result<Outcome, StoreError> {
    let _lock = ws.lock()?;
    let id = ws.resolve(query)?;
    let mut item = ws.read_item(&id)?;
    let thread = ws.read_thread(&id)?;
    let fp = fingerprint(
        operation,
        id.as_str(),
        &json!({ "body": event.body, "attrs": event.attrs }),
    );
    if let Some(o) = replay_of(ws, &thread, ctx, &fp, &id, operation)? {
        return Ok(o);
    }
    if item.state != State::Queued {
        return Err(StoreError::StaleState {
            ticket: id,
            expected: State::Queued,
            found: item.state,
        });
    }
    let event = stamp(event, ctx, &fp);
    append_events(ws, &id, std::slice::from_ref(&event))?;
    item.updated_at = ctx.now;
    write_item(ws, &id, &item)?;
    Ok(finish(
        ws,
        ctx,
        &fp,
        super::edit::fresh(&id, operation, &event),
    ))
}

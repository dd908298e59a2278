//! Events that change no state but change what routing does: `attention` (the orchestrator
//! opened a ticket's circuit and stops dispatching it) and `retry` (a person closes that circuit).
//! The router reads them back from the thread; see `yoi-server`'s router.

use serde_json::json;
use yoi_core::principal::PrincipalKind;
use yoi_core::thread::{Event, EventKind};
use yoi_core::State;

use super::edit::append_one;
use super::{text_field, Ctx, Outcome};
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
        return Err(StoreError::NotPermitted {
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
    append_to_queued(ws, ctx, query, "retry", Event::new(EventKind::Retry, &body))
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
            reason: format!(
                "only the orchestrator raises attention events; {} asked",
                ctx.principal.kind
            ),
        });
    }
    let event = Event::new(EventKind::Attention, body).with_attr(ATTENTION_REASON, reason);
    append_to_queued(ws, ctx, query, "attention", event)
}

/// Append `event` to a ticket that must be `queued`, with replay by operation id.
fn append_to_queued(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    operation: &str,
    event: Event,
) -> Result<Outcome, StoreError> {
    let payload = json!({ "body": event.body, "attrs": event.attrs });
    append_one(ws, ctx, query, operation, &payload, |id, item| {
        if item.state != State::Queued {
            return Err(StoreError::StaleState {
                ticket: id.clone(),
                expected: State::Queued,
                found: item.state,
            });
        }
        Ok(event)
    })
}

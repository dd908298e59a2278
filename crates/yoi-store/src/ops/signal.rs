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
use crate::error::{Permission, Refusal, StoreError};
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

/// Attribute of a `budget` event: USD added to the ticket's budget.
pub const ADD_USD: &str = "add_usd";
/// Attribute of a `budget` event: tokens added to the ticket's budget.
pub const ADD_TOKENS: &str = "add_tokens";

/// Add to a ticket's budget (humans only): a `budget` event the engine adds to the ticket's
/// limits (docs/budgets.md). Refused for a closed ticket, a negative or non-finite amount, and
/// when nothing is added.
pub fn add_budget(
    ws: &Workspace,
    ctx: &Ctx,
    query: &str,
    usd: Option<f64>,
    tokens: Option<u64>,
    note: Option<&str>,
) -> Result<Outcome, StoreError> {
    if ctx.principal.kind != PrincipalKind::Human {
        return Err(StoreError::NotPermitted {
            reason: Permission::AddBudget {
                kind: ctx.principal.kind,
            },
        });
    }
    if usd.is_none() && tokens.is_none() {
        return Err(StoreError::Refused {
            reason: Refusal::NoBudgetAmount,
        });
    }
    if usd.is_some_and(|u| !u.is_finite() || u <= 0.0) {
        return Err(StoreError::bad_input(
            "add_usd",
            "give a positive amount of USD",
        ));
    }
    if tokens == Some(0) {
        return Err(StoreError::bad_input(
            "add_tokens",
            "give a positive number of tokens",
        ));
    }
    let note = note.map(|n| text_field("note", n)).transpose()?;
    let mut parts = Vec::new();
    if let Some(u) = usd {
        parts.push(format!("${u:.2}"));
    }
    if let Some(t) = tokens {
        parts.push(format!("{t} tokens"));
    }
    let mut body = format!("Budget raised by {}.", parts.join(" and "));
    if let Some(n) = note.as_deref().filter(|n| !n.trim().is_empty()) {
        body.push(' ');
        body.push_str(n.trim());
    }
    let mut event = Event::new(EventKind::Budget, &body);
    if let Some(u) = usd {
        event = event.with_attr(ADD_USD, format!("{u}"));
    }
    if let Some(t) = tokens {
        event = event.with_attr(ADD_TOKENS, t.to_string());
    }
    append_in(
        ws,
        ctx,
        query,
        "add_budget",
        event,
        &[
            State::Planning,
            State::Ready,
            State::Queued,
            State::Inprogress,
            State::Done,
        ],
    )
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
pub(super) fn append_in(
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

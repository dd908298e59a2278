//! The IntentPacket of a ticket: read it (parsed from the body, with its completeness and, after
//! acceptance, the frozen copy), or submit one whole (an intake or orchestrator pod drafting a
//! brief), which rewrites the body's brief sections.

use axum::extract::{Path, State};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use yoi_core::packet::{FrozenPacket, IntentPacket};
use yoi_store::ops;
use yoi_store::Outcome;

use crate::auth::*;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Body, IdempotencyKey};
use crate::state::AppState;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PacketView {
    /// Parsed from the ticket body now.
    pub packet: IntentPacket,
    pub content_hash: String,
    pub complete: bool,
    pub missing_required: Vec<&'static str>,
    pub missing_optional: Vec<&'static str>,
    /// The copy frozen at acceptance (`artifacts/intent-packet.json`), if any.
    pub frozen: Option<FrozenPacket>,
}

#[utoipa::path(get, tag = "tickets", path = "/api/v1/tickets/{id}/packet", params(("id" = String, Path)), responses((status = 200, body = PacketView)), security(("bearer" = [])))]
/// The ticket's IntentPacket as its body gives it now, its completeness, and the frozen copy.
pub async fn show_packet(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> ApiResult<PacketView> {
    s.read(move |ws| {
        let id = ws.resolve(&id)?;
        let item = ws.read_item(&id)?;
        let packet = IntentPacket::from_body(item.body_text());
        let c = packet.completeness();
        let frozen = ws.read_frozen_packet(&id)?;
        Ok(PacketView {
            content_hash: packet.content_hash(),
            complete: c.is_complete(),
            missing_required: c.missing_required.iter().map(|s| s.heading()).collect(),
            missing_optional: c.missing_optional.iter().map(|s| s.heading()).collect(),
            packet,
            frozen,
        })
    })
    .await
    .map(Json)
}

#[utoipa::path(put, tag = "tickets", path = "/api/v1/tickets/{id}/packet", params(("id" = String, Path)), request_body = Object, responses((status = 200, body = Outcome)), security(("bearer" = [])))]
/// Submit a whole IntentPacket: the body's brief sections are replaced by it, the rest of the
/// body stays. Fields: intent, binding_decisions, acceptance_criteria, implementation_latitude,
/// escalate_if, validation, code_map, critical_risks, write_scope (missing ones are empty;
/// unknown ones are refused). Planning, ready or queued tickets only.
pub async fn submit_packet(
    State(s): State<AppState>,
    Authed(c, ..): Authed<SubmitPacket>,
    IdempotencyKey(key): IdempotencyKey,
    Path(id): Path<String>,
    Body(b): Body<serde_json::Map<String, Value>>,
) -> ApiResult<Outcome> {
    let packet = parse_packet(b)?;
    let ctx = c.ctx(key);
    s.op(move |ws| ops::submit_packet(ws, &ctx, &id, &packet))
        .await
        .map(Json)
}

/// A packet from a JSON object, refusing fields the packet does not have.
fn parse_packet(fields: serde_json::Map<String, Value>) -> Result<IntentPacket, ApiError> {
    let known = match serde_json::to_value(IntentPacket::default()) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let unknown: Vec<&String> = fields.keys().filter(|k| !known.contains_key(*k)).collect();
    if !unknown.is_empty() {
        let names: Vec<&String> = known.keys().collect();
        return Err(ApiError::bad_request(format!(
            "invalid JSON body: unknown fields {unknown:?}; an IntentPacket has {names:?}"
        )));
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

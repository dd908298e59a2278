//! `GET /api/v1/tickets/{id}/forge`: a ticket's pull request as its thread records it — the
//! number, link and head, the merge, why the gate is or is not open, and every `forge_pr`
//! event (docs/forge.md). The engine reads it (`yoi_engine::assignments::pr::status`); this
//! handler only answers.

use axum::extract::{Path, State};
use axum::Json;
use yoi_engine::assignments::pr::ForgeStatus;

use crate::auth::{Authed, ReadTickets};
use crate::error::ApiResult;
use crate::state::AppState;

#[utoipa::path(operation_id = "ticket_forge", get, tag = "tickets", path = "/api/v1/tickets/{id}/forge", params(("id" = String, Path)), responses((status = 200, body = ForgeStatus)), security(("bearer" = [])))]
/// A ticket's pull request: number, link, the head yoi last saw, the merge, the gate's last
/// answer with every reason, and every forge event.
pub async fn show(
    State(s): State<AppState>,
    _a: Authed<ReadTickets>,
    Path(id): Path<String>,
) -> ApiResult<ForgeStatus> {
    s.read_indexed(move |ws, index| yoi_engine::assignments::pr::status(ws, index, &id))
        .await
        .map(Json)
}
